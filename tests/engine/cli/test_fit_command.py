"""`brim fit`: one JSON object with the estimate and the metadata it used; a clear line, no
traceback, for a missing, truncated or foreign file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.providers.bundled_models import SMOLLM2, model_file
from tests.helpers.cli import run_brim

KEYS = {
    "weights_bytes", "kv_bytes", "compute_bytes", "total_bytes", "gpu_free_bytes", "verdict",
    "max_num_ctx_on_gpu", "model",
}  # fmt: skip


def _smollm2() -> Path:
    path = model_file(SMOLLM2)
    if path is None:
        pytest.skip("the bundled SmolLM2 is not installed")
    return path


def test_fit_prints_the_estimate_of_a_pin_with_the_metadata_it_used(tmp_path: Path) -> None:
    run = run_brim(
        ["fit", "--model", str(_smollm2()), "--num-ctx", "131072", "--kv-cache-type", "q8_0",
         "--json"],
        data_dir=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    assert set(answer) >= KEYS
    # 30 layers × 3 KV heads × 64 × 2 (K and V) × 34/32 bytes × 131,072 cells
    assert answer["kv_bytes"] == 30 * 131072 * 2 * (192 // 32 * 34)
    total = answer["weights_bytes"] + answer["kv_bytes"] + answer["compute_bytes"]
    assert answer["total_bytes"] == total
    assert answer["model"]["architecture"] == "llama"
    assert answer["model"]["head_count_kv"] == [3]
    assert answer["model"]["training_context"] == 8192
    # No NVIDIA driver here: the free memory is unknown, and no verdict is guessed.
    assert answer["gpu_free_bytes"] is None
    assert answer["verdict"] == "unknown"
    assert answer["max_num_ctx_on_gpu"] == {"f16": None, "q8_0": None, "q4_0": None}


def test_fit_names_a_bundled_model_by_its_name(tmp_path: Path) -> None:
    _smollm2()
    run = run_brim(["fit", "--model", SMOLLM2.name, "--json"], data_dir=tmp_path)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["model_path"] == str(_smollm2())


def _refused(tmp_path: Path, path: Path) -> str:
    run = run_brim(["fit", "--model", str(path), "--json"], data_dir=tmp_path)
    assert run.returncode == 64
    assert run.stdout == ""
    assert "Traceback" not in run.stderr
    return run.stderr


def test_fit_says_a_missing_file_is_missing(tmp_path: Path) -> None:
    assert "no model file at" in _refused(tmp_path, tmp_path / "absent.gguf")


def test_fit_says_a_cut_file_is_cut_short(tmp_path: Path) -> None:
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(_smollm2().read_bytes()[:5_000_000])
    assert "is cut short: 5,000,000 bytes" in _refused(tmp_path, cut)


def test_fit_says_a_foreign_file_is_not_a_gguf(tmp_path: Path) -> None:
    foreign = tmp_path / "notes.gguf"
    foreign.write_text("these are notes, not a model\n" * 10)
    assert "is not a GGUF file" in _refused(tmp_path, foreign)


def test_a_quantized_cache_without_flash_attention_is_refused_saying_why(tmp_path: Path) -> None:
    run = run_brim(
        ["fit", "--model", str(_smollm2()), "--kv-cache-type", "q4_0", "--flash-attn", "off"],
        data_dir=tmp_path,
    )
    assert run.returncode == 64
    assert "only with flash attention: use --flash-attn auto or on" in run.stderr


def test_fit_discover_lists_the_models_of_a_users_folder_and_the_unreadable_ones(
    tmp_path: Path,
) -> None:
    from tests.helpers.tiny_gguf import write_tiny_gguf

    folder = tmp_path / "models"
    folder.mkdir()
    write_tiny_gguf(folder / "tiny.gguf")
    (folder / "half.gguf").write_bytes((folder / "tiny.gguf").read_bytes()[:100])
    home = tmp_path / "home"
    home.mkdir()
    run = run_brim(
        ["fit", "--discover", "--folder", str(folder), "--json"],
        data_dir=tmp_path / "data",
        env={"HOME": str(home), "XDG_DATA_HOME": "", "XDG_CACHE_HOME": "", "HF_HOME": "",
             "HF_HUB_CACHE": "", "LLAMA_CACHE": ""},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    assert answer["folders"] == [{"source": "user", "path": str(folder)}]
    models = {Path(m["path"]).name: m for m in answer["models"]}
    assert models["tiny.gguf"]["readable"] and models["tiny.gguf"]["architecture"] == "llama"
    assert not models["half.gguf"]["readable"]


def test_fit_reads_an_ollama_models_gguf_from_its_modelfile(tmp_path: Path) -> None:
    from tests.helpers.fake_ollama import FakeOllama, OllamaModel

    blob = str(_smollm2())
    with FakeOllama([OllamaModel("smollm2:135m", context_length=8192, blob=blob)]) as fake:
        run = run_brim(
            ["fit", "--provider", "ollama", "--base-url", fake.url, "--model", "smollm2:135m",
             "--num-ctx", "8192", "--json"],
            data_dir=tmp_path,
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    assert (answer["provider"], answer["model_path"]) == ("ollama", blob)
    assert answer["kv_bytes"] == 30 * 8192 * 192 * 2 * 2


def test_fit_says_when_ollama_has_no_such_model(tmp_path: Path) -> None:
    from tests.helpers.fake_ollama import FakeOllama

    with FakeOllama() as fake:
        run = run_brim(
            ["fit", "--provider", "ollama", "--base-url", fake.url, "--model", "nope:1b"],
            data_dir=tmp_path,
        )
    assert run.returncode == 64
    assert "nope:1b" in run.stderr and "Traceback" not in run.stderr
