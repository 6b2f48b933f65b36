"""Headless, a thinking model on the Ollama and vLLM doubles, two turns each: the user gets
the reasoning as `reasoning` events apart from the answer's `delta` events, the answer holds
none of it, and the second request carries the first answer without its reasoning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import FakeOllama, FakeVllm, OllamaModel

QWEN_OLLAMA = "qwen3:8b"
QWEN_VLLM = "Qwen/Qwen3-8B"
THOUGHTS = (
    "The user asks why the sky is blue. Rayleigh scattering favours short wavelengths.",
    "Now the sunset. The light crosses more air, so the blue is scattered away first.",
)
ANSWERS = ("Blue light scatters most in the air.", "At sunset the red light is what is left.")


def _ollama() -> Any:
    return FakeOllama(
        [OllamaModel(QWEN_OLLAMA, capabilities=("completion", "tools", "thinking"))],
        version="0.33.3",
    )


def _vllm() -> Any:
    return FakeVllm(QWEN_VLLM, max_model_len=8192)


@pytest.mark.parametrize(
    ("make", "provider", "model"),
    [(_ollama, "ollama", QWEN_OLLAMA), (_vllm, "vllm", QWEN_VLLM)],
    ids=["ollama", "vllm"],
)
def test_a_thinking_models_reasoning_reaches_the_user_apart_and_never_goes_back(
    tmp_path: Path, make: Any, provider: str, model: str
):
    with make() as fake:
        for thought, answer in zip(THOUGHTS, ANSWERS, strict=True):
            fake.script_reply(answer, reasoning=thought)
        agents = tmp_path / "config" / "agents"
        agents.mkdir(parents=True)
        (agents / "thinker.toml").write_text(
            f'name = "thinker"\nprovider = "{provider}"\nbase_url = "{fake.url}"\n'
            f'model = "{model}"\n',
            encoding="utf-8",
        )
        run = run_brim(
            ["chat", "--headless", "--agent", "thinker", "--no-memory"],
            data_dir=tmp_path,
            stdin="Why is the sky blue?\nAnd the sunset?\n",
        )
        bodies = [r.body for r in fake.chat_requests]
    assert run.returncode == 0, run.stderr
    assert run.of_type("error") == []
    shown = "".join(e["text"] for e in run.of_type("reasoning"))
    answered = "".join(e["text"] for e in run.of_type("delta"))
    for thought in THOUGHTS:
        assert thought in shown
        assert thought not in answered
    for answer in ANSWERS:
        assert answer in answered
    assert len(run.of_type("reasoning_end")) == 2
    # The second turn's request: the first answer is there, its reasoning is not.
    second = json.dumps(bodies[-1]["messages"], ensure_ascii=False)
    assert ANSWERS[0] in second
    assert THOUGHTS[0] not in second


@pytest.mark.parametrize(
    ("make", "provider", "model"),
    [(_ollama, "ollama", QWEN_OLLAMA), (_vllm, "vllm", QWEN_VLLM)],
    ids=["ollama", "vllm"],
)
def test_an_answer_cap_spent_thinking_is_said_and_no_empty_answer_is_kept(
    tmp_path: Path, make: Any, provider: str, model: str
):
    with make() as fake:
        fake.script_reply(ANSWERS[0], reasoning=" ".join(THOUGHTS * 6))
        agents = tmp_path / "config" / "agents"
        agents.mkdir(parents=True)
        (agents / "thinker.toml").write_text(
            f'name = "thinker"\nprovider = "{provider}"\nbase_url = "{fake.url}"\n'
            f'model = "{model}"\nmax_tokens = 16\n',
            encoding="utf-8",
        )
        run = run_brim(
            ["chat", "--headless", "--agent", "thinker", "--no-memory"],
            data_dir=tmp_path,
            stdin="Why is the sky blue?\n",
        )
    assert run.returncode == 0, run.stderr
    assert run.of_type("reasoning"), "the reasoning never reached the user"
    assert "".join(e["text"] for e in run.of_type("delta")).strip() == ""
    (cut,) = [n for n in run.of_type("notice") if n["kind"] == "thinking_cut"]
    assert "thinking" in cut["text"] and cut["details"]["max_tokens"] == 16
    conversation = run.of_type("window")[0]["conversation"]
    export = run_brim(["conversations", "export", conversation, "--json"], data_dir=tmp_path)
    saved = json.loads(export.stdout)
    messages = saved["messages"] if isinstance(saved, dict) else saved
    assert not [m for m in messages if m["role"] == "assistant" and not m["content"].strip()]
