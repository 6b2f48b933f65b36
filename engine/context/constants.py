"""The ladder's numbers (docs/design/context.md), in one place.

Every ratio is a share of the context budget (the effective window, after the per-agent
ceiling). They are ordered on purpose: clearing (cheapest) fires first, the warnings give the
user a window to act, compaction gets first refusal, and trimming only fires when
summarizing could not bring the run under budget.
"""

from __future__ import annotations

from engine.messages import Role

# The rungs, as shares of the window.
CONTEXT_CLEAR_THRESHOLD_RATIO = 0.5
CONTEXT_WARN_RATIO = 0.7
CONTEXT_CRITICAL_RATIO = 0.9
DEFAULT_COMPACTION_RATIO = 0.8
TRIM_RATIO = 0.95

# Overflow recovery without a summary trims the history to this share of its own size.
OVERFLOW_TRIM_RATIO = 0.7

# Clearing: the protected window runs from the assistant message that opened the fifth
# most recent tool cycle to the end of the history.
PROTECTED_TOOL_CYCLES = 5
# A tool result is "large" (worth stubbing) above this many tokens. A placeholder costs
# ~40-60 tokens, so stubbing anything smaller would save little and still move the
# cache prefix.
LARGE_TOOL_RESULT_TOKENS = 200

# Trimming: the last N complete turns are protected.
PROTECTED_TURNS = 3

# Compaction: the recent tail kept verbatim is 20% of the window, clamped to 8K-40K; on
# windows under 32K the floor shrinks to a quarter of the window.
RECENT_TAIL_RATIO = 0.2
RECENT_TAIL_MIN_TOKENS = 8_000
RECENT_TAIL_MAX_TOKENS = 40_000
SMALL_WINDOW_TOKENS = 32_000

# The summary is a system message carrying condensed history, never one of the model's own
# earlier answers (docs/design/context.md): a small model shown its checkpoint as an assistant turn
# parrots it. On the wire it joins the leading system message (messages.alternating), so
# templates that take one system message only still work. The continuation after it is a
# user-role nudge.
SUMMARY_ROLE: Role = "system"
CONTINUATION_ROLE: Role = "user"

# A middle smaller than this is not worth a summarizer call: the checkpoint's own headings
# cost about as much as it would free.
MIN_SUMMARIZABLE_TOKENS = 200
# The current turn's user message (the request being worked on) is kept verbatim in the
# tail when it is at most this share of the tail budget; a bigger one is summarized.
KEEP_REQUEST_TAIL_SHARE = 0.25

# The summarizer's own output limit: a share of the window, clamped, so the summary of a
# small window still leaves room for the tail.
SUMMARY_MAX_TOKENS_RATIO = 0.15
SUMMARY_MIN_TOKENS = 256
SUMMARY_MAX_TOKENS = 4_096

# Budgets from the space the fixed prefix (system prompt, tool schemas, framing) leaves.
# "Free" is what the conversation may fill before compaction: the compaction threshold minus
# the fixed prefix. The summary gets a share of it; the recent tail is what keeps the rebuilt
# request under POST_COMPACTION_RATIO of the window, so every compaction frees at least
# (compaction ratio - POST_COMPACTION_RATIO) of it.
SUMMARY_FREE_SHARE = 0.2
POST_COMPACTION_RATIO = 0.58
TAIL_MIN_FREE_SHARE = 0.2
# A tool result's first insertion (and a read_file page) fits the recent tail, so the
# compaction after it keeps the result the model is working on.
TOOL_RESULT_TAIL_SHARE = 0.8
TOOL_RESULT_MIN_TOKENS = 200
TOOL_RESULT_MAX_TOKENS = 4_000  # about the 16,000 characters of old, on large windows
# Characters per token assumed when a token budget must become a character budget (a
# read_file page); the cut itself is checked in tokens, so dense text is cut shorter.
RESULT_CHARS_PER_TOKEN = 3

# The tool schemas get compact descriptions when the full ones would make the fixed prefix
# more than this share of the window; a prefix above FIXED_PREFIX_UNWORKABLE_RATIO even then
# leaves too little room to work, and the user is told what window to pin.
FIXED_PREFIX_MAX_RATIO = 0.4
FIXED_PREFIX_UNWORKABLE_RATIO = 0.5
# Room kept free in the summarizer's request for framing and chat-template tokens.
SUMMARY_PROMPT_MARGIN_TOKENS = 128

# Iteration budget: user-visible pressure at 50/70/90%, model nudges at 70/90%.
ITERATION_PRESSURE_THRESHOLDS = (0.5, 0.7, 0.9)
ITERATION_WARN_RATIO = 0.7
ITERATION_CRITICAL_RATIO = 0.9

# Work state: the journal is folded back in as a preamble on resume, and is capped per
# conversation (pruned oldest-first). The preamble is a share of the free space, at most
# ~2k tokens (the seed's bound), and never more than keeps the resumed request under the
# warn rung: on a small window it must not push out the recent messages it stands beside.
JOURNAL_PREAMBLE_TOKENS = 2_000
JOURNAL_FREE_SHARE = 0.25
JOURNAL_MAX_ENTRIES = 100

# Compaction reasons, as the headless `compaction` event names them.
REASON_PREFLIGHT = "preflight"
REASON_OVERFLOW = "context_overflow"
REASON_MANUAL = "manual"
REASON_SESSION_BUDGET = "session_budget"
REASON_SHARED_POOL = "shared_pool"
COMPACTION_REASONS = (
    REASON_PREFLIGHT,
    REASON_OVERFLOW,
    REASON_MANUAL,
    REASON_SESSION_BUDGET,
    REASON_SHARED_POOL,
)

# The fixed checkpoint every compaction writes: (level, title) in order.
SUMMARY_SCHEMA: tuple[tuple[int, str], ...] = (
    (2, "Goal"),
    (2, "Constraints & Preferences"),
    (2, "Covered So Far"),
    (2, "Progress"),
    (3, "Done"),
    (3, "In Progress"),
    (3, "Blocked"),
    (2, "Key Decisions"),
    (2, "Next Steps"),
    (2, "Critical Context"),
)
SUMMARY_HEADINGS: tuple[str, ...] = tuple(f"{'#' * lvl} {title}" for lvl, title in SUMMARY_SCHEMA)
COVERED_SECTION = "Covered So Far"
# Sections Brim fills itself and the summarizer is never asked for: the user's own
# first-person statements, verbatim, and where the oldest of them were stored when they
# outgrew their budget (engine/context/stated.py).
STATED_SECTION = "Stated by the User"
STORED_STATEMENTS_SECTION = "Stored Statements"
# Where the files and steps that outgrew the checkpoint's cap were stored (Covered So Far and
# Done entries), so a long pass does not redo them (engine/context/stored_progress.py).
STORED_PROGRESS_SECTION = "Stored Progress"
CHECKPOINT_SCHEMA: tuple[tuple[int, str], ...] = (
    SUMMARY_SCHEMA[0],
    (2, STATED_SECTION),
    (2, STORED_STATEMENTS_SECTION),
    *SUMMARY_SCHEMA[1:3],
    (2, STORED_PROGRESS_SECTION),
    *SUMMARY_SCHEMA[3:],
)
# The user's statements carried by every checkpoint: a share of the summary's own budget
# (which comes from the window); the oldest beyond it go to a stored file.
STATED_SUMMARY_SHARE = 0.6

# Tool names whose calls the progress note and Covered So Far read mechanically.
READ_TOOLS = frozenset({"read_file"})
LOOK_TOOLS = frozenset({"list_directory", "search_files"})
WRITE_TOOLS = frozenset({"write_file", "edit_file"})
COMMAND_TOOLS = frozenset({"run_command"})
RETRIEVE_TOOL = "retrieve_tool_result"
