"""`brim chat --headless` with no engine flags runs the default agent: the embedded model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli import run_brim

pytestmark = pytest.mark.slow


def test_the_default_agent_streams_a_real_answer_with_real_token_numbers(tmp_path: Path):
    run = run_brim(
        ["chat", "--headless", "--max-tokens", "12"],
        data_dir=tmp_path,
        stdin="What colour is the sky?\n",
    )
    assert run.returncode == 0, run.stderr
    assert run.of_type("error") == []
    window = run.of_type("window")[0]
    assert window["window"] == 8192  # SmolLM2's training length, allocated by llama.cpp
    assert "".join(d["text"] for d in run.of_type("delta")).strip()
    (usage,) = run.of_type("usage")
    (context,) = run.of_type("context")
    assert usage["prompt_tokens"] > 20 and usage["completion_tokens"] > 0
    assert context["used"] == usage["prompt_tokens"] and context["estimated"] is False
    (end,) = run.of_type("turn_end")
    assert end["completion_tokens"] == usage["completion_tokens"] and end["tokens_per_s"] > 0
