"""A `<think>…</think>` block left in an answer's content, split off as it streams.

Servers that do not separate a thinking model's reasoning leave it in the content:
llama-server with `--reasoning-format none`, vLLM started without `--reasoning-parser`, the
embedded engine (llama-cpp-python returns the text as the model wrote it). The block is
reasoning only where it opens the answer: at the very start of the stream, after optional
whitespace. A `<think>` further on is text the model wrote, and stays in the answer.

Some templates open the block themselves (the generation prompt ends in `<think>\\n`): the
stream then begins inside it and only `</think>` appears (`opened=True`). A block still
open when the stream ends is reasoning: the output cap was spent thinking.

Tags may be cut anywhere across deltas; whatever the cut, the same reasoning and the same
answer come out. The whitespace around the reasoning (the `\\n` after `<think>`, before
`</think>`) and before the answer (the `\\n\\n` after `</think>`) is the block's framing,
not part of either.
"""

from __future__ import annotations

from typing import Literal

from engine.providers.base import ReasoningDelta, TextDelta

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"

_State = Literal["start", "lead", "thinking", "gap", "answer"]


def _partial_suffix(text: str, tag: str) -> int:
    """The length of the longest end of `text` that is the start of `tag` (0: none)."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


def opens_thinking(prompt: str) -> bool:
    """Whether a rendered prompt leaves the model inside a think block (its generation
    prompt ends with `<think>` and nothing after it but whitespace)."""
    return prompt.rstrip().endswith(OPEN_TAG)


class ThinkSplitter:
    """One stream's content, fed delta by delta: each `feed` gives what is safe to show
    now, as `ReasoningDelta` and `TextDelta` items; `flush` at the end of the stream gives
    what was held back (an unclosed block's last words are reasoning)."""

    def __init__(self, *, opened: bool = False) -> None:
        # start: nothing but whitespace yet (held); lead: whitespace after <think>, before
        # the reasoning's first character; thinking: inside the block; gap: whitespace after
        # </think>; answer: everything else passes through.
        self._state: _State = "lead" if opened else "start"
        self._held = ""

    @property
    def thinking(self) -> bool:
        """Whether the stream is inside the block now (its end not seen yet)."""
        return self._state in ("lead", "thinking")

    def feed(self, text: str) -> list[TextDelta | ReasoningDelta]:
        out: list[TextDelta | ReasoningDelta] = []
        buffer = self._held + text
        self._held = ""
        while buffer:
            buffer = self._step(buffer, out)
        return _joined(out)

    def _step(self, buffer: str, out: list[TextDelta | ReasoningDelta]) -> str:
        """Consume what can be decided of `buffer`; the rest is returned (or held)."""
        if self._state == "answer":
            out.append(TextDelta(buffer))
            return ""
        if self._state == "start":
            stripped = buffer.lstrip()
            if not stripped:
                self._held = buffer
                return ""
            if stripped.startswith(OPEN_TAG):
                self._state = "lead"
                return stripped[len(OPEN_TAG) :]
            if OPEN_TAG.startswith(stripped):
                self._held = buffer  # maybe the tag, cut across deltas
                return ""
            self._state = "answer"
            return buffer
        if self._state in ("lead", "gap"):
            stripped = buffer.lstrip()
            if not stripped:
                return ""
            self._state = "thinking" if self._state == "lead" else "answer"
            return stripped
        # thinking: up to the close tag; trailing whitespace and a cut tag wait
        end = buffer.find(CLOSE_TAG)
        if end >= 0:
            reasoning = buffer[:end].rstrip()
            if reasoning:
                out.append(ReasoningDelta(reasoning))
            self._state = "gap"
            return buffer[end + len(CLOSE_TAG) :]
        keep = _partial_suffix(buffer, CLOSE_TAG)
        body = buffer[: len(buffer) - keep]
        shown = body.rstrip()
        if shown:
            out.append(ReasoningDelta(shown))
        self._held = body[len(shown) :] + buffer[len(buffer) - keep :]
        return ""

    def flush(self) -> list[TextDelta | ReasoningDelta]:
        """The end of the stream: held whitespace or a cut `<think>` before anything else is
        answer text; inside an unclosed block, a cut `</think>` is reasoning."""
        held, self._held = self._held, ""
        if self._state == "start" and held:
            self._state = "answer"
            return [TextDelta(held)]
        if self._state == "thinking":
            shown = held.rstrip()
            return [ReasoningDelta(shown)] if shown else []
        return []


def _joined(items: list[TextDelta | ReasoningDelta]) -> list[TextDelta | ReasoningDelta]:
    """Neighbouring items of one kind as one."""
    out: list[TextDelta | ReasoningDelta] = []
    for item in items:
        if out and type(out[-1]) is type(item):
            out[-1] = type(item)(out[-1].text + item.text)
        else:
            out.append(item)
    return out
