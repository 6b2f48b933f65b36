"""What the counter starts from and how it learns from the engine's reports.

The framing every message costs, the characters-per-token ratio seeded by model family, and
the smoothing that moves each learned value a little towards every new observation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.messages import Message

MESSAGE_OVERHEAD = 4  # role tags and separators around every message
TOOL_RESULT_OVERHEAD = 10  # tool results are framed more heavily, and there are many of them
# Each tool call's wrapper beyond its name and arguments: a prior on the high side, which
# `framing.ToolFraming` scales to what the engine's reports show (every template wraps a call;
# the first request, which calibration sees first, holds none).
TOOL_CALL_OVERHEAD = 16
SMOOTHING = 0.7  # weight of what was known before each new observation
RATIO_BOUNDS = (2.0, 6.0)  # chars per token no real tokenizer leaves
DEFAULT_RATIO = 3.5  # unknown family: on the low side, so Brim compacts early rather than late
SEED_REQUEST_OVERHEAD = 3  # the generation prompt every template appends ("<|im_start|>assistant")
# A ratio learned from a few characters would mostly measure the framing.
MIN_CHARS_TO_LEARN_RATIO = 256
# For what the engine has not counted yet (a summary the ladder just wrote): engine tokens
# per character, learned from every exact count, within these bounds; and, for a bare text
# (a tool result being sized), engine tokens per o200k token, learned from a sample of exact
# counts when o200k is first needed (it takes a second to load, so only then).
O200K_SCALE_BOUNDS = (0.5, 2.5)
MIN_CHARS_TO_LEARN_SCALE = 64
MIN_UNITS_TO_LEARN_SCALE = 16
SCALE_SAMPLES = 24

# Characters per token by model family, for models Brim cannot tokenize itself. Checked in
# order: the first pattern found in the lower-cased model name wins.
FAMILY_RATIOS: tuple[tuple[str, float], ...] = (
    (r"claude", 3.5),
    (r"gemini", 4.0),
    (r"gemma", 3.9),  # 256K vocabulary
    (r"llama-?2|codellama|vicuna", 3.3),  # 32K vocabulary
    (r"llama", 3.6),  # Llama 3: 128K vocabulary
    (r"qwen|qwq", 3.7),
    (r"deepseek", 3.6),
    (r"mistral|mixtral|codestral|devstral|magistral", 3.5),
    (r"phi", 3.5),
    (r"smollm", 3.4),
)


def family_ratio(model: str) -> float:
    """The seed chars-per-token ratio for a model family."""
    name = model.lower()
    for pattern, ratio in FAMILY_RATIOS:
        if re.search(pattern, name):
            return ratio
    return DEFAULT_RATIO


def message_text(message: Message) -> list[str]:
    """The parts of a message that reach the model as text (its role is in the overhead)."""
    parts = [message.content]
    for call in message.tool_calls:
        parts.append(call.name)
        parts.append(call.arguments)
    if message.name:
        parts.append(message.name)
    return parts


def tool_framing(message: Message) -> int:
    """The prior's tokens for the wrappers of a message's tool calls and of a tool result."""
    calls = TOOL_CALL_OVERHEAD * len(message.tool_calls)
    return calls + (TOOL_RESULT_OVERHEAD if message.role == "tool" else 0)


def heuristic_framing(message: Message) -> int:
    """The framing an estimate starts from for one message: its role tags, and the prior
    for its tool calls' and result's wrappers."""
    return MESSAGE_OVERHEAD + tool_framing(message)


def smooth(old: float, observed: float) -> float:
    return SMOOTHING * old + (1.0 - SMOOTHING) * observed


def clamp_ratio(ratio: float) -> float:
    low, high = RATIO_BOUNDS
    return min(high, max(low, ratio))


@dataclass
class RequestOverhead:
    """The per-request framing beyond the messages, learned for requests with and without
    tools (a template's tool preamble is often a hundred tokens or more)."""

    without_tools: float
    with_tools: float

    def get(self, has_tools: bool) -> float:
        return self.with_tools if has_tools else self.without_tools

    def learn(self, has_tools: bool, gap: float) -> None:
        if has_tools:
            self.with_tools = smooth(self.with_tools, gap)
        else:
            self.without_tools = smooth(self.without_tools, gap)
