"""The review queue beside the conversation: the memory suggestions waiting for the person.

A collapsible panel under the context rail. Its header always says how many wait; opened, it
lists each one (kind, scope, the proposed text, the user's quoted sentence) and offers the
review dialog and the memory browser. It shows what it is given and decides nothing: the
window's memory desk feeds it whenever the queue changes (an engine event, a turn's end, or
the queue file changing on disk).
"""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QObject, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop import theme
from desktop.memory_view import flat, kind_label, proposed_text, whose_words
from engine.api import (
    Suggestion,
)

MAX_SHOWN = 30  # the rest are counted, not listed; the dialog shows them all
LIST_HEIGHT = 220  # the most the list takes; the context rail above keeps the rest
MIN_LIST_HEIGHT = 64  # about one suggestion: less than that and the list is no use

STYLE = theme.style_sheet("review_queue")


def item_html(suggestion: Suggestion, scope: str) -> str:
    """One suggestion as the panel lists it: kind and scope, the text, the quote."""
    head = f"{kind_label(suggestion).upper()}  ·  {scope}"
    parts = [
        f'<span style="color:{theme.MUTED}; font-size:small;">{html.escape(head)}</span>',
        html.escape(flat(proposed_text(suggestion), 220)),
    ]
    if suggestion.quote:
        quote = html.escape(flat(suggestion.quote, 160))
        parts.append(f'<span style="color:{theme.TOOL_TEXT};"><i>“{quote}”</i></span>')
    elif whose_words(suggestion):
        words = html.escape(whose_words(suggestion))
        parts.append(f'<span style="color:{theme.MUTED}; font-size:small;">{words}</span>')
    return "<br>".join(parts)


class ReviewQueuePanel(QFrame):
    review_requested = Signal()
    browse_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("reviewQueue")
        self.setStyleSheet(STYLE)
        # Never taller than its contents: the context rail above takes the rest.
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self._count = 0
        self._texts: list[str] = []
        self._fit: tuple[QWidget, QWidget] | None = None  # the rail's frame and the rail

        self.toggle = QToolButton(objectName="reviewQueueToggle")
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setCheckable(True)
        self.toggle.setChecked(True)
        self.toggle.setArrowType(Qt.ArrowType.DownArrow)
        self.toggle.setText("Memory suggestions")
        self.toggle.setCursor(Qt.CursorShape.PointingHandCursor)
        self.toggle.toggled.connect(self._on_toggled)
        self.count = QLabel("0", objectName="reviewQueueCount")

        self.list_widget = QWidget(objectName="reviewQueueList")
        self.list_layout = QVBoxLayout(self.list_widget)
        self.list_layout.setContentsMargins(0, 0, 4, 0)
        self.list_layout.setSpacing(6)
        self.list_layout.addStretch(1)
        self.scroll = QScrollArea(objectName="reviewQueueScroll")
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setWidget(self.list_widget)
        self.scroll.setMaximumHeight(LIST_HEIGHT)
        self.empty = QLabel("None waiting.", objectName="reviewQueueEmpty")
        self.empty.setWordWrap(True)

        self.review_button = QPushButton("Review…", objectName="flat")
        self.review_button.setToolTip("Accept or reject the waiting suggestions (/memory review)")
        self.browse_button = QPushButton("Browse memory", objectName="flat")
        self.browse_button.setToolTip("Scopes, entries and their receipts (/memory)")
        self.review_button.clicked.connect(self.review_requested)
        self.browse_button.clicked.connect(self.browse_requested)

        self.body = QWidget()
        body = QVBoxLayout(self.body)
        body.setContentsMargins(0, 4, 0, 0)
        body.setSpacing(6)
        body.addWidget(self.empty)
        body.addWidget(self.scroll)
        buttons = QHBoxLayout()
        buttons.addWidget(self.review_button)
        buttons.addWidget(self.browse_button)
        buttons.addStretch(1)
        body.addLayout(buttons)

        header = QHBoxLayout()
        header.setSpacing(0)  # the toggle's own padding parts it from the count
        header.addWidget(self.toggle)
        header.addWidget(self.count)
        header.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 8, 14, 10)
        layout.setSpacing(2)
        layout.addLayout(header)
        layout.addWidget(self.body)
        self.set_suggestions([], {})
        self.set_collapsed(True)  # nothing waiting yet

    # -- what it shows ----------------------------------------------------------------------

    @property
    def waiting(self) -> int:
        return self._count

    @property
    def collapsed(self) -> bool:
        return not self.toggle.isChecked()

    def set_collapsed(self, collapsed: bool) -> None:
        self.toggle.setChecked(not collapsed)

    def item_texts(self) -> list[str]:
        """The listed suggestions as plain text (what a reader sees, for tests)."""
        return list(self._texts)

    def set_suggestions(self, items: list[Suggestion], scopes: dict[str, str]) -> None:
        """Show these waiting suggestions; `scopes` maps a scope key to its label."""
        while self.list_layout.count() > 1:
            taken = self.list_layout.takeAt(0)
            widget = taken.widget() if taken is not None else None
            if widget is not None:
                widget.deleteLater()
        if bool(items) != bool(self._count):
            # Nothing waiting folds the panel to its header line, so the rail keeps the
            # column; the first suggestion opens it again.
            self.set_collapsed(not items)
        self._count = len(items)
        self._texts = []
        for suggestion in items[:MAX_SHOWN]:
            scope = scopes.get(suggestion.scope, suggestion.scope)
            label = QLabel(item_html(suggestion, scope), objectName="reviewQueueItem")
            label.setTextFormat(Qt.TextFormat.RichText)
            label.setWordWrap(True)
            self.list_layout.insertWidget(self.list_layout.count() - 1, label)
            plain = [kind_label(suggestion), scope, proposed_text(suggestion)]
            if suggestion.quote:
                plain.append(f"“{flat(suggestion.quote)}”")
            elif whose_words(suggestion):
                plain.append(whose_words(suggestion))
            self._texts.append("  ·  ".join(plain))
        if len(items) > MAX_SHOWN:
            more = QLabel(f"and {len(items) - MAX_SHOWN} more…", objectName="reviewQueueEmpty")
            self.list_layout.insertWidget(self.list_layout.count() - 1, more)
        self.count.setText(str(len(items)))
        self.count.setProperty("empty", not items)
        self.count.style().unpolish(self.count)
        self.count.style().polish(self.count)
        self.empty.setVisible(not items)
        self.scroll.setVisible(bool(items))
        self.review_button.setEnabled(bool(items))

    def fit_list(self, spare: int) -> None:
        """Give the list only what `spare` pixels leave after the panel's own header and
        buttons, so the context rail above never has to scroll to make room for it."""
        margins = self.layout().contentsMargins()
        chrome = (
            margins.top()
            + margins.bottom()
            + self.toggle.sizeHint().height()
            + self.review_button.sizeHint().height()
            + 16  # the spacing between header, list and buttons
        )
        self.scroll.setMaximumHeight(max(MIN_LIST_HEIGHT, min(LIST_HEIGHT, spare - chrome)))

    def fit_under(self, frame: QWidget, rail: QWidget) -> None:
        """Keep the list fitted to what `frame` leaves under `rail`: again whenever the
        frame is resized or the rail grows a section."""
        self._fit = (frame, rail)
        frame.installEventFilter(self)
        rail.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        fit = self._fit
        if fit is not None and (
            (watched is fit[0] and event.type() == QEvent.Type.Resize)
            or (watched is fit[1] and event.type() == QEvent.Type.LayoutRequest)
        ):
            frame, rail = fit
            self.fit_list(frame.height() - rail.sizeHint().height() - 16)  # the scroll frame
        return super().eventFilter(watched, event)

    @Slot(bool)
    def _on_toggled(self, expanded: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow)
        self.body.setVisible(expanded)
