"""The receipt's tokens/s is the generation's rate: the time the engine spent writing, not
the turn's wall-clock time nor the checks Brim makes after the answer."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from engine.config import default_agent
from engine.events import Event, TurnEndEvent
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.fake_engines import FakeVllm, Reply

WORDS = " ".join(f"word{i}" for i in range(40))


def test_the_rate_counts_generation_not_the_slow_check_after_the_answer(tmp_path: Path):
    vllm = FakeVllm(max_model_len=4096)
    vllm.default_reply = Reply(text=WORDS, token_delay=0.01)  # ~0.4 s of writing
    events: list[Event] = []

    async def go() -> None:
        agent = default_agent().with_changes(
            name="chat", provider="vllm", base_url=vllm.url, model=vllm.model
        )
        session = ChatSession(agent, BrimPaths.resolve(tmp_path / "home"), events.append)
        await session.start()
        try:
            loop: Any = session._loop
            checked = loop.watch.after_answer

            async def slow_check(**kwargs: Any) -> None:
                await asyncio.sleep(2.0)  # an engine slow to answer Brim's probe after a reply
                await checked(**kwargs)

            loop.watch.after_answer = slow_check
            await session.send("Count to forty.")
        finally:
            await session.close()

    with vllm:
        asyncio.run(go())
    (end,) = [e for e in events if isinstance(e, TurnEndEvent)]
    assert end.elapsed_s >= 2.0
    written = end.completion_tokens / end.tokens_per_s
    assert written < 1.5, f"{end.tokens_per_s}/s counts {written:.1f} s for the writing"
