"""vLLM and SGLang refuse prompt + max_tokens above their window (issue 18, item 5). When the
prompt alone fits, the same request goes again with the room the engine left: nothing is
compacted. A prompt that alone is over the window is still compacted by the ladder.

Brim's count must be low for an engine to refuse (the output cap is sized from it): these
engines cannot count for Brim here (an SGLang without /v1/tokenize, a vLLM whose /tokenize
is off), and the text is one their tokenizer packs far tighter than Brim's estimate, as a
Llama 3 vocabulary does Tamil.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.config import default_agent
from engine.events import NOTICE_ANSWER_ROOM, CompactionEvent, ErrorEvent, Event, NoticeEvent
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.tokens import TokenCounter
from tests.helpers.compaction_requests import is_compaction
from tests.helpers.fake_engines import FakeSglang, FakeVllm, Reply
from tests.helpers.fake_http import FakeServer

SUMMARY = (
    "## Goal\nChat.\n## Constraints & Preferences\n-\n## Covered So Far\n-\n## Progress\n"
    "### Done\n-\n### In Progress\n-\n### Blocked\n-\n## Key Decisions\n-\n## Next Steps\n-\n"
    "## Critical Context\n-\n"
)
TAMIL = "தமிழ் மொழி உலகின் பழமையான மொழிகளில் ஒன்றாகும். "
DIGITS = ",".join(str(i % 10) for i in range(1650))  # a token a character in o200k
PROSE = "The committee reviewed the proposal and agreed that the plan was sound. "


def _run(
    fake: FakeServer, provider: str, home: Path, turns: list[str]
) -> tuple[list[Event], list[dict[str, Any]]]:
    events: list[Event] = []
    fake.responder = lambda request: Reply(text=SUMMARY if is_compaction(request.body) else "ok")
    agent = default_agent().with_changes(
        name="chat", provider=provider, base_url=fake.url, model=fake.model
    )

    async def go() -> None:
        session = ChatSession(agent, BrimPaths.resolve(home), events.append)
        await session.start()
        for text in turns:
            await session.send(text)
        await session.close()

    asyncio.run(go())
    return events, [r.body for r in fake.chat_requests]


def _lowered(events: list[Event]) -> list[NoticeEvent]:
    return [e for e in events if isinstance(e, NoticeEvent) and e.kind == NOTICE_ANSWER_ROOM]


def _assert_lowered_without_compacting(
    events: list[Event], bodies: list[dict[str, Any]], fake: FakeServer, window: int
) -> None:
    refused, retried = fake.chat_requests[0], fake.chat_requests[1]
    assert refused.rejected and not retried.rejected
    # The same request again, with the room the engine left for the answer.
    assert retried.body["messages"] == refused.body["messages"]
    assert retried.body["max_tokens"] == window - refused.prompt_tokens - 1
    assert retried.body["max_tokens"] < refused.body["max_tokens"]
    assert len(bodies) == 2 and not any(is_compaction(b) for b in bodies)
    assert [e for e in events if isinstance(e, CompactionEvent)] == []
    assert [e for e in events if isinstance(e, ErrorEvent)] == []
    (notice,) = _lowered(events)
    assert notice.details["max_tokens"] == retried.body["max_tokens"]
    assert notice.details["prompt_tokens"] == refused.prompt_tokens


def test_an_sglang_refusal_of_the_answer_room_is_retried_with_a_smaller_max_tokens_not_compacted(
    tmp_path: Path,
):
    with FakeSglang(context_length=4096, tokenize=False) as fake:
        events, bodies = _run(fake, "sglang", tmp_path, [TAMIL * 48])
        _assert_lowered_without_compacting(events, bodies, fake, 4096)
        refused = fake.chat_requests[0]
    # SGLang's own words: the total, the prompt alone fitting.
    assert refused.prompt_tokens < 4096 <= refused.prompt_tokens + refused.body["max_tokens"]


# vLLM 0.32 refuses no answer room: it lowers max_tokens to the room left (the fake follows it,
# tests/engine/providers/test_vllm_sglang.py); the older builds that refused are the flat ones.
@pytest.mark.parametrize("envelope", ["flat"])
def test_a_vllm_refusal_of_the_answer_room_is_retried_with_a_smaller_max_tokens_not_compacted(
    envelope: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Before 0.10 vLLM says how long the prompt is; current builds stop counting one token
    past the room and say only that: Brim then asks /tokenize for the request's count (here
    Brim's own counter estimates, so the engine's count is news)."""
    with FakeVllm(max_model_len=4096, error_envelope=envelope) as fake:
        if envelope == "flat":
            fake.route("POST", "/tokenize", lambda ex, req: ex.send_json(404, {"detail": "no"}))
        monkeypatch.setattr(
            "engine.session.chat.counter_for", lambda provider, model: TokenCounter(model)
        )
        events, bodies = _run(fake, "vllm", tmp_path, [DIGITS])
        _assert_lowered_without_compacting(events, bodies, fake, 4096)


def test_a_prompt_that_alone_exceeds_the_sglang_window_still_compacts(tmp_path: Path):
    with FakeSglang(context_length=4096, tokenize=False) as fake:
        events, _ = _run(fake, "sglang", tmp_path, [PROSE * 90, TAMIL * 46])
        requests = fake.chat_requests
    first = next(i for i, r in enumerate(requests) if r.rejected)
    assert requests[first].prompt_tokens >= 4096  # "The input (N tokens) is longer than …"
    assert is_compaction(requests[first + 1].body)  # the ladder, not a smaller max_tokens
    finished = [e for e in events if isinstance(e, CompactionEvent) and e.phase == "finished"]
    assert [c.reason for c in finished] == ["context_overflow"]
    assert [e for e in events if isinstance(e, ErrorEvent)] == []
    assert not requests[-1].rejected and not is_compaction(requests[-1].body)
