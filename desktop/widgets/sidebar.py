"""The sidebar: agents and their conversations; new, open, rename, delete with undo; new,
duplicate and delete agents (with undo).

It shows the engine's `Listing` (engine/library.py) and says what the user asked for; the
window turns each request into an intent on the engine thread. A broken agent file is listed
with its error instead of its conversations, so the user sees which file to fix.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QPoint, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QBrush, QColor, QFont, QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop import theme
from desktop.widgets.activity_marks import WORDS, ActivityMarks
from engine.api import (
    Listing,
)

ROLE = Qt.ItemDataRole.UserRole
TITLE_ROLE = Qt.ItemDataRole.UserRole + 1  # the title as stored, to tell a real rename
ACTIVITY_ROLE = Qt.ItemDataRole.UserRole + 2  # "working", "unseen" or "" (its icon says it)
UNDO_SECONDS = 10
UNTITLED = "New conversation"


class _Tree(QTreeWidget):
    delete_pressed = Signal(object)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Delete and self.currentItem() is not None:
            self.delete_pressed.emit(self.currentItem())
            event.accept()
            return
        super().keyPressEvent(event)


class Sidebar(QFrame):
    open_requested = Signal(str, object)  # agent name, conversation id (None: a new one)
    rename_requested = Signal(str, str)  # conversation id, new title
    delete_requested = Signal(str, str)  # conversation id, its title (for the undo bar)
    restore_requested = Signal(str)  # conversation id
    folder_requested = Signal()
    edit_agent_requested = Signal(str)  # agent name: open the agent editor
    new_agent_requested = Signal()  # make a new agent file and open it in the editor
    duplicate_agent_requested = Signal(str)  # agent name
    delete_agent_requested = Signal(str)  # agent name (its file goes to the trash)
    restore_agent_requested = Signal(str)  # agent name: the delete's Undo

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sidebar")
        self._listing: Listing | None = None
        self._current: str | None = None
        self._current_agent: str | None = None
        self._filling = False
        self._undo_id: str | None = None
        self._undo_kind = "conversation"  # or "agent": what the undo bar brings back
        self.marks = ActivityMarks(self)  # which conversations work, which finished unseen
        self.marks.changed.connect(self._paint_marks)

        title = QLabel("AGENTS", objectName="sectionTitle")
        self.new_button = QPushButton("+  New conversation", objectName="flat")
        self.new_button.setToolTip(
            "Start a new conversation with the agent selected here (Ctrl+N; /new: this one's)"
        )
        # One sign beside the AGENTS title and Edit, so all three fit the narrowest sidebar.
        self.new_agent_button = QPushButton("+", objectName="flat")
        self.new_agent_button.setAccessibleName("New agent")
        self.new_agent_button.setToolTip("Make a new agent and open it in the editor (/agent new)")
        self.new_agent_button.clicked.connect(self.new_agent_requested)
        self.new_button.clicked.connect(self.new_for_current)
        self.edit_button = QPushButton("Edit…", objectName="flat")
        self.edit_button.setToolTip(
            "Engine, model, window pin and ceiling of the current agent (Ctrl+, or /agent)"
        )
        self.edit_button.clicked.connect(self.edit_current)
        self.tree = _Tree(objectName="agents")
        self.tree.setHeaderHidden(True)
        self.tree.setIndentation(14)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._menu)
        self.tree.itemActivated.connect(self._activated)
        self.tree.itemClicked.connect(self._activated)
        self.tree.itemChanged.connect(self._changed)
        self._waiting_listing: tuple[Listing, str | None] | None = None
        self.tree.itemDelegate().closeEditor.connect(self._editor_closed)
        self.tree.delete_pressed.connect(self._delete_item)

        self.undo_bar = QFrame(objectName="undoBar")
        self.undo_label = QLabel("", objectName="undoText")
        self.undo_button = QPushButton("Undo", objectName="undoButton")
        self.undo_button.clicked.connect(self._undo)
        undo = QHBoxLayout(self.undo_bar)
        undo.setContentsMargins(10, 6, 6, 6)
        undo.addWidget(self.undo_label, 1)
        undo.addWidget(self.undo_button)
        self.undo_bar.hide()
        self._undo_timer = QTimer(self)
        self._undo_timer.setSingleShot(True)
        self._undo_timer.timeout.connect(self.undo_bar.hide)

        self.folder_button = QPushButton("Folder: none (file tools off)", objectName="flat")
        self.folder_button.setToolTip(
            "The folder new conversations work in; without one the agent has no file tools"
        )
        self.folder_button.clicked.connect(self.folder_requested)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 12, 10, 10)
        layout.setSpacing(8)
        heading = QHBoxLayout()
        heading.addWidget(title)
        heading.addStretch(1)
        heading.addWidget(self.new_agent_button)
        heading.addWidget(self.edit_button)
        layout.addLayout(heading)
        layout.addWidget(self.new_button)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.undo_bar)
        layout.addWidget(self.folder_button)

    # -- what it shows ---------------------------------------------------------------------

    def set_listing(self, listing: Listing, current: str | None = None) -> None:
        if self.tree.state() == QAbstractItemView.State.EditingState:
            # The user is typing a new title: rebuilding the list now would throw the edit
            # away. The newest listing waits until the editor closes.
            self._waiting_listing = (listing, current)
            return
        self._waiting_listing = None
        self._listing = listing
        if current is not None:
            self._current = current
        self._filling = True
        self.tree.clear()
        bold = QFont(self.font())
        bold.setWeight(QFont.Weight.DemiBold)
        for entry in listing.agents:
            item = QTreeWidgetItem([entry.name])
            item.setData(0, ROLE, ("agent", entry.name, entry.usable))
            item.setFont(0, bold)
            # Selectable, so "+ New conversation" can start one for the agent picked here.
            item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
            if not entry.usable:
                item.setText(0, f"⚠ {entry.name}")
                item.setForeground(0, QBrush(QColor(theme.ERROR_TEXT)))
                item.setToolTip(0, entry.error or "")
                line = entry.problem or (entry.error or "").splitlines()[0]
                problem = QTreeWidgetItem([line])
                problem.setToolTip(0, entry.error or "")
                problem.setForeground(0, QBrush(QColor(theme.ERROR_TEXT)))
                problem.setData(0, ROLE, ("problem", entry.name, False))
                problem.setFlags(Qt.ItemFlag.ItemIsEnabled)
                item.addChild(problem)
            for info in listing.conversations.get(entry.name, ()):
                child = QTreeWidgetItem([info.title or UNTITLED])
                child.setData(0, ROLE, ("conversation", info.id, entry.usable))
                child.setData(0, TITLE_ROLE, info.title or UNTITLED)
                child.setToolTip(
                    0,
                    f"{info.title or UNTITLED}\n{info.message_count} messages · updated "
                    f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(info.updated))}",
                )
                flags = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
                if entry.usable:
                    flags |= Qt.ItemFlag.ItemIsEditable
                child.setFlags(flags)
                item.addChild(child)
            self.tree.addTopLevelItem(item)
            item.setExpanded(True)
        self._filling = False
        self._mark_current()
        self._paint_marks()

    @Slot(str, str)
    def set_activity(self, conversation_id: str, activity: str) -> None:
        """Mark a conversation as working (its answer is being written) or finished unseen;
        "" takes the mark away."""
        self.marks.set(conversation_id, activity)
        self._paint_marks()

    def activity_of(self, conversation_id: str) -> str:
        item = self.item_for(conversation_id)
        return str(item.data(0, ACTIVITY_ROLE) or "") if item is not None else ""

    def _paint_marks(self) -> None:
        self._filling = True  # an icon change emits itemChanged too; it is no rename
        try:
            for index in range(self.tree.topLevelItemCount()):
                agent = self.tree.topLevelItem(index)
                for i in range(agent.childCount()):
                    child = agent.child(i)
                    kind, key, _ = child.data(0, ROLE)
                    if kind != "conversation":
                        continue
                    mark = self.marks.marks.get(key, "")
                    if child.data(0, ACTIVITY_ROLE) != mark or child.icon(0).isNull():
                        child.setData(0, ACTIVITY_ROLE, mark)
                        child.setStatusTip(0, WORDS.get(mark, ""))
                        child.setIcon(0, self.marks.icon(key))
                    elif mark == "working":  # the arc's next frame
                        child.setIcon(0, self.marks.icon(key))
        finally:
            self._filling = False

    def set_current(self, agent: str, conversation_id: str) -> None:
        self._current_agent = agent
        self._current = conversation_id
        self._mark_current()

    def set_folder(self, folder: str | None) -> None:
        if folder:
            name = folder.rstrip("/").rsplit("/", 1)[-1] or folder
            self.folder_button.setText(f"Folder: {name}")
            self.folder_button.setToolTip(f"New conversations work in {folder}")
        else:
            self.folder_button.setText("Folder: none (file tools off)")

    def conversation_titles(self, agent: str) -> list[str]:
        for index in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(index)
            if item.data(0, ROLE)[1] == agent:
                return [
                    item.child(i).text(0)
                    for i in range(item.childCount())
                    if item.child(i).data(0, ROLE)[0] == "conversation"
                ]
        return []

    def item_for(self, conversation_id: str) -> QTreeWidgetItem | None:
        for index in range(self.tree.topLevelItemCount()):
            agent = self.tree.topLevelItem(index)
            for i in range(agent.childCount()):
                child = agent.child(i)
                data = child.data(0, ROLE)
                if data[0] == "conversation" and data[1] == conversation_id:
                    return child
        return None

    def agent_of(self, item: QTreeWidgetItem) -> str:
        parent = item.parent() or item
        return str(parent.data(0, ROLE)[1])

    def show_undo(self, conversation_id: str, title: str) -> None:
        self._undo_id, self._undo_kind = conversation_id, "conversation"
        self.undo_label.setText(f"Deleted “{title or UNTITLED}”")
        self.undo_bar.show()
        self._undo_timer.start(UNDO_SECONDS * 1000)

    def show_agent_undo(self, name: str) -> None:
        """An agent's file went to the trash: Undo puts it back."""
        self._undo_id, self._undo_kind = name, "agent"
        self.undo_label.setText(f"Deleted agent “{name}”")
        self.undo_bar.show()
        self._undo_timer.start(UNDO_SECONDS * 1000)

    # -- requests --------------------------------------------------------------------------

    def rename(self, conversation_id: str, title: str) -> None:
        item = self.item_for(conversation_id)
        if item is not None and title.strip():
            item.setText(0, title.strip())  # itemChanged asks for the rename

    def delete(self, conversation_id: str) -> None:
        item = self.item_for(conversation_id)
        if item is not None:
            self._delete_item(item)

    def _mark_current(self) -> None:
        if self._current is None:
            return
        item = self.item_for(self._current)
        bold = QFont(self.font())
        # A font change emits itemChanged too; it must not read as the user renaming.
        self._filling = True
        try:
            for index in range(self.tree.topLevelItemCount()):
                agent = self.tree.topLevelItem(index)
                for i in range(agent.childCount()):
                    agent.child(i).setFont(0, bold if agent.child(i) is item else self.font())
            if item is not None:
                self.tree.setCurrentItem(item)
        finally:
            self._filling = False

    @Slot(QTreeWidgetItem, int)
    def _activated(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        kind, key, usable = item.data(0, ROLE)
        if kind == "conversation" and usable and key != self._current:
            self.open_requested.emit(self.agent_of(item), key)

    @Slot()
    def _editor_closed(self) -> None:
        if self._waiting_listing is not None:  # after the edit's own rename is asked for
            QTimer.singleShot(0, self._show_waiting_listing)

    def _show_waiting_listing(self) -> None:
        waiting, self._waiting_listing = self._waiting_listing, None
        if waiting is not None:
            self.set_listing(*waiting)

    @Slot(QTreeWidgetItem, int)
    def _changed(self, item: QTreeWidgetItem, _column: int) -> None:
        if self._filling:
            return
        kind, key, _ = item.data(0, ROLE)
        title = item.text(0).strip()
        if kind != "conversation" or not title or title == UNTITLED:
            return
        if title == item.data(0, TITLE_ROLE):
            return  # a change of look (font, selection), not of the title
        item.setData(0, TITLE_ROLE, title)
        # A listing that waited for this edit predates the rename; the rename's own refresh
        # follows, so showing the waiting one would flash the old title back.
        self._waiting_listing = None
        self.rename_requested.emit(key, title)

    @Slot(object)
    def _delete_item(self, item: QTreeWidgetItem) -> None:
        kind, key, _ = item.data(0, ROLE)
        if kind != "conversation":
            return
        title = item.text(0)
        parent = item.parent()
        if parent is not None:
            parent.removeChild(item)
        self.delete_requested.emit(key, title)
        self.show_undo(key, title)

    @Slot()
    def _undo(self) -> None:
        if self._undo_id is not None and self._undo_kind == "agent":
            self.restore_agent_requested.emit(self._undo_id)
        elif self._undo_id is not None:
            self.restore_requested.emit(self._undo_id)
        self._undo_id = None
        self.undo_bar.hide()
        self._undo_timer.stop()

    @Slot()
    def rename_current(self) -> None:
        """Edit the open conversation's title in place (F2); Enter keeps it, Esc drops it."""
        item = self.item_for(self._current) if self._current else None
        if item is None or not item.flags() & Qt.ItemFlag.ItemIsEditable:
            return
        self.tree.scrollToItem(item)
        self.tree.editItem(item, 0)

    def selected_agent(self) -> str | None:
        """The agent picked in the list (its row or one of its conversations), when it loads;
        else the open conversation's agent, else the first agent that loads."""
        item = self.tree.currentItem()
        if item is not None and item.isSelected():
            name = self.agent_of(item)
            entry = self._listing.agent(name) if self._listing is not None else None
            if entry is not None and entry.usable:
                return name
        agent = self._current_agent
        if agent is None and self._listing is not None:
            agent = next((a.name for a in self._listing.agents if a.usable), None)
        return agent

    @Slot()
    def new_for_current(self) -> None:
        """The "+ New conversation" button: one with the agent selected in the list."""
        agent = self.selected_agent()
        if agent is not None:
            self.open_requested.emit(agent, None)

    @Slot()
    def edit_current(self) -> None:
        agent = self._current_agent
        if agent is None and self._listing is not None:
            agent = next((a.name for a in self._listing.agents if a.usable), None)
        if agent is not None:
            self.edit_agent_requested.emit(agent)

    @Slot(QPoint)
    def _menu(self, point: QPoint) -> None:
        item = self.tree.itemAt(point)
        menu = QMenu(self)
        if item is None:
            menu.addAction("New agent…", self.new_agent_requested.emit)
            menu.exec(self.tree.viewport().mapToGlobal(point))
            return
        kind, key, usable = item.data(0, ROLE)
        if kind == "agent" and usable:
            menu.addAction("New conversation", lambda: self.open_requested.emit(key, None))
            menu.addAction("Edit agent…", lambda: self.edit_agent_requested.emit(key))
            menu.addAction("Duplicate agent", lambda: self.duplicate_agent_requested.emit(key))
        if kind in ("agent", "problem"):
            entry = self._listing.agent(key) if self._listing is not None else None
            if entry is not None and entry.path is not None:  # a file, not a name left by chats
                menu.addAction("Delete agent", lambda: self.delete_agent_requested.emit(key))
            menu.addSeparator()
            menu.addAction("New agent…", self.new_agent_requested.emit)
        elif kind == "conversation":
            if usable:
                menu.addAction("Open", lambda: self.open_requested.emit(self.agent_of(item), key))
                menu.addAction("Rename", lambda: self.tree.editItem(item, 0))
            menu.addAction("Delete", lambda: self._delete_item(item))
        if not menu.isEmpty():
            menu.exec(self.tree.viewport().mapToGlobal(point))
