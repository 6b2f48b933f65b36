"""A whole headless conversation with the real llama-server made to reason (the bundled
SmolLM2, a grammar forcing a `<think>` block before every answer, `--reasoning-format
deepseek`), through a recording proxy: the user gets the reasoning as its own events, the
answers hold none of it, it is saved with the message, and no later request carries it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench._llama_server import running_llama_server
from tests.helpers.cli import run_brim
from tests.helpers.reasoning_server import reasoning_server_args
from tests.helpers.recording_proxy import RecordingProxy

pytestmark = [pytest.mark.slow, pytest.mark.llama_server]


def test_a_thinking_conversation_shows_the_reasoning_apart_and_never_sends_it_back(
    tmp_path: Path,
):
    args = reasoning_server_args("deepseek", n_predict=64)
    with (
        running_llama_server(tmp_path, ctx=2048, parallel=1, extra_args=args) as server,
        RecordingProxy(server.url) as proxy,
    ):
        run = run_brim(
            [
                "chat",
                "--headless",
                "--provider",
                "llamacpp",
                "--base-url",
                proxy.url,
                "--max-tokens",
                "64",
                "--no-memory",
            ],
            data_dir=tmp_path / "home",
            stdin="Why is the sky blue?\nAnd why is the sunset red?\n",
            timeout=400,
        )
    assert run.returncode == 0, run.stderr
    assert run.of_type("error") == []
    thoughts = "".join(e["text"] for e in run.of_type("reasoning"))
    answers = "".join(e["text"] for e in run.of_type("delta"))
    assert thoughts.strip(), "the reasoning never reached the user"
    assert len(run.of_type("reasoning_end")) >= 2  # one per answer
    assert "<think>" not in answers and "</think>" not in answers
    assert thoughts.strip()[:40] not in answers
    # The second turn's request carries the first answer, and none of its reasoning.
    chats = [c for c in proxy.chats if c.body.get("messages")]
    assert len(chats) >= 2
    sent = json.dumps(chats[-1].body["messages"], ensure_ascii=False)
    first_thought = run.of_type("reasoning")[0]["text"].strip()
    assert "reasoning_content" not in sent and "<think>" not in sent
    for line in thoughts.splitlines():
        if len(line.strip()) > 20:
            assert line.strip() not in sent, f"the reasoning went back: {line!r}"
    assert first_thought
    # Saved with the message, apart from its content.
    conversation = run.of_type("window")[0]["conversation"]
    export = run_brim(
        ["conversations", "export", conversation, "--json"], data_dir=tmp_path / "home"
    )
    assert export.returncode == 0, export.stderr
    saved = json.loads(export.stdout)
    messages = saved["messages"] if isinstance(saved, dict) else saved
    answered = [m for m in messages if m["role"] == "assistant"]
    assert answered and all(m.get("reasoning", "").strip() for m in answered)
    assert all("<think>" not in m["content"] for m in answered)
