"""Tool calls that a local model writes as text, separated from the text it streams.

llama-cpp-python's chat handlers render tools into the prompt but do not parse calls out of
the answer. Models whose templates render tools (Qwen, Hermes, SmolLM3, ...) answer with
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks; this filter holds those
blocks back from the streamed text and hands them over as calls when the answer ends.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

OPEN = "<tool_call>"
CLOSE = "</tool_call>"


def parse_tool_call(body: str) -> tuple[str, str] | None:
    """(name, arguments as JSON text) from a block's body, or None if it is not a call."""
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        return data["name"], arguments
    return data["name"], json.dumps(arguments, ensure_ascii=False)


@dataclass
class ToolCallText:
    """Feed streamed text in; get back the part that is safe to show now."""

    calls: list[tuple[str, str]] = field(default_factory=list)
    _pending: str = ""  # text that may be the start of OPEN, or an unfinished block
    _inside: bool = False

    def feed(self, text: str) -> str:
        self._pending += text
        shown: list[str] = []
        while self._pending:
            if self._inside:
                end = self._pending.find(CLOSE)
                if end < 0:
                    break
                body = self._pending[:end]
                self._pending = self._pending[end + len(CLOSE) :]
                self._inside = False
                call = parse_tool_call(body.strip())
                if call is None:
                    shown.append(OPEN + body + CLOSE)
                else:
                    self.calls.append(call)
                continue
            start = self._pending.find(OPEN)
            if start >= 0:
                shown.append(self._pending[:start])
                self._pending = self._pending[start + len(OPEN) :]
                self._inside = True
                continue
            keep = _partial_suffix(self._pending, OPEN)
            shown.append(self._pending[: len(self._pending) - keep])
            self._pending = self._pending[len(self._pending) - keep :]
            break
        return "".join(shown)

    def finish(self) -> str:
        """The text still held back when the answer ends (an unclosed block stays text,
        unless its body is already a complete call)."""
        rest, self._pending = self._pending, ""
        if not self._inside:
            return rest
        self._inside = False
        call = parse_tool_call(rest.strip())
        if call is None:
            return OPEN + rest
        self.calls.append(call)
        return ""


def _partial_suffix(text: str, marker: str) -> int:
    """Length of the longest end of `text` that is a proper start of `marker`."""
    for n in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:n]):
            return n
    return 0
