"""The default agent's answers to five plain questions on a real vLLM (`.venv-vllm`, the
bundled SmolLM2 as `smol`, a 2,048-token window), each question in a fresh session, with
Brim's own sampling (temperature 0): what a user who points the default agent at vLLM reads.

    python -m bench._vllm_plain_answers
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from bench._vllm_server import running_vllm_server, unavailable
from engine.config import AgentConfig, default_agent
from engine.events import DeltaEvent, ErrorEvent, Event
from engine.paths import BrimPaths
from engine.session import ChatSession

QUESTIONS = (
    "What is the capital of France?",
    "What is 2 + 2?",
    "What colour is the sky on a clear day?",
    "What is Python?",
    "Name a planet of the solar system.",
)
SERVED_NAME = "smol"


async def answer(agent: AgentConfig, question: str, home: Path) -> str:
    """The streamed answer to `question`, as the user read it (an error's text if it failed)."""
    events: list[Event] = []
    session = ChatSession(agent, BrimPaths.resolve(home), events.append)
    await session.start()
    try:
        await session.send(question)
    finally:
        await session.close()
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    if errors:
        return f"(error: {errors[0]})"
    return "".join(e.text for e in events if isinstance(e, DeltaEvent))


def main() -> list[tuple[str, str]]:
    reason = unavailable()
    if reason is not None:
        print(f"vllm_plain_answers: skipped: {reason}")
        return []
    out: list[tuple[str, str]] = []
    with (
        tempfile.TemporaryDirectory() as logs,
        running_vllm_server(Path(logs), served_name=SERVED_NAME, max_model_len=2048) as server,
    ):
        agent = default_agent().with_changes(
            provider="vllm", base_url=server.url, model=SERVED_NAME, max_tokens=80
        )
        print(f"sampling: temperature {agent.temperature}, top_p {agent.top_p}")
        for i, question in enumerate(QUESTIONS):
            with tempfile.TemporaryDirectory() as home:
                said = asyncio.run(answer(agent, question, Path(home)))
            out.append((question, said))
            print(f"{i + 1}. Q: {question}\n   A: {said!r}", flush=True)
    return out


if __name__ == "__main__":
    main()
