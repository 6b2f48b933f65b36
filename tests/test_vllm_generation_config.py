"""`make vllm-setup`'s converted SmolLM2 folder carries Brim's measured sampling in its
generation_config.json, which vLLM applies to every field a request leaves out; what
transformers wrote there stays, and Brim reads the file back as the model's own."""

from __future__ import annotations

import json

from bench._vllm_convert import write_generation_config
from engine.providers.model_sampling import generation_config
from engine.providers.sampling import BRIM_DEFAULTS


def test_the_converted_folder_names_brims_measured_sampling(tmp_path):
    written_by_transformers = {"bos_token_id": 1, "eos_token_id": 2, "transformers_version": "x"}
    (tmp_path / "generation_config.json").write_text(json.dumps(written_by_transformers))
    write_generation_config(tmp_path)
    saved = json.loads((tmp_path / "generation_config.json").read_text())
    assert saved == {
        **written_by_transformers,
        "temperature": 0.0,
        "top_p": 0.9,
        "top_k": 40,
        "min_p": 0.05,
        "repetition_penalty": 1.05,
        "do_sample": True,
    }
    assert generation_config(tmp_path) == {
        "temperature": BRIM_DEFAULTS.temperature,
        "top_p": BRIM_DEFAULTS.top_p,
        "top_k": BRIM_DEFAULTS.top_k,
        "min_p": BRIM_DEFAULTS.min_p,
        "repeat_penalty": BRIM_DEFAULTS.repeat_penalty,
    }


def test_a_folder_without_one_gets_one(tmp_path):
    write_generation_config(tmp_path)
    assert json.loads((tmp_path / "generation_config.json").read_text())["top_k"] == 40
