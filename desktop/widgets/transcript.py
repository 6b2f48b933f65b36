"""The conversation as the user reads it: user and assistant messages, notices, errors, receipts.

One QTextFrame per row. The streaming assistant row grows in place (plain text, appended at
its frame's end); when the turn completes its text is replaced by rendered Markdown. Rows are
also kept as values, so the document can be rebuilt when history arrives after live rows
(start-up notices are emitted before the saved conversation is handed over).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QGuiApplication,
    QTextBlock,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextFormat,
    QTextFrame,
    QTextFrameFormat,
)
from PySide6.QtWidgets import QTextBrowser, QWidget

from desktop import theme
from engine.messages import Message

ROW_GAP = 6  # pixels between rows
CODE_PADDING = 10  # pixels between a code block's tint and its text


@dataclass
class Row:
    """One visible row. `kind`: user | assistant | notice | error | receipt."""

    kind: str
    text: str
    level: str = "info"
    complete: bool = True


class TranscriptView(QTextBrowser):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("transcript")
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.document().setDocumentMargin(14)
        self._rows: list[Row] = []
        self._stream_frame: QTextFrame | None = None
        self._assistant_name = "Assistant"

    # -- what the user sees -----------------------------------------------------------------

    def rows(self) -> list[Row]:
        return list(self._rows)

    @property
    def streaming(self) -> bool:
        return self._stream_frame is not None

    def set_assistant_name(self, name: str) -> None:
        self._assistant_name = name or "Assistant"

    # -- appending --------------------------------------------------------------------------

    def add_user(self, text: str) -> None:
        self._append(Row("user", text))

    def add_notice(self, text: str, level: str = "info") -> None:
        self._append(Row("notice", text, level=level))

    def add_error(self, text: str) -> None:
        self._append(Row("error", text))

    def add_receipt(self, text: str) -> None:
        self._append(Row("receipt", text))

    def append_stream(self, text: str) -> None:
        """Add streamed text to the assistant row being written (opening one if needed)."""
        if not text:
            return
        if self._stream_frame is None:
            self._append(Row("assistant", "", complete=False))
        row = self._rows[self._stream_row_index()]
        row.text += text
        with self._keeping_scroll():
            assert self._stream_frame is not None
            cursor = self._stream_frame.lastCursorPosition()
            cursor.insertText(text, self._body_format())

    def finish_stream(self) -> None:
        """The turn ended: render the assistant row as Markdown and stop growing it."""
        frame = self._stream_frame
        if frame is None:
            return
        row = self._rows[self._stream_row_index()]
        row.complete = True
        self._stream_frame = None
        with self._keeping_scroll():
            cursor = frame.firstCursorPosition()
            cursor.movePosition(QTextCursor.MoveOperation.NextBlock)  # keep the name line
            cursor.setPosition(frame.lastPosition(), QTextCursor.MoveMode.KeepAnchor)
            cursor.removeSelectedText()
            self._insert_markdown(cursor, row.text)

    def set_history(self, messages: list[Message]) -> None:
        """Show the saved conversation above anything already shown live.

        Notices emitted while the session started are also saved in it; each is shown once,
        in its saved place.
        """
        rows = [row for m in messages if (row := _row_for(m)) is not None]
        if not rows:
            return
        saved = {(row.kind, row.text) for row in rows}
        live = [row for row in self._rows if (row.kind, row.text) not in saved]
        self._rows = rows + live
        self._rebuild()

    # -- rendering --------------------------------------------------------------------------

    def _append(self, row: Row) -> None:
        self._rows.append(row)
        with self._keeping_scroll():
            self._render(row)

    def _rebuild(self) -> None:
        self.document().clear()
        self._stream_frame = None
        for row in self._rows:
            self._render(row)
        self.verticalScrollBar().setValue(self.verticalScrollBar().maximum())

    def _render(self, row: Row) -> None:
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        # Qt keeps an empty block between frames; make it a fixed gap, not a line of text.
        gap = 0 if cursor.position() == 0 else ROW_GAP
        cursor.setBlockFormat(_gap_block(gap))
        frame = cursor.insertFrame(self._frame_format(row))
        if row.kind in ("user", "assistant"):
            is_user = row.kind == "user"
            name = "You" if is_user else self._assistant_name
            accent = theme.USER_ACCENT if is_user else theme.ASSISTANT_ACCENT
            cursor.setBlockFormat(_block(bottom=4))
            cursor.insertText(name, _char(accent, bold=True, scale=0.92))
            cursor.insertBlock(_block(), self._body_format())
            if is_user or not row.complete:
                cursor.insertText(row.text, self._body_format())
            else:
                self._insert_markdown(cursor, row.text)
            if row.kind == "assistant" and not row.complete:
                self._stream_frame = frame
        elif row.kind == "notice":
            warning = row.level == "warning"
            mark = "⚠" if warning else "ℹ"
            colour = theme.WARNING_TEXT if warning else theme.MUTED
            cursor.insertText(f"{mark}  {row.text}", _char(colour, scale=0.92))
        elif row.kind == "error":
            cursor.insertText(f"✕  {row.text}", _char(theme.ERROR_TEXT, scale=0.92))
        else:  # receipt
            cursor.setBlockFormat(_block())
            cursor.insertText(row.text, _char(theme.MUTED, scale=0.85))

    def _insert_markdown(self, cursor: QTextCursor, text: str) -> None:
        if not text.strip():
            cursor.insertText("(no text)", _char(theme.MUTED, italic=True))
            return
        start = cursor.position()
        cursor.insertMarkdown(text)
        _style_code_blocks(self.document().findBlock(start), cursor.position())

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
            warning = row.level == "warning"
            fmt.setBackground(QBrush(QColor(theme.WARNING_BG if warning else theme.INFO_BG)))
            fmt.setPadding(6)
        elif row.kind == "error":
            fmt.setBackground(QBrush(QColor(theme.ERROR_BG)))
            fmt.setBorder(1)
            fmt.setBorderBrush(QBrush(QColor(theme.ERROR_BORDER)))
            fmt.setPadding(6)
        else:  # receipt: a quiet line under the answer it belongs to
            fmt.setPadding(0)
            fmt.setTopMargin(0)
            fmt.setLeftMargin(10)
        return fmt

    def _body_format(self) -> QTextCharFormat:
        return _char(theme.TEXT)

    def _stream_row_index(self) -> int:
        for index in range(len(self._rows) - 1, -1, -1):
            if self._rows[index].kind == "assistant" and not self._rows[index].complete:
                return index
        raise LookupError("no assistant row is streaming")

    def _keeping_scroll(self) -> _ScrollKeeper:
        return _ScrollKeeper(self)


class _ScrollKeeper:
    """Follow the bottom while the user is at the bottom; leave them alone if they scrolled up."""

    def __init__(self, view: TranscriptView) -> None:
        self._bar = view.verticalScrollBar()
        self._follow = False

    def __enter__(self) -> None:
        self._follow = self._bar.value() >= self._bar.maximum() - 4

    def __exit__(self, *_: object) -> None:
        if self._follow:
            self._bar.setValue(self._bar.maximum())


def _style_code_blocks(block: QTextBlock, end: int) -> None:
    """Give fenced code a tinted background and a little air (Qt's Markdown gives it none)."""
    previous_was_code = False
    while block.isValid() and block.position() <= end:
        is_code = block.blockFormat().hasProperty(QTextFormat.Property.BlockCodeFence)
        if is_code:
            following = block.next()
            next_is_code = following.isValid() and following.blockFormat().hasProperty(
                QTextFormat.Property.BlockCodeFence
            )
            fmt = QTextBlockFormat()
            fmt.setBackground(QBrush(QColor(theme.CODE_BG)))
            fmt.setTextIndent(CODE_PADDING)
            fmt.setTopMargin(0 if previous_was_code else 4)
            fmt.setBottomMargin(0 if next_is_code else 8)
            QTextCursor(block).mergeBlockFormat(fmt)
        previous_was_code = is_code
        block = block.next()


def _gap_block(height: float) -> QTextBlockFormat:
    fmt = QTextBlockFormat()
    fmt.setLineHeight(height, QTextBlockFormat.LineHeightTypes.FixedHeight.value)
    return fmt


def _row_for(message: Message) -> Row | None:
    if message.is_notice:
        return Row("notice", message.content, level=str(message.meta_value("level", "info")))
    if message.role == "user":
        return Row("user", message.content)
    if message.role == "assistant" and message.content.strip():
        return Row("assistant", message.content)
    return None  # system prompts and tool traffic are not part of the minimal transcript


def _char(
    colour: str, *, bold: bool = False, italic: bool = False, scale: float = 1.0
) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setForeground(QBrush(QColor(colour)))
    if bold:
        fmt.setFontWeight(QFont.Weight.DemiBold)
    if italic:
        fmt.setFontItalic(True)
    if scale != 1.0:
        fmt.setFontPointSize(_base_point_size() * scale)
    return fmt


def _block(*, bottom: float = 0) -> QTextBlockFormat:
    fmt = QTextBlockFormat()
    fmt.setBottomMargin(bottom)
    return fmt


def _base_point_size() -> float:
    size = QGuiApplication.font().pointSizeF()
    return size if size > 0 else 10.0
