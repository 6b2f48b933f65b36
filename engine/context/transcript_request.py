"""The summary request's transcript form: the messages being removed, rendered as fenced
material after the summarizer's own system prompt, fitted to the prompt budget.

Compaction uses it where it cannot replay the conversation the engine caches (another
summarizer model, nothing sent yet, a replay whose answer has no room): tool-result
excerpts are shortened first, then every message, then the oldest messages are left out,
and the prompt says how many.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.context.constants import SUMMARY_HEADINGS
from engine.context.history import CountMessage
from engine.context.replay import fence
from engine.context.summarizer import SUMMARIZER_SYSTEM, SummaryRequest
from engine.messages import Message

if TYPE_CHECKING:
    from engine.context.compaction import CompactionPlan

# Tool-result excerpts in the summarizer's transcript shrink through these caps (chars)
# until the prompt fits the summarizer's window; then every message is capped at the last.
TRANSCRIPT_CAPS: tuple[int | None, ...] = (None, 4_000, 1_500, 600, 250)


def _cut(text: str, cap: int | None) -> str:
    if cap is None or len(text) <= cap:
        return text
    head = cap * 2 // 3
    tail = cap - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[… {omitted} characters omitted …]\n{text[-tail:]}"


def render_transcript_message(
    msg: Message, tool_cap: int | None, text_cap: int | None = None
) -> str:
    if msg.role == "tool":
        label = f"[tool result: {msg.name or 'tool'}, call {msg.tool_call_id}]"
        return f"{label}\n{_cut(msg.content, tool_cap)}"
    parts = [f"[{msg.role}]"]
    if msg.content.strip():
        parts.append(_cut(msg.content, text_cap))
    for call in msg.tool_calls:
        parts.append(f"[calls {call.name} {_cut(call.arguments, 500)}, call {call.id}]")
    return "\n".join(parts)


def build_summary_request(
    plan: CompactionPlan,
    *,
    count_message: CountMessage,
    max_tokens: int,
    prompt_budget: int,
    work_state: str | None = None,
    system_text: str | None = None,
    closing: str = "Write the checkpoint now.",
) -> SummaryRequest:
    """The summarizer's prompt, fitted to `prompt_budget` tokens: tool-result excerpts are
    shortened first, then every message, then the oldest messages are left out (and the
    prompt says how many)."""
    words = max(100, int(max_tokens * 0.6))
    if system_text is None:
        system_text = SUMMARIZER_SYSTEM.format(headings="\n".join(SUMMARY_HEADINGS), words=words)
    intro: list[str] = []
    if plan.prior_checkpoints:
        prior = "\n\n".join(plan.prior_checkpoints)
        intro.append(
            "The previous checkpoint (merge it into the new one; its Covered So Far "
            "entries are carried over as they are):\n" + fence("PREVIOUS CHECKPOINT", prior)
        )
    if work_state and work_state.strip():
        intro.append(
            "The recorded work state (do not restate it; cover what the transcript adds):\n"
            + fence("WORK STATE", work_state)
        )

    def assemble(pieces: list[str], omitted: int) -> str:
        body = "\n\n".join(pieces)
        if omitted:
            body = f"[{omitted} older messages left out: they did not fit]\n\n{body}"
        return "\n\n".join(
            [
                *intro,
                "The transcript of the messages being removed:\n" + fence("TRANSCRIPT", body),
                closing,
            ]
        )

    def cost(text: str) -> int:
        return count_message(Message(role="user", content=text))

    frame = cost(system_text) + cost(assemble([], 0))
    room = prompt_budget - frame

    def newest(cap: int | None, text_cap: int | None) -> tuple[list[str], int, bool]:
        """The newest messages rendered at `cap` that fit the room (at least one), how
        many older ones are left out, and whether all fit. Rendered newest first, so a
        history of 20,000 messages costs what fits, not 20,000 renderings per cap."""
        kept: list[str] = []
        total = 0
        for message in reversed(plan.middle):
            piece = render_transcript_message(message, cap, text_cap)
            size = cost(piece)
            if kept and total + size > room:
                break
            kept.append(piece)
            total += size
        kept.reverse()
        omitted = len(plan.middle) - len(kept)
        return kept, omitted, omitted == 0 and total <= room

    pieces: list[str] = []
    omitted = 0
    for level, cap in enumerate(TRANSCRIPT_CAPS):
        text_cap = cap if level == len(TRANSCRIPT_CAPS) - 1 else None
        pieces, omitted, fits = newest(cap, text_cap)
        if fits:
            break

    return SummaryRequest(
        messages=[
            Message(role="system", content=system_text),
            Message(role="user", content=assemble(pieces, omitted)),
        ],
        max_tokens=max_tokens,
    )
