"""A thinking model's reasoning in the transcript: a folded "Thinking" block above the answer.

While the model thinks, the block says so and shows the last line it reasoned (the window is
never blank); when the answer begins it folds to one line, "Thought for 4.2 s · 180 tokens",
a link (click, or Tab then Enter) that unfolds the whole reasoning. A conversation opened
again shows it folded, from the saved message. The reasoning is never part of the answer's
text: it is its own row (`kind` "thinking", `text` the reasoning, `title` the folded line).
"""

from __future__ import annotations

from PySide6.QtGui import QTextCursor

from desktop import theme
from desktop.widgets.transcript_format import block, char, link
from desktop.widgets.transcript_rows import Row, thought_label

__all__ = ["fill_thinking", "preview", "thought_label"]

THINKING_LABEL = "Thinking…"
PREVIEW_CHARS = 140  # of the last line reasoned, shown while the model thinks


def preview(text: str) -> str:
    """The last line of reasoning so far, its end kept where it is long."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if len(last) <= PREVIEW_CHARS:
        return last
    tail = last[-(PREVIEW_CHARS - 1) :]
    space = tail.find(" ")  # from a word's start, not the middle of one
    return "…" + (tail[space + 1 :] if 0 <= space < 30 else tail)


def fill_thinking(cursor: QTextCursor, row: Row) -> None:
    """Draw a thinking row: its line (a toggle), then the live preview or, unfolded, all."""
    arrow = "▾" if row.expanded else "▸"
    line = THINKING_LABEL if not row.complete else (row.title or "Thought")
    cursor.insertText(f"{arrow}  {line}", link(row.id, theme.TOOL_TEXT))
    if row.expanded:
        for paragraph in row.text.strip().split("\n"):
            cursor.insertBlock(block(top=2, indent=14), char(theme.MUTED, italic=True, scale=0.92))
            cursor.insertText(paragraph, char(theme.MUTED, italic=True, scale=0.92))
    elif not row.complete and (shown := preview(row.text)):
        cursor.insertBlock(block(top=2, indent=14), char(theme.MUTED, italic=True, scale=0.92))
        cursor.insertText(shown, char(theme.MUTED, italic=True, scale=0.92))
