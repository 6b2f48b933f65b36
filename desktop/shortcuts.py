"""The main window's keyboard shortcuts beyond the composer's own keys (Enter, Esc, Up).

Window-wide, so they work wherever the focus is: Ctrl+N a new conversation, Ctrl+L back to
the composer, F2 renames the open conversation, Ctrl+, edits the agent, Ctrl+Q quits, and Esc
stops a running answer (the composer's own Esc does the same where it has the focus; the stop
is enabled only while a turn runs, so Esc keeps its ordinary meaning elsewhere). Each does
exactly what its button or command does.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget

NEW_CONVERSATION = "Ctrl+N"
FOCUS_COMPOSER = "Ctrl+L"
RENAME_CONVERSATION = "F2"
EDIT_AGENT = "Ctrl+,"
QUIT = "Ctrl+Q"
STOP_ANSWER = "Esc"


def add_shortcut(window: QWidget, text: str, keys: str, slot: Callable[[], object]) -> QAction:
    """One window-wide shortcut, as an action the window owns."""
    action = QAction(text, window)
    action.setShortcut(QKeySequence(keys))
    action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    action.triggered.connect(slot)
    window.addAction(action)
    return action
