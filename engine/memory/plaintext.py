"""Memory text is plain text: no terminal escapes, no invisible or reordering characters.

A statement that keeps ESC can rewrite what `brim memory review` shows ("User prefers dark
mode" on screen while the entry also says where pushes go), a bidi override reorders what
a dialog shows, and a zero-width character hides words from a reader but not from the
model. So every entrance refuses such characters (`check_plain`: the tools, the extractor,
the queue), text read from older files or hand edits is cleaned before it reaches the
system prompt or the model (`strip_controls`), and what a person reads shows them instead
of obeying them (`visible`: ESC as ␛, others as <U+202E>).
"""

from __future__ import annotations

import json
import re
from typing import Any

from engine.memory.errors import MemoryRefused

# C0 controls except tab and newline, DEL, C1 controls; the bidi embeddings, overrides and
# isolates, the directional marks; zero-width spaces and joiners, word joiner, invisible
# operators, the byte-order mark; the interlinear annotation and tag characters.
_CONTROL_CLASS = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f"
    "\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U000e0000-\U000e007f"
)
_CONTROL = re.compile(f"[{_CONTROL_CLASS}]")
# What `visible` shows instead of obeying: the above, save a carriage return that ends a
# line before its newline (a line break, as `control_characters` reads multi-line text).
_SHOWN = re.compile(f"(?!\r\n)[{_CONTROL_CLASS}]")
# What `check_plain` refuses in a one-line field: the above, and tab or newline too.
_CONTROL_OR_BREAK = re.compile(f"[{_CONTROL_CLASS}\t\n]")


class ControlCharacters(MemoryRefused):
    """The text holds terminal escapes or invisible characters; memory keeps plain text."""


def control_characters(text: str, *, multiline: bool = True) -> list[str]:
    """The distinct control characters in `text`, in order of first appearance (in
    multi-line text a carriage return before a newline is a line break, not a control)."""
    if multiline:
        return list(dict.fromkeys(_CONTROL.findall(text.replace("\r\n", "\n"))))
    return list(dict.fromkeys(_CONTROL_OR_BREAK.findall(text)))


def name_of(char: str) -> str:
    """How a refusal names a character: ESC, U+202E."""
    if char == "\x1b":
        return "ESC"
    return f"U+{ord(char):04X}"


def check_plain(field: str, text: str | None, *, multiline: bool = False) -> None:
    """`ControlCharacters` when `text` holds any; nothing is written then."""
    found = control_characters(text or "", multiline=multiline)
    if found:
        names = ", ".join(name_of(c) for c in found[:4])
        raise ControlCharacters(
            f"the {field} holds control or invisible characters ({names}); memory keeps plain "
            "text only, so nothing was saved"
        )


def strip_controls(text: str) -> str:
    """`text` without control or invisible characters (tab and newline kept): what reaches
    a system prompt or a model from a file written before this check, or by hand."""
    return _CONTROL.sub("", text)


def _shown(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟, ESC as ␛
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"<U+{code:04X}>"


def visible(text: str) -> str:
    """`text` with each control or invisible character shown instead of obeyed: what a
    terminal or a dialog prints. A Windows line break (CR LF) stays a line break."""
    return _SHOWN.sub(_shown, text)


def safe_json(value: Any) -> str:
    """JSON for a terminal: like `json.dumps(ensure_ascii=False)`, with the characters
    JSON leaves raw (C1 controls, bidi and zero-width characters) written as escapes."""
    text = json.dumps(value, ensure_ascii=False)
    return _CONTROL.sub(lambda m: json.dumps(m.group(0))[1:-1], text)
