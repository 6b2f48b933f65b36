"""The deterministic pass: the user's explicit first-person statements become suggestions
quoting their exact sentence, on any model; nothing else does."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from engine.memory import Completion, MemoryService, ScanInput, ScanReport, run_scan
from engine.memory.reflect import reflect_conversation
from engine.memory.statements import STATEMENTS_ID, find_statements
from engine.memory.support import check_supported
from engine.messages import Message, ToolCall, assistant, notice, tool_result, user
from engine.store import MessageRecord
from tests.engine.memory.fakes import tags_in

ALEX = "My name is Alex. I always use tabs, never spaces."

STATEMENTS = [
    ("My name is Alex.", "The user's name is Alex."),
    ("Call me Sam.", "The user wants to be called Sam."),
    ("I go by Sam.", "The user goes by Sam."),
    ("I always use tabs, never spaces.", "The user always uses tabs, never spaces."),
    ("I never want you to force push to main.", "The user never wants you to force push to main."),
    ("I prefer dark mode in every editor.", "The user prefers dark mode in every editor."),
    ("I usually review pull requests in the morning.",
     "The user usually reviews pull requests in the morning."),
    ("I'd rather have short answers.", "The user would rather have short answers."),
    ("Please remember that I deploy on Fridays.", "The user deploys on Fridays."),
    ("Remember: my manager reviews every pull request.",
     "The user's manager reviews every pull request."),
    ("When I'm on the laptop I always use spaces.",
     "When the user is on the laptop the user always uses spaces."),
    ("I am allergic to peanuts.", "The user is allergic to peanuts."),
    ("I'm vegetarian.", "The user is vegetarian."),
]  # fmt: skip

NOTHING = {
    "negation": ["I don't always use tabs.", "I do not usually review on Fridays.",
                 "Not that I always use tabs.", "Don't call me Sam.", "My name is not Alex.",
                 "Not because I always use tabs, but because the linter wants them.",
                 "I am not allergic to peanuts."],
    "question": ["Do I always use tabs?", "Should I always use tabs", "Can you call me Sam?",
                 "Could you remember that I use tabs?", "Why do I always forget the flags",
                 "Am I allergic to peanuts?"],
    "reported": ["My colleague always uses tabs.", "My colleague says I always use tabs.",
                 "You said I always use tabs.", "Sarah prefers tabs.", "I think I always use tabs.",
                 'He told me "I always use tabs."', "I never said I use tabs.",
                 "My sister is allergic to peanuts.", "My colleague says I am allergic to cats."],
    "hypothetical": ["If I always used tabs, would that help?", "Imagine I always used tabs.",
                     "I might always use tabs from now on.", "Suppose my name is Alex."],
    "ordinary": ["Please summarise the README file for me.", "Remember to close the door.",
                 "I use tabs.", "Thanks, that works."],
}  # fmt: skip


@pytest.mark.parametrize(("sentence", "statement"), STATEMENTS, ids=[s for s, _ in STATEMENTS])
def test_an_explicit_first_person_statement_is_found_and_restated_in_the_third_person(
    sentence: str, statement: str
):
    (found,) = find_statements(f"Thanks. {sentence} Now the next thing.")
    assert found.sentence.text == sentence and found.statement == statement
    check_supported(found.statement, found.sentence.text)  # passes the quote check as it is


@pytest.mark.parametrize(
    "sentence",
    [s for group in NOTHING.values() for s in group],
    ids=[f"{kind}: {s}" for kind, group in NOTHING.items() for s in group],
)
def test_a_negation_question_report_or_hypothetical_gives_no_statement(sentence: str):
    assert find_statements(sentence) == []


class Model:
    """An extractor model that cannot call tools: it answers `text` whatever it is asked."""

    def __init__(self, text: str = "Sure! Here is a summary of the conversation.") -> None:
        self.text = text
        self.requests: list[list[Message]] = []

    async def __call__(
        self, messages: list[Message], tools: list[dict[str, Any]], max_tokens: int
    ) -> Completion:
        self.requests.append(list(messages))
        if callable(self.text):
            return Completion(self.text(messages[1].content))
        return Completion(self.text)


def _scan(service: MemoryService, chunk: list[Message], model: Model) -> ScanReport:
    return asyncio.run(
        run_scan(
            ScanInput("conv", chunk),
            service=service,
            scopes=service.scopes("default", None),
            complete=model,
            count_text=lambda text: len(text.split()),
            window=4096,
        )
    )


def test_the_alex_sentence_gives_two_suggestions_on_a_model_that_cannot_call_tools(
    service: MemoryService,
):
    report = _scan(service, [user(ALEX), assistant("Hello Alex!")], Model())
    waiting = service.pending()
    assert [(s.quote, s.statement) for s in waiting] == [
        ("My name is Alex.", "The user's name is Alex."),
        ("I always use tabs, never spaces.", "The user always uses tabs, never spaces."),
    ]
    assert all(s.by == STATEMENTS_ID and s.author == "user" for s in waiting)
    assert all(s.scope == "global" for s in waiting)
    assert report.queued == [s.id for s in waiting] and report.statements == 2


def _json_for(*items: tuple[str, str, str]):  # type: ignore[no-untyped-def]
    def answer(prompt: str) -> str:
        tag = next(iter(tags_in(prompt)))
        memories = [
            {"action": "create", "scope": "global", "subject": subject, "content": content,
             "quote": quote, "source": tag}
            for subject, content, quote in items
        ]  # fmt: skip
        return json.dumps({"memories": memories, "lessons": []})

    return answer


def test_a_model_suggestion_for_the_same_sentence_replaces_the_deterministic_one(
    service: MemoryService,
):
    model = Model(_json_for(("editor-indent", "User always uses tabs.", "I always use tabs")))
    _scan(service, [user(ALEX)], model)
    waiting = service.pending()
    assert len(waiting) == 2
    by = {s.quote: s.by for s in waiting}
    assert by == {"My name is Alex.": STATEMENTS_ID, "I always use tabs": "memory-extractor"}


def test_a_model_suggestion_spanning_both_sentences_is_merged_away_not_added(
    service: MemoryService,
):
    model = Model(_json_for(("alex", "User Alex always uses tabs, never spaces.", ALEX)))
    report = _scan(service, [user(ALEX)], model)
    assert len(service.pending()) == 2 and all(s.by == STATEMENTS_ID for s in service.pending())
    assert any("already waiting" in r for r in report.refused)


def test_text_from_tools_the_model_or_brim_itself_gives_no_statement(service: MemoryService):
    call = ToolCall("t1", "read_file", '{"path": "NOTES.md"}')
    chunk = [
        user("please summarise the notes file for me"),
        assistant(f"{ALEX}", (call,)),
        tool_result(call, f"# Notes\n{ALEX}\nRemember that I deploy on Fridays."),
        notice(ALEX),
    ]
    report = _scan(service, chunk, Model())
    assert service.pending() == [] and report.queued == []


def test_a_statement_already_waiting_or_in_memory_is_not_suggested_again(service: MemoryService):
    message = user(ALEX)
    _scan(service, [message], Model())
    first = service.pending()
    service.accept([first[0].id])
    _scan(service, [message], Model())  # the same message read again (a later pass)
    assert [s.id for s in service.pending()] == [first[1].id]


def test_a_statement_holding_a_secret_is_not_suggested(service: MemoryService):
    _scan(service, [user("I always log in with the password hunter2 on the router.")], Model())
    assert service.pending() == []


def test_the_reflection_on_leaving_a_conversation_queues_the_two_statements(
    service: MemoryService,
):
    records = [MessageRecord(1, user(ALEX), None), MessageRecord(2, assistant("Hi!"), None)]
    report = asyncio.run(
        reflect_conversation(
            records,
            "conv",
            service=service,
            scopes=service.scopes(None, None),
            complete=Model(),
            count_text=lambda text: len(text.split()),
            window=1024,
        )
    )
    assert len(report.queued) == 2 and len(service.pending()) == 2


def test_a_sent_statement_waits_for_review_after_its_turn_with_no_compaction_or_learn(
    tmp_path,
):
    """On the default model nothing ever reads a short conversation again (no compaction,
    no `/learn`): the user's statements must wait for review as soon as they are said."""
    from engine.config import default_agent
    from engine.events import MemorySuggestionsEvent
    from engine.paths import BrimPaths
    from engine.session import ChatSession
    from tests.helpers.fake_engines import FakeLlamaServer

    events: list[Any] = []
    with FakeLlamaServer(n_ctx=2048) as fake:
        agent = default_agent().with_changes(
            name="chat", provider="llamacpp", base_url=fake.url, model="fake"
        )
        paths = BrimPaths.resolve(tmp_path / "home")

        async def go() -> None:
            s = ChatSession(agent, paths, events.append, memory=True)
            await s.start()
            await s.send(ALEX)
            await s.send("Do I always use tabs? My colleague always uses spaces.")
            await s.close()

        asyncio.run(go())
        compactions = [r for r in fake.chat_requests if "checkpoint" in str(r.body).lower()]
    waiting = MemoryService.for_paths(paths).pending()
    assert [s.quote for s in waiting] == ["My name is Alex.", "I always use tabs, never spaces."]
    assert compactions == []
    told = [e for e in events if isinstance(e, MemorySuggestionsEvent)]
    assert told and told[-1].pending == 2
