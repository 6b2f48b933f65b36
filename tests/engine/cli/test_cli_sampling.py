"""Headless: the agent file's sampling is what the engine samples with on every request the
conversation makes, `/context` lists it, and a bad value stops the run naming the field."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import FakeVllm

MODEL = "Qwen/Qwen2.5-7B-Instruct"
SAMPLING = (
    "temperature = 0.3\ntop_p = 0.8\ntop_k = 20\nmin_p = 0.1\nrepeat_penalty = 1.05\nseed = 7\n"
)


def _write_agent(data_dir: Path, text: str) -> None:
    agents = data_dir / "config" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "tuned.toml").write_text(text, encoding="utf-8")


def test_the_agents_sampling_reaches_vllm_and_context_lists_it(tmp_path: Path):
    with FakeVllm(MODEL, max_model_len=8192) as fake:
        engine = f'name = "tuned"\nprovider = "vllm"\nbase_url = "{fake.url}"\nmodel = "{MODEL}"\n'
        _write_agent(tmp_path, engine + SAMPLING)
        run = run_brim(
            ["chat", "--headless", "--agent", "tuned"],
            data_dir=tmp_path,
            stdin="Hello there\n/context\n",
        )
        applied = [r.sampling for r in fake.chat_requests]
    assert run.returncode == 0, run.stderr
    assert applied == [
        {
            "temperature": 0.3,
            "top_p": 0.8,
            "top_k": 20,
            "min_p": 0.1,
            "repetition_penalty": 1.05,
            "seed": 7,
        }
    ]
    (snapshot,) = [r for r in run.of_type("context_report") if r["snapshot"]]
    assert snapshot["sampling"]["settings"] == {
        name: {"value": value, "source": "agent"}
        for name, value in {
            "temperature": 0.3,
            "top_p": 0.8,
            "top_k": 20,
            "min_p": 0.1,
            "repeat_penalty": 1.05,
            "seed": 7,
        }.items()
    }
    assert (
        "Sampling: temperature 0.3 (agent) · top_p 0.8 (agent) · top_k 20 (agent) · "
        "min_p 0.1 (agent) · repeat_penalty 1.05 (agent) · seed 7 (agent)"
    ) in snapshot["lines"]


def test_a_bad_sampling_value_stops_the_run_naming_the_file_the_field_and_the_range(
    tmp_path: Path,
):
    _write_agent(tmp_path, 'name = "tuned"\nprovider = "vllm"\ntop_p = 3\n')
    run = run_brim(["chat", "--headless", "--agent", "tuned"], data_dir=tmp_path)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert "tuned.toml: top_p: must be a number from 0.01 to 1, got 3" in run.stderr
