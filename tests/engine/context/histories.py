"""Builders, a deterministic counter, fake summarizers and a hypothesis strategy for
valid histories with tool calls, shared by the context ladder's tests."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from hypothesis import strategies as st

from engine.context.checkpoint import covered_items, stored_checkpoint, summary_content
from engine.context.compaction import SummaryRequest, SummaryResult
from engine.context.guided import GUIDED_SYSTEM
from engine.context.history import group_units, is_fixed, is_turn_start
from engine.messages import Message, ToolCall, assistant, system, tool_result, user


def count(message: Message) -> int:
    """A simple deterministic counter: ~4 characters a token plus framing, as the seed
    counts it (4 per message, 10 more for a tool result)."""
    n = len(message.content) // 4 + 4
    for call in message.tool_calls:
        n += (len(call.name) + len(call.arguments)) // 4 + 3
    if message.role == "tool":
        n += 10
    return n


def total(messages: Sequence[Message]) -> int:
    return sum(count(m) for m in messages)


def text(chars: int, word: str = "lorem") -> str:
    return ((word + " ") * (chars // (len(word) + 1) + 1))[:chars]


class Ids:
    def __init__(self, prefix: str = "call") -> None:
        self._n = itertools.count(1)
        self.prefix = prefix

    def next(self) -> str:
        return f"{self.prefix}_{next(self._n)}"


def cycle(
    ids: Ids, result_chars: int | Sequence[int], name: str = "read_file", path: str | None = None
) -> list[Message]:
    """One tool cycle: an assistant message with calls and their results."""
    sizes = [result_chars] if isinstance(result_chars, int) else list(result_chars)
    calls = []
    for _ in sizes:
        cid = ids.next()
        if name == "run_command":
            args = {"command": f"pytest -q tests/{cid}"}
        else:
            args = {"path": path or f"src/{cid}.py"}
        calls.append(ToolCall(id=cid, name=name, arguments=json.dumps(args)))
    out: list[Message] = [assistant("", tuple(calls))]
    out.extend(tool_result(c, text(n, "data")) for c, n in zip(calls, sizes, strict=True))
    return out


def chat_run(turns: int = 14) -> list[Message]:
    """A conversation with nothing Brim carries mechanically: no tool calls, and no
    statement of the user's about themselves."""
    msgs = [system("You are Brim.")]
    for i in range(turns):
        msgs += [user(f"Question {i}: " + text(1_200, "why")), assistant(text(1_200, "because"))]
    return msgs


def terse_run(turns: int = 14) -> list[Message]:
    """A conversation in which the user never wrote a request of a few words ("go on"):
    nothing Brim carries mechanically, not even the user's first request as the Goal."""
    msgs = [system("You are Brim.")]
    for _ in range(turns):
        msgs += [user("go on"), assistant(text(2_400, "because"))]
    return msgs


def pinned(content: str = "Task: audit the repository.") -> Message:
    return Message(role="user", content=content, kind="pinned")


def old_summary(paths: Sequence[str]) -> list[Message]:
    covered = "\n".join(f"- `{p}`" for p in paths) or "- (none)"
    checkpoint = f"## Goal\nAudit the repo.\n\n## Covered So Far\n{covered}\n"
    return [
        Message(role="assistant", content=summary_content(checkpoint), kind="summary"),
        Message(role="user", content="[continue]", kind="continuation"),
    ]


def pairing_ok(messages: Sequence[Message]) -> bool:
    from engine.context.history import tool_pairing_problems

    return tool_pairing_problems(messages) == []


def is_subsequence(small: Sequence[Message], big: Sequence[Message]) -> bool:
    it = iter(m.id for m in big)
    return all(any(x == m.id for x in it) for m in small)


def minimal_cost(messages: Sequence[Message]) -> int:
    """What no trim can go below: the fixed messages, the last user request, the newest
    unit. The documented case where a request cannot fit is when this exceeds the budget."""
    units = group_units(messages)
    keep: set[int] = {i for i, m in enumerate(messages) if is_fixed(m)}
    free = [u for u in units if not any(is_fixed(messages[i]) for i in u)]
    if free:
        keep.update(free[-1])
    starts = [u[0] for u in free if is_turn_start(messages[u[0]])]
    if starts:
        keep.add(starts[-1])
    return sum(count(messages[i]) for i in keep)


CHECKPOINT_TEMPLATE = """## Goal
Audit the repository.
## Constraints & Preferences
- (none)
## Covered So Far
{covered}
## Progress
### Done
- read some files
### In Progress
- (none)
### Blocked
- (none)
## Key Decisions
- (none)
## Next Steps
- keep going
## Critical Context
- (none)
"""


def is_guided_question(request: SummaryRequest) -> bool:
    """One of the guided questions (one section at a time), not the whole checkpoint."""
    return request.messages[0].content == GUIDED_SYSTEM


def guided_answers(answers: dict[str, str]):
    """A summarizer whose whole checkpoint is always refused (it answers it with nothing),
    and which answers the guided question holding a key of `answers` with its value ("none"
    to the others)."""

    async def summarize(request: SummaryRequest) -> SummaryResult:
        if not is_guided_question(request):
            return SummaryResult("", "stop")
        question = request.messages[-1].content
        for key, answer in answers.items():
            if key in question:
                return SummaryResult(answer, "stop")
        return SummaryResult("none", "stop")

    return summarize


_TRANSCRIPT_USER = re.compile(r"^\[user\]\n(?P<text>.+)$", re.MULTILINE)


def first_user_words(request: SummaryRequest, most: int = 12) -> str:
    """The first words the user wrote in what the summarizer is asked about: in the fenced
    transcript, or in the conversation the request replays ("" when there are none)."""
    fenced = _TRANSCRIPT_USER.search(request.messages[-1].content)
    if fenced is not None:
        said = fenced.group("text")
    else:
        said = next(
            (m.content for m in request.messages[1:-1] if m.role == "user" and m.kind == "chat"),
            "",
        )
    words = [w for i, w in enumerate(said.split()) if i == 0 or w != said.split()[i - 1]]
    return " ".join(words[:most])  # a word said over and over, once: no loop to refuse


@dataclass
class FakeSummarizer:
    """Answers with a valid checkpoint whose Covered So Far lists only `covered` (it
    deliberately forgets the prior checkpoint's entries) and whose Critical Context quotes
    the first words the user wrote in what it read, and records every request.
    `guided`, when given, is a complete answer to every guided question (the path a refused
    checkpoint falls back to); otherwise those questions get the same answer as the
    free-form request."""

    covered: Sequence[str] = ("`fresh/path.py`",)
    text: str | None = None
    finish_reason: str | None = "stop"
    error: Exception | None = None
    guided: str | None = None
    requests: list[SummaryRequest] = field(default_factory=list)

    async def __call__(self, request: SummaryRequest) -> SummaryResult:
        self.requests.append(request)
        if self.error is not None:
            raise self.error
        if self.guided is not None and is_guided_question(request):
            return SummaryResult(self.guided, "stop")
        if self.text is not None:
            return SummaryResult(self.text, self.finish_reason)
        covered = "\n".join(f"- {c}" for c in self.covered)
        checkpoint = CHECKPOINT_TEMPLATE.format(covered=covered)
        said = first_user_words(request)
        if said:  # as a faithful summarizer would: something the conversation said
            checkpoint = checkpoint.replace(
                "## Critical Context\n- (none)", f"## Critical Context\n- {said}"
            )
        return SummaryResult(checkpoint, self.finish_reason)

    @property
    def prompt(self) -> str:
        return self.requests[-1].messages[-1].content


def summaries(messages: Sequence[Message]) -> list[Message]:
    return [m for m in messages if m.kind == "summary"]


def covered_of(messages: Sequence[Message]) -> list[str]:
    return [i for s in summaries(messages) for i in covered_items(stored_checkpoint(s))]


# The hypothesis strategy ------------------------------------------------------------------

TOOLS = ("read_file", "list_directory", "search_files", "edit_file", "run_command")


@st.composite
def histories(draw: st.DrawFn, max_turns: int = 6, max_chars: int = 2400) -> list[Message]:
    """A valid history: system first, maybe pinned/task, maybe an earlier summary with its
    continuation (and then maybe a tail that starts mid-turn), then turns of user /
    assistant with tool calls / tool results / assistant answers."""
    ids = Ids()
    sizes = st.integers(0, max_chars)
    msgs: list[Message] = [system("You are Brim. " + text(draw(st.integers(0, 300))))]
    if draw(st.booleans()):
        msgs.append(pinned())
    if draw(st.booleans()):
        msgs.append(Message(role="user", content="Workflow task: ship it.", kind="task"))
    if draw(st.booleans()):
        paths = draw(st.lists(st.sampled_from(["a.py", "b/c.py", "d.md", "e/f/g.rs"]), max_size=3))
        msgs.extend(old_summary(paths))
        for _ in range(draw(st.integers(0, 2))):
            msgs.extend(_drawn_cycle(draw, ids, sizes))
    msgs.extend(draw(turns(ids, max_turns, max_chars)))
    return msgs


@st.composite
def turns(
    draw: st.DrawFn, ids: Ids | None = None, max_turns: int = 6, max_chars: int = 2400
) -> list[Message]:
    """One or more turns: a user message, then assistant text and tool cycles."""
    ids = ids or Ids("more")
    sizes = st.integers(0, max_chars)
    msgs: list[Message] = []
    for _ in range(draw(st.integers(1, max_turns))):
        msgs.append(user(text(draw(st.integers(1, 600)), "ask")))
        for _ in range(draw(st.integers(0, 4))):
            if draw(st.booleans()):
                msgs.append(assistant(text(draw(st.integers(0, 300)), "think")))
            msgs.extend(_drawn_cycle(draw, ids, sizes))
        if draw(st.booleans()):
            msgs.append(assistant(text(draw(st.integers(1, 800)), "answer")))
    return msgs


def _drawn_cycle(draw: st.DrawFn, ids: Ids, sizes: st.SearchStrategy[int]) -> list[Message]:
    n = draw(st.integers(1, 3))
    calls = []
    for _ in range(n):
        cid = ids.next()
        name = draw(st.sampled_from(TOOLS))
        args = {"command": "make test"} if name == "run_command" else {"path": f"src/{cid}.py"}
        calls.append(ToolCall(id=cid, name=name, arguments=json.dumps(args)))
    out: list[Message] = [assistant(text(draw(st.integers(0, 120)), "plan"), tuple(calls))]
    out.extend(tool_result(c, text(draw(sizes), "out")) for c in calls)
    return out
