"""The typed events every stage emits.

The desktop and the headless JSON-lines output are two renderings of this one stream, so
anything the window shows can be checked without a window. Field names here are the
headless contract: extend them, never rename them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal

from engine.notice_kinds import (
    NOTICE_ANSWER_CUT as NOTICE_ANSWER_CUT,
)
from engine.notice_kinds import (
    NOTICE_ANSWER_ROOM as NOTICE_ANSWER_ROOM,
)
from engine.notice_kinds import (
    NOTICE_AUTO_COMPACTING as NOTICE_AUTO_COMPACTING,
)
from engine.notice_kinds import (
    NOTICE_CALLS_CAPPED as NOTICE_CALLS_CAPPED,
)
from engine.notice_kinds import (
    NOTICE_COMPACTED as NOTICE_COMPACTED,
)
from engine.notice_kinds import (
    NOTICE_COMPACTION_FALLBACK as NOTICE_COMPACTION_FALLBACK,
)
from engine.notice_kinds import (
    NOTICE_CUT_TO_FIT as NOTICE_CUT_TO_FIT,
)
from engine.notice_kinds import (
    NOTICE_MCP_TOOLS_JOINED as NOTICE_MCP_TOOLS_JOINED,
)
from engine.notice_kinds import (
    NOTICE_MODEL_RELOADED as NOTICE_MODEL_RELOADED,
)
from engine.notice_kinds import (
    NOTICE_NOTHING_TO_COMPACT as NOTICE_NOTHING_TO_COMPACT,
)
from engine.notice_kinds import (
    NOTICE_OVERFLOW as NOTICE_OVERFLOW,
)
from engine.notice_kinds import (
    NOTICE_PIN_LOWERED as NOTICE_PIN_LOWERED,
)
from engine.notice_kinds import (
    NOTICE_PIN_NOT_HONOURED as NOTICE_PIN_NOT_HONOURED,
)
from engine.notice_kinds import (
    NOTICE_REASONING_UNAVAILABLE as NOTICE_REASONING_UNAVAILABLE,
)
from engine.notice_kinds import (
    NOTICE_REPETITION as NOTICE_REPETITION,
)
from engine.notice_kinds import (
    NOTICE_SHARED_POOL as NOTICE_SHARED_POOL,
)
from engine.notice_kinds import (
    NOTICE_SPILL_CHOICE as NOTICE_SPILL_CHOICE,
)
from engine.notice_kinds import (
    NOTICE_SPILLED as NOTICE_SPILLED,
)
from engine.notice_kinds import (
    NOTICE_THINKING_CUT as NOTICE_THINKING_CUT,
)
from engine.notice_kinds import (
    NOTICE_TOOLS_UNAVAILABLE as NOTICE_TOOLS_UNAVAILABLE,
)
from engine.notice_kinds import (
    NOTICE_TRIMMED as NOTICE_TRIMMED,
)
from engine.notice_kinds import (
    NOTICE_WINDOW_DOUBTED as NOTICE_WINDOW_DOUBTED,
)
from engine.notice_kinds import (
    NOTICE_WINDOW_DROPPED as NOTICE_WINDOW_DROPPED,
)
from engine.notice_kinds import (
    NOTICE_WINDOW_LEARNED as NOTICE_WINDOW_LEARNED,
)
from engine.notice_kinds import (
    TOOLS_REASON_ENGINE as TOOLS_REASON_ENGINE,
)
from engine.notice_kinds import (
    TOOLS_REASON_MODEL as TOOLS_REASON_MODEL,
)
from engine.notice_kinds import (
    TOOLS_REASON_NO_FOLDER as TOOLS_REASON_NO_FOLDER,
)
from engine.notice_kinds import (  # handed on: callers import them from here
    NoticeKind as NoticeKind,
)
from engine.notice_kinds import (
    notice_kind as notice_kind,
)

if TYPE_CHECKING:  # the report module imports the ladder, which imports this module
    from engine.report.context_report import ContextReport, UsageReport


@dataclass
class Event:
    type: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        data = {"type": self.type}
        for f in dataclasses.fields(self):
            data[f.name] = getattr(self, f.name)
        return data


@dataclass
class WindowEvent(Event):
    type: ClassVar[str] = "window"
    window: int
    source: str
    warnings: list[str] = field(default_factory=list)
    conversation: str = ""


@dataclass
class WindowLearnedEvent(Event):
    """The engine revealed its window after the start (Ollama loaded the model, an overflow
    error named it, a rejection or a silent cut showed it is smaller): Brim accounts against
    `new` from now on and compacts at `compacts_at`. `source` is the window's new source
    (server | observed | pinned); `cause` what showed it (loaded | overflow |
    rejected_below_report | truncation), or spill_shrink (the fit policy lowered the pin)."""

    type: ClassVar[str] = "window_learned"
    engine: str
    model: str
    old: int
    new: int
    source: str
    cause: str
    compacts_at: int


@dataclass
class EngineLoadingEvent(Event):
    """The engine answers but is still loading its model (llama-server's /health is 503):
    Brim waits, and says so every poll, with how long it has waited of how long it will."""

    type: ClassVar[str] = "engine_loading"
    engine: str
    waited_s: float
    limit_s: float


@dataclass
class DeltaEvent(Event):
    type: ClassVar[str] = "delta"
    text: str


@dataclass
class ReasoningEvent(Event):
    """A piece of the model's reasoning as it streams (a thinking model), apart from the
    answer's `delta` events: the window shows it in a folded "Thinking" block."""

    type: ClassVar[str] = "reasoning"
    text: str


@dataclass
class ReasoningEndEvent(Event):
    """The model finished reasoning for this answer (its first answer token or tool call
    came, or the answer ended): how long it thought, in the served model's tokens
    (estimated where the engine does not say) and seconds."""

    type: ClassVar[str] = "reasoning_end"
    tokens: int
    seconds: float
    estimated: bool = True


@dataclass
class UsageEvent(Event):
    type: ClassVar[str] = "usage"
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None  # None: the engine did not report it (not the same as 0)
    # Brim's own count of the request, made before it was sent, and whether it is exact
    # (the engine's tokenizer) or estimated: beside prompt_tokens it shows the counting error.
    counted: int | None = None
    counted_exact: bool = False


@dataclass
class ContextEvent(Event):
    type: ClassVar[str] = "context"
    used: int
    window: int
    percent: float
    source: str
    estimated: bool = False


@dataclass
class AnswerProgressEvent(Event):
    """An answer is streaming: the request's prompt and the answer's tokens so far (by the
    counter; the landing `context` event then gives the engine's count). The gauge grows
    with it instead of sitting still through a long answer."""

    type: ClassVar[str] = "answer_progress"
    prompt_tokens: int
    completion_tokens: int  # the reasoning's tokens included: the window holds both
    window: int
    reasoning_tokens: int = 0  # of completion_tokens: reasoning, held only while the turn runs


NoticeLevel = Literal["info", "warning"]


@dataclass
class NoticeEvent(Event):
    type: ClassVar[str] = "notice"
    level: NoticeLevel
    text: str
    marker: str = ""  # what the ladder did, when it did something: compaction | trim | clear
    # The ladder's own words as it acts ("auto-compacting…" and "Compacted 64 → 12 messages",
    # docs/design/context.md): headless output carries them; a window shows the saved row instead.
    transient: bool = False
    # What the notice reports, for a program reading the stream ("" for a plain notice), its
    # figures in `details`: NOTICE_ANSWER_CUT (the engine stopped the answer at its output
    # cap: max_tokens, completion_tokens, limit) or NOTICE_REPETITION (the repetition guard
    # stopped a looping answer: block_chars, repeats, dropped_chars) or NOTICE_CALLS_CAPPED.
    kind: NoticeKind = ""
    details: dict[str, int | str] = field(default_factory=dict)


@dataclass
class TurnEndEvent(Event):
    type: ClassVar[str] = "turn_end"
    elapsed_s: float
    prompt_tokens: int
    completion_tokens: int
    tokens_per_s: float
    # What the engine's prompt cache served of the last request (llama-server's cache_n,
    # OpenAI-style cached_tokens); None: the engine did not say (Ollama), never 0.
    cached_tokens: int | None = None
    # How the last answer ended: the engine's "stop" / "length" / "tool_calls", "repetition"
    # when the repetition guard stopped it, None when the engine did not say.
    finish_reason: str | None = None


# Every kind an error may carry: the engine's (engine/providers/errors.py and the window's
# absurd report), the store's, and the session's refusals.
ErrorKind = Literal[
    "provider_error",
    "unreachable",
    "model_not_found",
    "context_overflow",
    "tools_unsupported",
    "thinking_unsupported",
    "server_error",
    "kv_pool_full",
    "protocol_error",
    "absurd_window",
    "disk_full",
    "store_error",
    "busy",
    "no_session",
    "unknown_conversation",
    "conversation_busy",
    "memory",
    "message_too_large",
    "startup",
    "bad_command",
    "not_restorable",
    "unknown_compaction",
    "mcp_start_failed",
    "mcp_server_exited",
    "mcp_timeout",
    "mcp_malformed_reply",
    "mcp_call_failed",
]


@dataclass
class ErrorEvent(Event):
    type: ClassVar[str] = "error"
    kind: ErrorKind
    message: str
    # Figures behind the error, for a front end that acts on them (e.g. message_too_large:
    # {"tokens": ..., "window": ..., "fixed_tokens": ...}).
    data: dict[str, Any] = field(default_factory=dict)
    # A second attempt may cure it (the engine was unreachable, crashed, is still loading):
    # a front end offers Retry for these and only these.
    retryable: bool = False


# What the agent is doing now (a `state` event's value; the header shows it as it is).
AgentState = Literal[
    "ready",
    "loading model",
    "waiting for the engine",
    "thinking",
    "streaming",
    "compacting",
    "waiting for approval",
    "suggesting memories",
    "learning",
]


@dataclass
class StateEvent(Event):
    """What the agent is doing now: ready, streaming, compacting, waiting for approval, ..."""

    type: ClassVar[str] = "state"
    state: AgentState


@dataclass
class StepEvent(Event):
    """A run sends its next request: which one of the run it is, against the run's iteration
    cap (None: no cap). The header shows `turn 3 · step 12/50` until the agent is ready."""

    type: ClassVar[str] = "step"
    step: int
    max_steps: int | None = None


@dataclass
class ToolCallEvent(Event):
    type: ClassVar[str] = "tool_call"
    id: str
    name: str
    arguments: str


@dataclass
class ToolResultEvent(Event):
    type: ClassVar[str] = "tool_result"
    id: str
    name: str
    chars: int
    truncated: bool
    preview: str = ""  # the start of what entered the history (TOOL_PREVIEW_CHARS at most)
    is_error: bool = False


# Where a compaction is (a `compaction` event's phase).
CompactionPhase = Literal["started", "finished", "failed"]


@dataclass
class CompactionEvent(Event):
    type: ClassVar[str] = "compaction"
    phase: CompactionPhase
    reason: str  # preflight | context_overflow | manual | session_budget | shared_pool
    messages_before: int = 0
    messages_after: int = 0
    # On "finished": how many messages the checkpoint replaced, as Show / Restore lists them.
    messages_replaced: int = 0
    tokens_saved: int = 0
    compaction: str = ""  # finished: its id (the checkpoint's), which a restore names
    # On "finished": what the checkpoint's summary came from, "freeform", "guided", or
    # "mechanical" (every summarizer answer was refused: the checkpoint holds only what Brim
    # carries itself, the user's statements and the tool facts). "" on the other phases.
    summary: str = ""


# NoticeEvent kinds of a restore (engine/session/restoring.py), figures in `details`:
# NOTICE_RESTORED (the saved row: compaction, number, messages_restored, tokens, window,
# compact_at) and NOTICE_RESTORE_UNCONFIRMED (not done: the history would reach the
# auto-compact mark; the same figures, and the command that confirms it).
NOTICE_RESTORED: Final = "compaction_restored"
NOTICE_RESTORE_UNCONFIRMED: Final = "restore_unconfirmed"


@dataclass
class CompactionListEvent(Event):
    """The answer to `/compaction`: the conversation's compactions, oldest first, each
    {number, id, replaced, created, restored, live} (`live`: its checkpoint is in the
    history now, so it can be restored)."""

    type: ClassVar[str] = "compaction_list"
    compactions: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class CompactionViewEvent(Event):
    """The answer to `/compaction show N` (a compaction row's or marker's Show): what the
    compaction replaced and what putting it back would do, in Brim's count of the next
    request. `fits` is False when the restored history would reach the auto-compact mark
    (`compact_at`; `window` is the whole window): a restore then waits for a confirmation."""

    type: ClassVar[str] = "compaction_view"
    compaction: str  # its id: the id of the checkpoint message it wrote
    number: int
    messages: list[dict[str, Any]] = field(default_factory=list)  # Message.to_dict, in order
    restored: bool = False
    restorable: bool = False  # its checkpoint is live and it was not restored yet
    merged_into: int = 0  # the later compaction whose checkpoint merged this one's, or 0
    tokens: int = 0  # the next request with them put back (0: not counted, no window yet)
    window: int = 0
    compact_at: int = 0
    fits: bool = False


@dataclass
class CompactionRestoredEvent(Event):
    """A compaction was undone: its replaced messages are in the live history again and its
    checkpoint is gone. The figures are those of the history now (`fits` as in the view)."""

    type: ClassVar[str] = "compaction_restored"
    compaction: str
    number: int
    messages_restored: int
    messages_before: int
    messages_after: int
    tokens: int = 0
    window: int = 0
    compact_at: int = 0
    fits: bool = False


@dataclass
class TrimEvent(Event):
    type: ClassVar[str] = "trim"
    messages_dropped: int


@dataclass
class MemorySuggestionsEvent(Event):
    type: ClassVar[str] = "memory_suggestions"
    pending: int


@dataclass
class ClearEvent(Event):
    """The clearing rung stubbed old tool results before a request (a timeline marker)."""

    type: ClassVar[str] = "clear"
    results_cleared: int


@dataclass
class LoadProgressEvent(Event):
    """The embedded engine is loading its model: 0.0 … 1.0."""

    type: ClassVar[str] = "load_progress"
    fraction: float


@dataclass
class LearnProgressEvent(Event):
    """`/learn` is at `step` of `steps` (each chunk read, then the curation call)."""

    type: ClassVar[str] = "learn_progress"
    step: int
    steps: int
    text: str


@dataclass
class LastRequestEvent(Event):
    """The engine accepted a request: where it starts in the conversation, so a transcript
    can mark the messages above it (compacted or trimmed away). `first_message` is the id
    of the first conversation message it carried ("" when none); `first_role` its role;
    `user_turns_from` how many of the user's messages, from that one on, it carried."""

    type: ClassVar[str] = "last_request"
    first_message: str
    first_role: str
    user_turns_from: int
    messages: int  # in the wire form
    tokens: int  # the engine's count of its prompt


@dataclass
class RequestViewEvent(Event):
    """The answer to `/context show` ("What the model saw"): the last request as sent, each
    part's tokens by Brim's counter ({part, tokens, messages}: system, checkpoint, kept,
    new, tools, framing), and what changed since the request before ({change, role, id,
    preview, position, was, tokens}: added, removed, moved, changed; `role` "tools" for a
    tool schema, whose `preview` is its name). `rendered` is the prompt text as the engine's
    chat template made it, by `rendered_by`; "" where no template is known (the wire
    `messages` are then what the engine received). `sent` is False before any request."""

    type: ClassVar[str] = "request_view"
    sent: bool
    at: float = 0.0
    engine_tokens: int = 0
    counted_tokens: int = 0
    parts: list[dict[str, Any]] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    compared: bool = False  # a request before it was kept to compare with
    messages: list[dict[str, Any]] = field(default_factory=list)  # Message.to_dict, in order
    tools: list[str] = field(default_factory=list)
    rendered: str = ""
    rendered_by: str = ""


@dataclass
class ContextReportEvent(Event):
    """The rail's numbers (engine/report/context_report.py), after every request that lands
    and whenever the ladder changes the history; `snapshot` marks the answer to `/context`."""

    type: ClassVar[str] = "context_report"
    report: ContextReport
    snapshot: bool = False

    def to_dict(self) -> dict[str, Any]:
        report = self.report
        return {
            "type": self.type,
            "snapshot": self.snapshot,
            **dataclasses.asdict(report),
            "percent": round(report.percent, 1),
            "headroom": report.headroom,
            "level": report.level,
            "lines": report.lines(),
        }


@dataclass
class UsageReportEvent(Event):
    """The answer to `/usage`."""

    type: ClassVar[str] = "usage_report"
    report: UsageReport

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            **dataclasses.asdict(self.report),
            "lines": self.report.lines(),
        }


@dataclass
class WorkStateEvent(Event):
    """The answer to `/work` (and `/work clear`): the work state as text, empty when none."""

    type: ClassVar[str] = "work_state"
    text: str
    cleared: bool = False
    tools: bool = True  # the agent has tools here (the work state is recorded with one)


TOOL_PREVIEW_CHARS = 2_000

EventSink = Callable[[Event], None]


def discard(_: Event) -> None:
    """An event sink that drops everything (for callers that do not listen)."""


@dataclass
class ViewRequestEvent(Event):
    """A command whose answer is a view the front end opens: the agent editor, the memory
    browser, the review dialog, a new conversation."""

    type: ClassVar[str] = "view_request"
    # one of VIEWS: "agent_editor" | "memory_browser" | "memory_review" | "new_conversation"
    view: str


# What a submitted text was taken as (an AcceptedEvent's action; engine/commands.Action).
SubmissionAction = Literal["message", "report", "compact", "learn", "view", "restore"]


@dataclass
class AcceptedEvent(Event):
    """What was typed was taken by the session, before anything runs: a front end clears its
    composer and shows a message as the user's row on this event, never on its own reading of
    the text. Text refused (a turn is running) gets an ErrorEvent("busy") instead."""

    type: ClassVar[str] = "accepted"
    text: str
    action: SubmissionAction
    # It holds the session until it ends (a message, /compact, /learn, /new); False for a
    # report or a view that is answered beside a running turn.
    takes_turn: bool
    view: str = ""  # for action "view": one of engine/commands.VIEWS
    # This submission's id: a front end keys the row it draws by it, and the WithdrawnEvent
    # that takes the submission back names it, so no row is found by matching its text.
    submission: str = ""


@dataclass
class WithdrawnEvent(Event):
    """A submission taken earlier (its AcceptedEvent) was dropped before it ran: cancelled
    while the model was still loading. Nothing of it was sent or saved; a front end takes
    back what it showed (the user's row) and gives the text back to the composer."""

    type: ClassVar[str] = "withdrawn"
    text: str
    action: SubmissionAction
    submission: str = ""  # the AcceptedEvent's id
