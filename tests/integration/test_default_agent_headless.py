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


def test_a_folder_given_to_a_model_without_tool_calls_is_answered_with_a_notice_once(
    tmp_path: Path,
):
    """SmolLM2's chat template has no tools: with a workspace, the user is told the agent
    cannot read files there, once per conversation, not again on resume."""
    ws = tmp_path / "ws"
    ws.mkdir()
    args = ["chat", "--headless", "--max-tokens", "8", "--workspace", str(ws)]
    first = run_brim(args, data_dir=tmp_path / "home", stdin="Read calc.py.\n")
    assert first.returncode == 0, first.stderr
    warned = [n for n in first.of_type("notice") if "cannot call tools" in n["text"]]
    assert len(warned) == 1 and str(ws) in warned[0]["text"]
    conversation = first.of_type("window")[0]["conversation"]
    again = run_brim(
        [*args, "--conversation", conversation], data_dir=tmp_path / "home", stdin="And now?\n"
    )
    assert again.returncode == 0, again.stderr
    assert not [n for n in again.of_type("notice") if "cannot call tools" in n["text"]]
    # Without a folder there are no tools to miss: nothing is said.
    plain = run_brim(args[:4], data_dir=tmp_path / "home", stdin="Hello.\n")
    assert not [n for n in plain.of_type("notice") if "cannot call tools" in n["text"]]
