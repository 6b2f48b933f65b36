"""The conversation as the user reads it: messages, tool calls, notices, errors and receipts.

One QTextFrame per row. The streaming assistant row grows in place as plain text appended at
its frame's end; when the message is complete its text is replaced by rendered Markdown with
highlighted code. Tool calls and checkpoint summaries are collapsible: their header line is a
link that toggles the row, and only that row's frame is rewritten. Rows are also kept as
values (desktop/widgets/transcript_rows.py), so the whole document can be rebuilt (a
conversation opened, history arriving after live start-up notices). A compaction's row has a
Show / Restore link: the window asks the engine what that compaction replaced.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from PySide6.QtCore import QUrl, Signal, Slot
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QKeyEvent,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextFrame,
    QTextFrameFormat,
)
from PySide6.QtWidgets import QTextBrowser, QWidget

from desktop import theme
from desktop.markdown import MarkdownRenderer
from desktop.widgets.follow import EndFollower
from desktop.widgets.thinking_block import fill_thinking, thought_label
from desktop.widgets.transcript_format import (
    MONO_FAMILY,
    TOGGLE_SCHEME,
)
from desktop.widgets.transcript_format import anchor as _anchor
from desktop.widgets.transcript_format import block as _block
from desktop.widgets.transcript_format import char as _char
from desktop.widgets.transcript_format import gap_block as _gap_block
from desktop.widgets.transcript_format import link as _link
from desktop.widgets.transcript_format import notice_background as _notice_background
from desktop.widgets.transcript_format import notice_look as _notice_look
from desktop.widgets.transcript_rows import (
    ACTION_CONTINUE,
    CUT_LABEL,
    Row,
    cut_index,
    describe_call,
    lowered_pin,
    merge_live_rows,
    place_receipts,
    receipt_row,
    rows_for,
    stale_actions,
)
from engine.api import (
    LastRequestEvent,
    Message,
    Receipt,
)

__all__ = [
    "Row",
    "TranscriptView",
    "describe_call",
    "merge_live_rows",
    "place_receipts",
    "receipt_row",
    "rows_for",
]

ROW_GAP = 6  # pixels between rows
COMPACTION_SCHEME = "compaction"  # a compaction row's Show / Restore: compaction:<id>
CONTINUE_SCHEME = "continue"  # a cut answer's Continue: continue:<row id>
PIN_SCHEME = "lowerpin"  # a spill_choice's Lower the pin: lowerpin:<window>
KEEP_SCHEME = "keeppin"  # its Keep: keeppin:<row id>
KEEP_LABEL = "Keep the pin"
CONTINUE_LABEL = "▶ Continue"


class TranscriptView(QTextBrowser):
    toggled = Signal(int)  # a collapsible row was opened or closed (its id)
    compaction_requested = Signal(str)  # a compaction row's Show / Restore (the compaction id)
    continue_requested = Signal()  # a cut answer's Continue: ask for the rest of it
    pin_requested = Signal(int)  # a spill_choice's Lower the pin: the window to pin

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("transcript")
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.document().setDocumentMargin(14)
        self._rows: list[Row] = []
        self.cut_at = 0  # rows above the model's last request (dimmed), 0: none
        self._frames: dict[int, QTextFrame] = {}
        self._ids = itertools.count(1)
        self._stream_frame: QTextFrame | None = None
        self._thinking: Row | None = None  # the thinking block being written
        self._assistant_name = "Assistant"
        self._markdown = MarkdownRenderer()
        self.follower = EndFollower(self)
        self.anchorClicked.connect(self._on_anchor)

    # -- what the user sees -----------------------------------------------------------------

    def rows(self) -> list[Row]:
        return list(self._rows)

    @property
    def streaming(self) -> bool:
        return self._stream_frame is not None

    @property
    def assistant_name(self) -> str:
        return self._assistant_name

    def set_assistant_name(self, name: str) -> None:
        self._assistant_name = name or "Assistant"

    def clear_rows(self) -> None:
        """Another conversation is about to be shown."""
        self._rows = []
        self._thinking = None
        self.cut_at = 0
        self._rebuild()

    # -- appending --------------------------------------------------------------------------

    def add_user(self, text: str, submission: str = "") -> None:
        """The user's row; `submission` is the id of the submission it shows (AcceptedEvent)."""
        self._append(Row("user", text, key=submission))
        for row in stale_actions(self._rows):
            row.action = ""
            self._refill(row)

    def remove_user(self, submission: str) -> bool:
        """Take back the user's row of a submission the engine side refused or dropped
        before sending it (it returns to the composer, not to the record)."""
        for index in range(len(self._rows) - 1, -1, -1):
            row = self._rows[index]
            if submission and row.kind == "user" and row.key == submission:
                del self._rows[index]
                self._rebuild()
                return True
        return False

    def remove_last_user(self, text: str) -> None:
        """Take back the newest row when it is the user's `text` (a message the engine side
        refused before sending it: it returns to the composer, not to the record)."""
        if self._rows and self._rows[-1].kind == "user" and self._rows[-1].text == text:
            self._rows.pop()
            self._rebuild()

    def take_back(self, submission: str, text: str) -> None:
        """The user's row of a submission that was not sent goes, found by its id (by its
        text, when it is the newest row, only for a submission that came without one)."""
        if submission:
            self.remove_user(submission)
        else:
            self.remove_last_user(text)

    def add_notice(
        self, text: str, level: str = "info", marker: str = "", ref: str = "", action: str = ""
    ) -> None:
        self._append(Row("notice", text, level=level, marker=marker, ref=ref, action=action))

    def mark_restored(self, compaction: str) -> None:
        """The compaction's replaced messages were put back: its row says so."""
        for row in self._rows:
            if row.ref == compaction and not row.restored:
                row.restored = True
                self._refill(row)

    def add_error(self, text: str) -> None:
        """An error row; the same error again (a retry that met it again) counts up the row
        already shown instead of stacking copies of it."""
        last = next((r for r in reversed(self._rows) if r.kind != "receipt"), None)
        if last is not None and last.kind == "error" and last.text == text:
            last.repeats += 1
            self._refill(last)
            return
        self._append(Row("error", text))

    def add_receipt(self, text: str) -> None:
        self._append(Row("receipt", text))

    def add_tool_call(self, call_id: str, name: str, arguments: str) -> None:
        title, detail = describe_call(name, arguments)
        self._append(Row("tool", "", title=title, detail=detail, key=call_id))

    def finish_tool(self, call_id: str, preview: str, status: str) -> None:
        """The tool returned: show how it ended, keep what it returned for the expanded row."""
        for row in reversed(self._rows):
            if row.kind == "tool" and row.key == call_id:
                row.text, row.status = preview, status
                self._refill(row)
                return

    def _answer_spill_choice(self, scheme: str, value: str) -> None:
        """Either answer takes the choice's buttons away; Lower the pin asks for it."""
        for row in self._rows:
            window = lowered_pin(row.action)
            if window is None or (scheme == KEEP_SCHEME and str(row.id) != value):
                continue
            if scheme == PIN_SCHEME and str(window) != value:
                continue
            row.action = ""
            self._refill(row)
            if scheme == PIN_SCHEME:
                self.pin_requested.emit(window)
            return

    def toggle(self, row_id: int) -> None:
        for row in self._rows:
            if row.id == row_id and row.kind in ("tool", "summary", "thinking"):
                row.expanded = not row.expanded
                self._refill(row)
                self.toggled.emit(row_id)
                return

    def append_thinking(self, text: str) -> None:
        """Add reasoning to the Thinking block being written (opening one above the answer
        to come); its live line shows the last of it."""
        if not text:
            return
        if self._thinking is None:
            self.finish_stream()  # a model that thinks again midway: a block of its own
            self._thinking = Row("thinking", "", complete=False)
            self._append(self._thinking)
        self._thinking.text += text
        self._refill(self._thinking)

    def end_thinking(self, tokens: int, seconds: float, estimated: bool = True) -> None:
        """The model stopped thinking: its block folds to how long and how much (told again
        with the engine's exact count, only the figures change)."""
        row = self._thinking
        if row is None:
            row = next((r for r in reversed(self._rows) if r.kind == "thinking"), None)
            if row is None or (not estimated and row.status == "exact"):
                return
        else:
            row.complete, row.expanded = True, False
        self._thinking = None
        row.title = thought_label(tokens, seconds, estimated)
        row.status = "" if estimated else "exact"
        self._refill(row)

    def append_stream(self, text: str) -> None:
        """Add streamed text to the assistant row being written (opening one if needed)."""
        if not text:
            return
        if self._stream_frame is None:
            self.finish_stream()  # no end was told: the answer ends the thinking
            self._append(Row("assistant", "", complete=False))
        row = self._rows[self._stream_row_index()]
        row.text += text
        assert self._stream_frame is not None
        cursor = self._stream_frame.lastCursorPosition()
        cursor.insertText(text, _char(theme.TEXT))
        self.follower.content_added()

    def finish_stream(self) -> None:
        """The message is complete: render it as Markdown and stop growing it (a Thinking
        block the turn left open, stopped or failed, stops saying it thinks)."""
        if self._thinking is not None:
            self._thinking.complete = True
            self._refill(self._thinking)
            self._thinking = None
        if self._stream_frame is None:
            return
        row = self._rows[self._stream_row_index()]
        row.complete = True
        self._stream_frame = None
        self._refill(row)

    def drop_answer_tail(self, chars: int) -> None:
        """Cut `chars` characters off the end of the last answer shown: the engine left
        them out of what it saved (a loop's repeats), so the window shows what a reopened
        conversation will."""
        self.finish_stream()
        row = next((r for r in reversed(self._rows) if r.kind == "assistant"), None)
        if row is None or chars <= 0:
            return
        row.text = row.text[: max(0, len(row.text) - chars)]
        self._refill(row)

    def set_history(self, messages: list[Message], receipts: Sequence[Receipt] = ()) -> None:
        """Show the saved conversation above anything already shown live, each saved
        receipt under the answer it belongs to.

        Notices emitted while the session started are also saved in it; each is shown once,
        in its saved place."""
        rows = rows_for(messages, receipts)
        if not rows:
            return
        self._rows = merge_live_rows(rows, [r for r in self._rows if r.kind != "cut"])
        for row in stale_actions(self._rows):
            row.action = ""
        self._rebuild()

    def mark_cut(self, event: LastRequestEvent) -> None:
        """Dim what the model's last request no longer carries, under a thin line where it
        starts (drawn again only when the cut moves)."""
        rows = [r for r in self._rows if r.kind != "cut"]
        index = cut_index(rows, event.first_message, event.first_role, event.user_turns_from)
        if index == self.cut_at and (len(rows) < len(self._rows)) == (index > 0):
            return
        for position, row in enumerate(rows):
            row.dimmed = position < index
        if index > 0:
            rows.insert(index, Row("cut", CUT_LABEL))
        self._rows, self.cut_at = rows, index
        self._rebuild()

    def scroll_to_message(self, message_id: str, quote: str = "") -> bool:
        """Bring a user message into view with the quoted words selected (a memory
        suggestion's link). The row is found by its message ID, else by the quote; False
        when this conversation shows neither."""
        rows = [r for r in self._rows if r.kind == "user"]
        row = next((r for r in rows if message_id and r.message_id == message_id), None)
        needle = " ".join(quote.split())
        if row is None and needle:
            row = next((r for r in reversed(rows) if needle in " ".join(r.text.split())), None)
        frame = self._frames.get(row.id) if row is not None else None
        if frame is None:
            return False
        cursor = QTextCursor(self.document())
        cursor.setPosition(frame.firstPosition())
        first_line = quote.strip().split("\n", 1)[0]
        if first_line:
            found = self.document().find(first_line, frame.firstPosition())
            if not found.isNull() and found.position() <= frame.lastPosition():
                cursor = found
        self.follower.stop_following()
        self.setTextCursor(cursor)
        top = self.document().documentLayout().frameBoundingRect(frame).top()
        self.verticalScrollBar().setValue(max(0, int(top) - 12))
        return True

    # -- rendering --------------------------------------------------------------------------

    def _append(self, row: Row) -> None:
        self._rows.append(row)
        self._render(row)
        self.follower.content_added()

    def _rebuild(self) -> None:
        self.document().clear()
        self._frames.clear()
        self._stream_frame = None
        for row in self._rows:
            self._render(row)
        self.follower.follow_end()

    def _render(self, row: Row) -> None:
        if not row.id:
            row.id = next(self._ids)
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        # Qt keeps an empty block between frames; make it a fixed gap, not a line of text.
        gap = 0 if cursor.position() == 0 else ROW_GAP
        cursor.setBlockFormat(_gap_block(gap))
        frame = cursor.insertFrame(self._frame_format(row))
        self._frames[row.id] = frame
        self._fill(cursor, row)
        if row.dimmed:  # what the model no longer sees reads quieter
            shown = frame.firstCursorPosition()
            shown.setPosition(frame.lastPosition(), QTextCursor.MoveMode.KeepAnchor)
            quiet = QTextCharFormat()
            quiet.setForeground(QBrush(QColor(theme.MUTED)))
            shown.mergeCharFormat(quiet)
        if row.kind == "assistant" and not row.complete:
            self._stream_frame = frame

    def _refill(self, row: Row) -> None:
        """Rewrite one row's frame in place (a finished stream, a toggle, a tool result)."""
        frame = self._frames.get(row.id)
        if frame is None:
            return
        cursor = frame.firstCursorPosition()
        cursor.setPosition(frame.lastPosition(), QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        cursor.setBlockFormat(QTextBlockFormat())
        cursor.setCharFormat(QTextCharFormat())
        self._fill(cursor, row)
        if self.follower.following:
            self.follower.follow_end()

    def _fill(self, cursor: QTextCursor, row: Row) -> None:
        if row.kind in ("user", "assistant"):
            is_user = row.kind == "user"
            name = "You" if is_user else self._assistant_name
            accent = theme.USER_ACCENT if is_user else theme.ASSISTANT_ACCENT
            cursor.setBlockFormat(_block(bottom=4))
            cursor.insertText(name, _char(accent, bold=True, scale=0.92))
            cursor.insertBlock(_block(), _char(theme.TEXT))
            if is_user or not row.complete:
                cursor.insertText(row.text, _char(theme.TEXT))
            else:
                self._insert_markdown(cursor, row.text)
        elif row.kind == "notice":
            colour, mark = _notice_look(row)
            lines = row.text.split("\n")
            cursor.insertText(f"{mark}  {lines[0]}", _char(colour, scale=0.92))
            for line in lines[1:]:
                cursor.insertBlock(_block(), _char(colour, scale=0.92))
                cursor.insertText(f"    {line}", _char(colour, scale=0.92))
            if row.ref:
                action = "restored · show what it replaced" if row.restored else "Show / Restore"
                cursor.insertBlock(_block(top=2), _char(colour, scale=0.92))
                cursor.insertText("    ", _char(colour, scale=0.92))
                cursor.insertText(f"↺ {action}", _anchor(f"{COMPACTION_SCHEME}:{row.ref}", colour))
            if (window := lowered_pin(row.action)) is not None:
                cursor.insertBlock(_block(top=4), _char(colour, scale=0.92))
                cursor.insertText("    ", _char(colour, scale=0.92))
                link = _anchor(f"{PIN_SCHEME}:{window}", theme.USER_ACCENT)
                link.setFontWeight(QFont.Weight.DemiBold)
                cursor.insertText(f"▼ Lower the pin to {window:,}", link)
                cursor.insertText("    ", _char(colour, scale=0.92))
                cursor.insertText(KEEP_LABEL, _anchor(f"{KEEP_SCHEME}:{row.id}", colour))
            if row.action == ACTION_CONTINUE:
                cursor.insertBlock(_block(top=4), _char(colour, scale=0.92))
                cursor.insertText("    ", _char(colour, scale=0.92))
                link = _anchor(f"{CONTINUE_SCHEME}:{row.id}", theme.USER_ACCENT)
                link.setFontWeight(QFont.Weight.DemiBold)
                cursor.insertText(CONTINUE_LABEL, link)
        elif row.kind == "error":
            again = f"   (×{row.repeats})" if row.repeats > 1 else ""
            cursor.insertText(f"✕  {row.text}{again}", _char(theme.ERROR_TEXT, scale=0.92))
        elif row.kind == "tool":
            self._fill_tool(cursor, row)
        elif row.kind == "summary":
            self._fill_summary(cursor, row)
        elif row.kind == "thinking":
            fill_thinking(cursor, row)
        elif row.kind == "cut":
            cursor.setBlockFormat(_block())
            cursor.insertText(f"─────  {row.text}  ─────", _char(theme.COMPACT_TEXT, scale=0.85))
        else:  # receipt
            cursor.setBlockFormat(_block())
            cursor.insertText(row.text, _char(theme.MUTED, scale=0.85))

    def _fill_tool(self, cursor: QTextCursor, row: Row) -> None:
        arrow = "▾" if row.expanded else "▸"
        status = row.status or "running…"
        link = _link(row.id, theme.TOOL_TEXT)
        cursor.insertText(f"{arrow}  ⚙ ", link)
        cursor.insertText(row.title, _link(row.id, theme.TOOL_TEXT, mono=True))
        error = row.status.startswith("error")
        cursor.insertText(
            f"   → {status}", _link(row.id, theme.ERROR_TEXT if error else theme.MUTED)
        )
        if not row.expanded:
            return
        if row.detail:
            cursor.insertBlock(_block(top=6), _char(theme.MUTED, scale=0.85))
            cursor.insertText("arguments", _char(theme.MUTED, scale=0.85, bold=True))
            self._insert_mono(cursor, row.detail)
        cursor.insertBlock(_block(top=6), _char(theme.MUTED, scale=0.85))
        cursor.insertText("result", _char(theme.MUTED, scale=0.85, bold=True))
        self._insert_mono(cursor, row.text or "(nothing yet)")

    def _fill_summary(self, cursor: QTextCursor, row: Row) -> None:
        arrow = "▾" if row.expanded else "▸"
        cursor.insertText(
            f"{arrow}  Checkpoint summary written by compaction", _link(row.id, theme.COMPACT_TEXT)
        )
        if row.expanded:
            cursor.insertBlock(_block(top=6), _char(theme.TEXT))
            self._insert_markdown(cursor, row.text)

    def _insert_mono(self, cursor: QTextCursor, text: str) -> None:
        fmt = _char(theme.TEXT, scale=0.88)
        fmt.setFontFamilies([MONO_FAMILY, "monospace"])
        for line in text.split("\n"):
            cursor.insertBlock(_block(indent=12), fmt)
            cursor.insertText(line, fmt)

    def _insert_markdown(self, cursor: QTextCursor, text: str) -> None:
        if not text.strip():
            cursor.insertText("(no text)", _char(theme.MUTED, italic=True))
            return
        cursor.insertHtml(self._markdown.to_html(text))

    def _frame_format(self, row: Row) -> QTextFrameFormat:
        fmt = QTextFrameFormat()
        fmt.setPadding(10)
        fmt.setTopMargin(4)
        fmt.setBottomMargin(4)
        fmt.setBorderStyle(QTextFrameFormat.BorderStyle.BorderStyle_Solid)
        fmt.setBorder(0)
        if row.kind == "user":
            fmt.setBackground(QBrush(QColor(theme.USER_BG)))
            fmt.setBorder(1)
            fmt.setBorderBrush(QBrush(QColor(theme.USER_BORDER)))
            fmt.setLeftMargin(48)
        elif row.kind == "assistant":
            fmt.setRightMargin(48)
        elif row.kind == "notice":
            fmt.setBackground(QBrush(QColor(_notice_background(row))))
            fmt.setPadding(6)
        elif row.kind == "error":
            fmt.setBackground(QBrush(QColor(theme.ERROR_BG)))
            fmt.setBorder(1)
            fmt.setBorderBrush(QBrush(QColor(theme.ERROR_BORDER)))
            fmt.setPadding(6)
        elif row.kind in ("tool", "summary", "thinking"):
            fmt.setBackground(QBrush(QColor(theme.TOOL_BG)))
            fmt.setBorder(1)
            fmt.setBorderBrush(QBrush(QColor(theme.BORDER)))
            fmt.setPadding(6)
            fmt.setRightMargin(48)
        else:  # receipt: a quiet line under the answer it belongs to
            fmt.setPadding(0)
            fmt.setTopMargin(0)
            fmt.setLeftMargin(10)
        return fmt

    def _stream_row_index(self) -> int:
        for index in range(len(self._rows) - 1, -1, -1):
            if self._rows[index].kind == "assistant" and not self._rows[index].complete:
                return index
        raise LookupError("no assistant row is streaming")

    def keyPressEvent(self, event: QKeyEvent) -> None:
        super().keyPressEvent(event)
        self.follower.reader_moved()  # End, Page Up, Ctrl+Home: the reader's own move

    @Slot(QUrl)
    def _on_anchor(self, url: QUrl) -> None:
        if url.scheme() == COMPACTION_SCHEME:
            self.compaction_requested.emit(url.path() or url.host())
        elif url.scheme() == CONTINUE_SCHEME:
            self.continue_requested.emit()
        elif url.scheme() in (PIN_SCHEME, KEEP_SCHEME):
            self._answer_spill_choice(url.scheme(), url.path() or url.host())
        elif url.scheme() == TOGGLE_SCHEME:
            try:
                self.toggle(int(url.path() or url.host()))
            except ValueError:
                return
