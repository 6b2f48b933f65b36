"""What a template writes around each tool call and tool result, for counts Brim estimates.

Every template wraps a tool call in tags and JSON beyond its name and arguments, and a tool
result in a turn or a block of its own: counted with cl100k on the templates' text, Qwen 2.5
spends about 17 tokens on a call and 10 on a result in a run of results, Llama 3.1 about 13
and 5, Mistral nearly twice Qwen's (each call and result repeats a call id). A request's
count by estimate is its text over the ratio, plus this framing, plus a per-request
overhead. The ratio and the overhead are learned from every answer, but the first request
(a system prompt, tool schemas, the user's message) holds no call and no result, and the
request after an answer of 300 calls holds 600 of them. So the framing of tool calls and
results starts from a prior on the high side and is learned on its own, from what the
engine reports for the messages a request adds to the one before it:

    reported(now) - reported(before) = what the added messages cost - what the removed cost

(an agent's next request is the one before it plus the answer and its results; the pressure
nudge joined to a user message may change, which is why removed messages are allowed, as
long as they hold no call and no result). What the added messages' text costs is estimated
at the ratio learned so far, the rest is framing, and its ratio to the prior is the scale,
kept within bounds; an observation of many calls and results moves it further than one of
two.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from engine.messages import Message
from engine.tokens.calibration import MESSAGE_OVERHEAD, tool_framing

# The learned scale of the prior: a template may frame calls and results with a quarter of
# the prior (Llama 3.1's results) to three times it (a call id in every wrapper).
SCALE_BOUNDS = (0.25, 3.0)
# Calls and results a request must add to teach the scale (fewer measure mostly the text).
MIN_UNITS_TO_LEARN = 2
# How much one observation moves the scale grows with the calls and results it measured:
# units / (units + this). Two move it a fifth of the way, an answer of 300 nearly all.
UNITS_FOR_HALF_WEIGHT = 8
# Messages a request may have dropped from the one before and still teach (the nudge).
MAX_REMOVED = 2


def _units(message: Message) -> int:
    """The tool calls and the tool result a message holds."""
    return len(message.tool_calls) + (1 if message.role == "tool" else 0)


@dataclass
class ToolFraming:
    """The learned framing of tool calls and results for one model (estimated counts only)."""

    scale: float = 1.0
    observations: int = 0
    _last: tuple[list[Message], str, float] | None = field(default=None, repr=False)

    def framing(self, message: Message) -> int:
        """One message's framing: its role tags, and its calls' and result's wrappers."""
        return MESSAGE_OVERHEAD + round(self.scale * tool_framing(message))

    def learn(
        self,
        messages: Sequence[Message],
        schemas: str,
        reported: float,
        text: Callable[[Message], float],
    ) -> None:
        """Learn from a request the engine counted at `reported`, against the request before
        it (`schemas` names its tool schemas: only requests with the same ones compare);
        `text` is the estimate of one message's text tokens, at the ratio known now."""
        last, self._last = self._last, (list(messages), schemas, reported)
        if last is None or last[1] != schemas:
            return
        before, _, reported_before = last
        common = 0
        for a, b in zip(before, messages, strict=False):
            if a.content_hash != b.content_hash:
                break
            common += 1
        added, removed = list(messages[common:]), before[common:]
        if len(removed) > MAX_REMOVED or any(tool_framing(m) for m in removed):
            return
        prior = sum(tool_framing(m) for m in added)
        units = sum(_units(m) for m in added)
        if units < MIN_UNITS_TO_LEARN or prior <= 0:
            return
        removed_cost = sum(text(m) + MESSAGE_OVERHEAD for m in removed)
        plain = sum(text(m) + MESSAGE_OVERHEAD for m in added)
        observed = (reported - reported_before + removed_cost - plain) / prior
        weight = units / (units + UNITS_FOR_HALF_WEIGHT)
        low, high = SCALE_BOUNDS
        self.scale = min(high, max(low, (1 - weight) * self.scale + weight * observed))
        self.observations += 1
