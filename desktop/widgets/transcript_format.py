"""How the transcript's rows are drawn: the character and block formats, the links a row
carries (a toggle, an action) and a notice's look, shared by desktop/widgets/transcript.py and
the rows it draws with help (desktop/widgets/thinking_block.py)."""

from __future__ import annotations

from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QGuiApplication,
    QTextBlockFormat,
    QTextCharFormat,
)

from desktop import theme
from desktop.widgets.transcript_rows import Row

TOGGLE_SCHEME = "toggle"
MONO_FAMILY = "DejaVu Sans Mono"


def notice_look(row: Row) -> tuple[str, str]:
    if row.marker == "compaction":
        return theme.COMPACT_TEXT, "⇊"
    if row.level == "warning":
        return theme.WARNING_TEXT, "⚠"
    return theme.MUTED, "ℹ"


def notice_background(row: Row) -> str:
    if row.marker == "compaction":
        return theme.COMPACT_BG
    return theme.WARNING_BG if row.level == "warning" else theme.INFO_BG


def anchor(href: str, colour: str) -> QTextCharFormat:
    fmt = char(colour, scale=0.92)
    fmt.setAnchor(True)
    fmt.setAnchorHref(href)
    fmt.setFontUnderline(True)
    return fmt


def link(row_id: int, colour: str, *, mono: bool = False) -> QTextCharFormat:
    fmt = char(colour, scale=0.92)
    fmt.setAnchor(True)
    fmt.setAnchorHref(f"{TOGGLE_SCHEME}:{row_id}")
    if mono:
        fmt.setFontFamilies([MONO_FAMILY, "monospace"])
    return fmt


def gap_block(height: float) -> QTextBlockFormat:
    fmt = QTextBlockFormat()
    fmt.setLineHeight(height, QTextBlockFormat.LineHeightTypes.FixedHeight.value)
    return fmt


def char(
    colour: str, *, bold: bool = False, italic: bool = False, scale: float = 1.0
) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setForeground(QBrush(QColor(colour)))
    if bold:
        fmt.setFontWeight(QFont.Weight.DemiBold)
    if italic:
        fmt.setFontItalic(True)
    if scale != 1.0:
        fmt.setFontPointSize(base_point_size() * scale)
    return fmt


def block(*, bottom: float = 0, top: float = 0, indent: float = 0) -> QTextBlockFormat:
    fmt = QTextBlockFormat()
    fmt.setBottomMargin(bottom)
    fmt.setTopMargin(top)
    if indent:
        fmt.setLeftMargin(indent)
    return fmt


def base_point_size() -> float:
    size = QGuiApplication.font().pointSizeF()
    return size if size > 0 else 10.0
