"""The headless stream of a thinking model (issue 49): the JSON lines a script reads carry the
reasoning as `reasoning` events and its figures as `reasoning_end`, apart from the answer's
`delta` lines, which hold none of it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from engine.cli.stdio import HeadlessOutput
from engine.config import AgentConfig
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.thinking_engine import ThinkingEngine

AGENT = AgentConfig(name="chat", provider="llamacpp", model="fake-model")


def test_the_json_lines_carry_the_reasoning_apart_from_the_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    engine = ThinkingEngine(window=4096)
    engine.think(["Two and two ", "make four."])
    engine.script("Four.")
    out = HeadlessOutput()

    async def go() -> None:
        session = ChatSession(AGENT, BrimPaths.resolve(tmp_path / "home"), out.write,
                              provider=engine)  # fmt: skip
        await session.start()
        await session.send("What is two and two?")
        await session.close()

    asyncio.run(go())
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    types = [line["type"] for line in lines]
    assert {"type": "state", "state": "thinking"} in lines
    thought = "".join(line["text"] for line in lines if line["type"] == "reasoning")
    assert thought == "Two and two make four."
    end = next(line for line in lines if line["type"] == "reasoning_end")
    assert end["tokens"] > 0 and end["estimated"] is True and "seconds" in end
    assert types.index("reasoning_end") < types.index("delta")
    answer = "".join(line["text"] for line in lines if line["type"] == "delta")
    assert answer == "Four."
