"""Memory's requests fit the window with their answers (prompt + max_tokens ≤ window, by the
engine's count), and read the span being compacted in as few requests as fit, not one per
turn. Against the llama-server double, which rejects a request above its window as the
real server does, and counts every prompt with its own tokenizer."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config import default_agent
from engine.events import CompactionEvent, ErrorEvent, Event, UsageReportEvent
from engine.memory import Completion, MemoryService, ScanInput, run_scan
from engine.memory.sizing import approximate
from engine.memory.statements import STATEMENTS_ID
from engine.messages import Message, assistant, user
from engine.paths import BrimPaths
from engine.session import ChatSession
from engine.tools import AutoApprove
from tests.engine.memory.fakes import FakeModel, is_replayed, role_of, sources_in
from tests.helpers.fake_engines import FakeLlamaServer
from tests.helpers.fake_tokenizer import common_prefix

ALEX = "My name is Alex. I always use tabs, never spaces."
QUESTIONS = [f"Question {i}: tell me about " + "lorem ipsum dolor sit " * 8 for i in range(8)]
LONGER = [f"Question {i}: tell me about " + "lorem ipsum dolor sit " * 20 for i in range(16)]
MEMORY_ROLES = ("extractor", "curator")


def _converse(
    fake: FakeLlamaServer, home: Path, turns: list[str], **agent_changes: Any
) -> list[Event]:
    events: list[Event] = []
    agent = default_agent().with_changes(
        name="chat", provider="llamacpp", base_url=fake.url, model="fake", **agent_changes
    )

    async def go() -> None:
        s = ChatSession(
            agent, BrimPaths.resolve(home), events.append, approver=AutoApprove(), memory=True
        )
        await s.start()
        for text in turns:
            await s.send(text)
        await s.close()

    asyncio.run(go())
    return events


def test_on_a_1024_window_every_memory_request_fits_with_its_answer(tmp_path: Path):
    model = FakeModel(chat_reply="Lorem ipsum is placeholder text. " * 6)
    with FakeLlamaServer(n_ctx=1024) as fake:
        fake.responder = model
        events = _converse(fake, tmp_path, [ALEX, *LONGER[:8], "/learn"])
        sent = [
            (role_of(r.body), r.prompt_tokens, r.body["max_tokens"]) for r in fake.chat_requests
        ]
        rejected = fake.rejections
    assert any(isinstance(e, CompactionEvent) and e.phase == "finished" for e in events)
    memory = [s for s in sent if s[0] in MEMORY_ROLES]
    assert {"extractor", "curator"} <= {role for role, _, _ in memory}
    assert all(prompt + max_tokens <= 1024 for _, prompt, max_tokens in memory), memory
    assert rejected == [] and not [e for e in events if isinstance(e, ErrorEvent)]
    pending = MemoryService.for_paths(BrimPaths.resolve(tmp_path)).pending()
    assert [s.quote for s in pending] == ["My name is Alex.", "I always use tabs, never spaces."]
    assert all(s.by == STATEMENTS_ID for s in pending)


def test_each_compaction_sends_at_most_one_extraction_request_and_it_fits_filled(
    tmp_path: Path,
):
    """A compaction's extraction was a conversation of its own (one request per part of the
    span, each up to six steps), 30 s of a compaction on the bundled model; now it is one
    request, as full as the window allows with its answer (the span's first turns; the
    first pass reads all of them). (A summarizer model of its own: the agent's would be
    asked on the cached conversation.)"""
    model = FakeModel(chat_reply="Lorem ipsum is placeholder text. " * 6)
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = model
        _converse(fake, tmp_path, [ALEX, *LONGER], summarizer_model="fake-summarizer")
        bodies = [(role_of(r.body), r) for r in fake.chat_requests if not r.rejected]
    roles = [role for role, _ in bodies]
    compactions = [i for i, role in enumerate(roles) if role == "summarizer"]
    assert compactions
    starts = [0, *[i + 1 for i in compactions]]
    for start, end in zip(starts, compactions, strict=False):
        assert roles[start:end].count("extractor") <= 1, roles[start:end]
    before = [r for role, r in bodies[: compactions[0]] if role == "extractor"]
    (request,) = before
    assert not is_replayed(request.body)
    assert request.prompt_tokens + request.body["max_tokens"] <= 2048
    assert request.prompt_tokens + request.body["max_tokens"] > 2048 * 0.8  # filled
    shown = list(sources_in(request.body).values())
    assert len(shown) >= 2 and shown[0] == ALEX


def test_on_the_agents_own_model_the_extraction_asks_on_the_cached_conversation(tmp_path: Path):
    """Before a compaction on the agent's own model, the extraction replays the conversation
    as last sent: the engine evaluates its instruction and what came after that request,
    not a transcript of its own; the checkpoint request after it shares that prefix."""
    model = FakeModel(chat_reply="Lorem ipsum is placeholder text. " * 6)
    with FakeLlamaServer(n_ctx=4096) as fake:  # room for the checkpoint's replay too
        fake.responder = model
        _converse(fake, tmp_path, [ALEX, *LONGER, *LONGER])
        requests = [r for r in fake.chat_requests if not r.rejected]
        tokens = [fake.prompt_tokens(r.body) for r in requests]
    roles = [role_of(r.body) for r in requests]
    i = roles.index("extractor")
    assert is_replayed(requests[i].body)
    assert roles[i - 1] == "chat" and roles[i + 1] == "summarizer"
    assert requests[i].body.get("tools") == requests[i - 1].body.get("tools")
    fresh = len(tokens[i]) - common_prefix(tokens[i], tokens[i - 1])
    assert fresh < len(tokens[i]) // 4, (fresh, len(tokens[i]))
    after = len(tokens[i + 1]) - common_prefix(tokens[i + 1], tokens[i])
    assert after < len(tokens[i + 1]) // 4, (after, len(tokens[i + 1]))
    assert requests[i].prompt_tokens + requests[i].body["max_tokens"] <= 4096


def test_memory_requests_appear_in_usage_as_their_own_kind(tmp_path: Path):
    model = FakeModel(chat_reply="Lorem ipsum is placeholder text. " * 6)
    with FakeLlamaServer(n_ctx=1024) as fake:
        fake.responder = model
        events = _converse(fake, tmp_path, [ALEX, *LONGER[:8], "/learn", "/usage"])
        roles = [role_of(r.body) for r in fake.chat_requests]
    (usage,) = [e.report for e in events if isinstance(e, UsageReportEvent)]
    kinds = {row.model: row.requests for row in usage.purposes}
    memory = sum(1 for role in roles if role in MEMORY_ROLES)
    assert memory > 0 and kinds.get("memory") == memory, (kinds, roles)
    assert usage.total.requests == len(roles)
    assert any(line.strip().startswith("memory ") for line in usage.lines())


class Recording:
    """An extractor model that checks each request it is sent against the window."""

    def __init__(self, window: int, count) -> None:  # type: ignore[no-untyped-def]
        self.window = window
        self.count = count
        self.sizes: list[tuple[int, int]] = []

    async def __call__(
        self, messages: list[Message], tools: list[dict[str, Any]], max_tokens: int
    ) -> Completion:
        self.sizes.append((self.count(messages, tools), max_tokens))
        return Completion('{"memories": [], "lessons": []}')


@settings(max_examples=40, deadline=None)
@given(
    window=st.integers(min_value=600, max_value=8192),
    turns=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=12),
)
def test_no_scan_request_and_its_answer_outgrow_the_window(window: int, turns: list[int]):
    import tempfile

    def count_text(text: str) -> int:
        return len(text.split())

    count = approximate(count_text)
    model = Recording(window, count)
    chunk: list[Message] = []
    for i, words in enumerate(turns):
        chunk += [user(f"Turn {i}: " + "word " * words), assistant("ok " * (words // 2))]
    with tempfile.TemporaryDirectory() as root:
        service = MemoryService(Path(root))
        asyncio.run(
            run_scan(
                ScanInput("c", chunk, summary="earlier " * 300, later=chunk[-2:]),
                service=service,
                scopes=service.scopes(None, None),
                complete=model,
                count_text=count_text,
                window=window,
            )
        )
    assert all(prompt + answer <= window for prompt, answer in model.sizes), model.sizes
    assert all(answer > 0 for _, answer in model.sizes)


class Seen(Recording):
    def __init__(self, window: int, count) -> None:  # type: ignore[no-untyped-def]
        super().__init__(window, count)
        self.asked: list[tuple[str, int]] = []  # (system prompt, tools offered)

    async def __call__(
        self, messages: list[Message], tools: list[dict[str, Any]], max_tokens: int
    ) -> Completion:
        self.asked.append((messages[0].content, len(tools)))
        return await super().__call__(messages, tools, max_tokens)


def test_a_small_window_or_a_model_that_cannot_see_tools_is_asked_for_json_only(
    service: MemoryService,
):
    def words(text: str) -> int:
        return len(text.split())

    def blind(messages: list[Message], tools: list[dict[str, Any]]) -> int:
        return approximate(words)(messages, [])  # the template drops the tools

    for window, count in ((8192, approximate(words)), (1024, approximate(words)), (8192, blind)):
        model = Seen(window, count)
        asyncio.run(
            run_scan(
                ScanInput("c", [user("I use vim. " + "More words here. " * 20)]),
                service=service,
                scopes=service.scopes(None, None),
                complete=model,
                count_text=words,
                window=window,
                count_request=count,
            )
        )
        ((prompt, tools),) = model.asked
        full = window == 8192 and count is not blind
        assert (tools > 0) is full and ("If you cannot call tools" in prompt) is full
