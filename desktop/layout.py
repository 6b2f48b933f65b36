"""The window gives the chat the room: below a width the context rail folds into a toggle,
and below a smaller one the sidebar collapses to a strip of icons, so the chat column keeps
at least CHAT_MIN pixels. A user who opens a folded panel keeps it open until the window is
wide enough to show it anyway; an opened rail takes its room from the sidebar, then narrows
(to RAIL_MIN at least) before the chat gets less than CHAT_MIN. A window placed off its screen
(a geometry saved on a larger one) is brought back onto the screen it opens on. The chat
column and the rail's column are put together here from the widgets the window made (it alone
drives them).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRect, Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QBoxLayout,
    QFrame,
    QHBoxLayout,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

CHAT_MIN = 480  # the chat column's least width, in pixels
# The narrowest an opened folded rail becomes to leave the chat CHAT_MIN: its memory queue's
# header still whole.
RAIL_MIN = 232
STRIP_WIDTH = 44  # a folded panel's strip
SLACK = 40  # the chat column's own margins and the splitter handle


def fold_widths(sidebar: int, rail: int) -> tuple[int, int]:
    """The window widths below which the rail folds, and below which the sidebar collapses."""
    rail_fold = sidebar + rail + CHAT_MIN + SLACK
    sidebar_fold = sidebar + CHAT_MIN + STRIP_WIDTH + SLACK
    return rail_fold, sidebar_fold


def opened_rail_width(window: int, beside: int, rail: int) -> int:
    """The width of a folded rail the user opened: its own, or narrower (down to RAIL_MIN)
    where the window, less what else stands `beside` the chat, would leave the chat less than
    CHAT_MIN."""
    return max(RAIL_MIN, min(rail, window - beside - CHAT_MIN))


def on_screen(window: QRect, screen: QRect) -> QRect:
    """`window` made to fit inside `screen`: no larger than it, and moved inside it."""
    width = min(window.width(), screen.width())
    height = min(window.height(), screen.height())
    x = min(max(window.x(), screen.x()), screen.x() + screen.width() - width)
    y = min(max(window.y(), screen.y()), screen.y() + screen.height() - height)
    return QRect(x, y, width, height)


def chat_column(
    above: list[QWidget],
    transcript: QWidget,
    composer: QWidget,
    send_button: QWidget,
    below: list[QWidget],
) -> QWidget:
    """Banners over the transcript, the composer and its Send button, then the hint row."""
    composer_box = QFrame(objectName="composerBox")
    box = QHBoxLayout(composer_box)
    box.setContentsMargins(8, 6, 6, 6)
    box.addWidget(composer, 1)
    box.addWidget(send_button, 0, Qt.AlignmentFlag.AlignBottom)
    center = QWidget()
    body = QVBoxLayout(center)
    body.setContentsMargins(14, 12, 14, 10)
    body.setSpacing(8)
    for widget in above:
        body.addWidget(widget)
    body.addWidget(transcript, 1)
    body.addWidget(composer_box)
    row = QHBoxLayout()
    row.addWidget(below[0], 1)
    for widget in below[1:]:
        row.addWidget(widget)
    body.addLayout(row)
    return center


def rail_column(rail: QWidget, under: QWidget, width: int) -> QFrame:
    """The context rail, scrolling, with `under` (the review queue) below it."""
    frame = QFrame(objectName="rail")
    layout = QVBoxLayout(frame)
    layout.setContentsMargins(0, 0, 0, 0)
    scroll = QScrollArea(objectName="railScroll")
    scroll.viewport().setObjectName("railViewport")
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    scroll.setWidget(rail)
    layout.addWidget(scroll)
    layout.addWidget(under)
    frame.setFixedWidth(width)
    return frame


class _Strip(QFrame):
    def __init__(self, name: str) -> None:
        super().__init__(objectName=name)
        self.setFixedWidth(STRIP_WIDTH)
        self._box = QVBoxLayout(self)
        self._box.setContentsMargins(4, 10, 4, 10)
        self._box.setSpacing(6)
        self._box.addStretch(1)
        self.hide()

    def button(self, text: str, tip: str, name: str) -> QToolButton:
        button = QToolButton(self, objectName=name)
        button.setText(text)
        button.setToolTip(tip)
        button.setAccessibleName(tip)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        button.setFixedSize(STRIP_WIDTH - 8, STRIP_WIDTH - 8)
        self._box.insertWidget(self._box.count() - 1, button)
        return button


class FittedLayout(QObject):
    """Folds and unfolds the side panels of `window` as its width changes."""

    changed = Signal()

    def __init__(
        self,
        window: QWidget,
        row: QBoxLayout,
        sidebar: QWidget,
        rail: QWidget,
        sidebar_width: int,
        rail_width: int,
    ) -> None:
        super().__init__(window)
        self._window = window
        self._sidebar = sidebar
        self._rail = rail
        self._rail_width = rail_width
        self._rail_fold, self._sidebar_fold = fold_widths(sidebar_width, rail_width)
        self._opened: set[str] = set()  # panels the user opened while they were folded
        self.rail_folded = False
        self.sidebar_collapsed = False

        self.icons = _Strip("sidebarIcons")
        self.show_sidebar = self.icons.button("☰", "Show the sidebar", "showSidebar")
        self.new_button = self.icons.button("+", "New conversation (Ctrl+N)", "iconNew")
        self.edit_button = self.icons.button("✎", "Edit the agent (Ctrl+,)", "iconEdit")
        self.rail_strip = _Strip("railToggle")
        self.rail_toggle = self.rail_strip.button("◨", "Show the context rail", "showRail")
        self.rail_toggle.setCheckable(True)
        row.insertWidget(0, self.icons)
        row.addWidget(self.rail_strip)
        self.show_sidebar.clicked.connect(lambda: self._toggle("sidebar"))
        self.rail_toggle.clicked.connect(lambda: self._toggle("rail"))
        window.installEventFilter(self)

    @property
    def rail_panel(self) -> QWidget:
        return self._rail

    def connect_actions(self, new_conversation: object, edit_agent: object) -> None:
        self.new_button.clicked.connect(new_conversation)
        self.edit_button.clicked.connect(edit_agent)

    def fit(self, width: int | None = None) -> None:
        width = self._window.width() if width is None else width
        if width >= self._rail_fold:
            self._opened.clear()  # wide enough for both: the automatic layout again
        self.rail_folded = width < self._rail_fold
        # A folded rail opened by the user takes its room from the sidebar, not the chat.
        self.sidebar_collapsed = width < self._sidebar_fold or (
            self.rail_folded and "rail" in self._opened
        )
        rail_shown = not self.rail_folded or "rail" in self._opened
        sidebar_shown = not self.sidebar_collapsed or "sidebar" in self._opened
        rail_width = self._rail_width
        if self.rail_folded and rail_shown:
            strips = STRIP_WIDTH * (1 + self.sidebar_collapsed)
            beside = strips + (self._sidebar.width() if sidebar_shown else 0)
            rail_width = opened_rail_width(width, beside, self._rail_width)
        self._rail.setFixedWidth(rail_width)
        # What goes goes first, and the rail shows at its width: a real X window asked for
        # more room than it has grows to hold it.
        panels = (
            (self._sidebar, sidebar_shown),
            (self.icons, self.sidebar_collapsed),
            (self._rail, rail_shown),
            (self.rail_strip, self.rail_folded),
        )
        for panel, shown in sorted(panels, key=lambda item: item[1]):
            panel.setVisible(shown)
        self.rail_toggle.setChecked(rail_shown)
        self.rail_toggle.setToolTip(
            "Hide the context rail" if rail_shown else "Show the context rail"
        )
        self.show_sidebar.setToolTip("Hide the sidebar" if sidebar_shown else "Show the sidebar")
        self.changed.emit()

    def _toggle(self, panel: str) -> None:
        if panel in self._opened:
            self._opened.discard(panel)
        else:
            self._opened.add(panel)
        self.fit()

    def keep_on_screen(self) -> None:
        """A window restored to a place off its screen, or larger than it, is fitted to it."""
        window = self._window
        if window.isMaximized() or window.isFullScreen():
            return
        frame = window.frameGeometry()
        screen = QGuiApplication.screenAt(frame.center()) or window.screen()
        if screen is None:
            return
        area = screen.availableGeometry()
        if area.contains(frame):
            return
        margins = (frame.width() - window.width(), frame.height() - window.height())
        fitted = on_screen(frame, area)
        window.resize(fitted.width() - margins[0], fitted.height() - margins[1])
        window.move(fitted.topLeft())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._window:
            if event.type() == QEvent.Type.Resize:
                self.fit(self._window.width())
            elif event.type() == QEvent.Type.Show:
                self.keep_on_screen()
                self.fit()
        return super().eventFilter(watched, event)
