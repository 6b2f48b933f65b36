"""The memory browser: every scope and its entries, each entry's file, and why it was shown.

Left, the scopes (global, each project, each agent) with their entries; right, the chosen
entry: its kind and origin, its text as the file holds it, and three actions: open the file
in the person's editor, forget it (after a confirmation: the file is deleted and its quoted
sentences revoked, so it is not suggested again), and Explain (the entry's most recent
receipts: which requests carried it). The memory desk calls `refresh` when files under the
memory root change on disk, so an edit made elsewhere shows here without a restart. Reading
and forgetting run on the engine thread.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt, QUrl, Signal, Slot
from PySide6.QtGui import QDesktopServices, QFontDatabase, QKeyEvent
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop import theme
from desktop.memory_view import Runner, flat, when
from engine.api import (
    Explanation,
    MemoryEntry,
    MemoryService,
    Scope,
    ScopeUnreadable,
    visible,
)

PATH_ROLE = Qt.ItemDataRole.UserRole
NO_RECEIPTS = "No receipts yet: no request has carried this entry since it was last changed."

STYLE = theme.style_sheet("memory_browser")


@dataclass(frozen=True)
class ScopeListing:
    scope: Scope
    entries: list[MemoryEntry] = field(default_factory=list)
    problem: str = ""  # why the scope could not be read (a linked folder, permissions)


def load_memory(service: MemoryService) -> list[ScopeListing]:
    """Every scope and its entries, read from disk now (runs on the engine thread)."""
    out = []
    for scope in service.all_scopes():
        try:
            out.append(ScopeListing(scope, service.store.read_scope(scope)))
        except ScopeUnreadable as exc:
            out.append(ScopeListing(scope, [], str(exc)))
    return out


def ask_to_forget(parent: QWidget, entry: MemoryEntry, answer: Callable[[bool], None]) -> None:
    """The confirmation before a forget, without blocking: `answer(True)` on Forget."""
    box = QMessageBox(parent)
    box.setObjectName("forgetConfirmation")
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle("Forget this memory?")
    box.setText(f"Forget {entry.canonical}?")
    box.setInformativeText(
        "Its file is deleted and the sentences it quotes are revoked, so Brim will not "
        "suggest them again. This cannot be undone."
    )
    forget = box.addButton("Forget", QMessageBox.ButtonRole.DestructiveRole)
    keep = box.addButton("Keep", QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(keep)
    box.setEscapeButton(keep)

    def done(_code: int) -> None:
        answer(box.clickedButton() is forget)
        box.deleteLater()

    box.finished.connect(done)
    box.open()


class MemoryBrowser(QDialog):
    """Scopes and entries. `forgotten` carries the canonical path of an entry forgotten here."""

    forgotten = Signal(str)

    def __init__(
        self,
        service: MemoryService,
        run: Runner,
        parent: QWidget | None = None,
        *,
        open_url: Callable[[QUrl], object] = QDesktopServices.openUrl,
    ) -> None:
        super().__init__(parent)
        self.service = service
        self._run = run
        self.open_url = open_url  # the system opener (a test may replace it)
        self._entries: dict[str, MemoryEntry] = {}
        self._scopes: dict[str, Scope] = {}
        self._selected = ""  # a canonical path, or a scope key
        self._loading = False
        self._again = False
        self.loads = 0  # finished loads (tests wait on it)
        self.setObjectName("memoryBrowser")
        self.setWindowTitle("Memory")
        self.setStyleSheet(STYLE)
        self.resize(900, 600)

        self.tree = QTreeWidget(objectName="memoryTree")
        self.tree.setHeaderHidden(True)
        self.tree.setColumnCount(1)
        self.tree.currentItemChanged.connect(self._on_current)

        self.title = QLabel("Choose an entry", objectName="browserTitle")
        self.title.setWordWrap(True)
        self.meta = QLabel("", objectName="browserMuted")
        self.meta.setWordWrap(True)
        self.meta.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text = QPlainTextEdit(objectName="browserText")
        self.text.setReadOnly(True)
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.text.setFont(mono)  # the file as it is, header lines and quotes included
        self.receipts = QLabel("", objectName="browserReceipts")
        self.receipts.setTextFormat(Qt.TextFormat.RichText)
        self.receipts.setWordWrap(True)
        self.receipts.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.receipts.hide()
        self.status = QLabel("", objectName="browserStatus")
        self.status.setWordWrap(True)

        self.open_button = QPushButton("Open file", objectName="flat")
        self.forget_button = QPushButton("Forget…", objectName="flat")
        self.explain_button = QPushButton("Explain", objectName="flat")
        self.explain_button.setToolTip("The most recent requests that carried this entry")
        self.close_button = QPushButton("Close", objectName="flat")
        for button in (self.open_button, self.forget_button, self.explain_button):
            button.setAutoDefault(False)
        self.close_button.setAutoDefault(False)
        self.open_button.clicked.connect(self.open_selected)
        self.forget_button.clicked.connect(self.forget_selected)
        self.explain_button.clicked.connect(self.explain_selected)
        self.close_button.clicked.connect(self.close)
        self.tree.installEventFilter(self)  # Delete on an entry: forget it (after asking)

        detail = QWidget()
        right = QVBoxLayout(detail)
        right.setContentsMargins(8, 0, 0, 0)
        right.addWidget(self.title)
        right.addWidget(self.meta)
        right.addWidget(self.text, 1)
        actions = QHBoxLayout()
        actions.addWidget(self.open_button)
        actions.addWidget(self.explain_button)
        actions.addStretch(1)
        actions.addWidget(self.forget_button)
        right.addLayout(actions)
        right.addWidget(self.receipts)

        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.tree)
        split.addWidget(detail)
        split.setSizes([320, 580])
        split.setChildrenCollapsible(False)
        bottom = QHBoxLayout()
        bottom.addWidget(self.status, 1)
        bottom.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 12, 14, 12)
        layout.addWidget(split, 1)
        layout.addLayout(bottom)
        self._show_selection()

    # -- loading ----------------------------------------------------------------------------

    @Slot()
    def refresh(self) -> None:
        """Read every scope again (a change on disk, a forget); the selection is kept."""
        if self._loading:
            self._again = True  # one more read once this one lands
            return
        self._loading = True
        service = self.service
        if not self._run(lambda: load_memory(service), self._loaded, self._load_failed):
            self._loading = False
            self._say("The engine has stopped; memory could not be read.", error=True)

    def _loaded(self, listings: list[ScopeListing]) -> None:
        self._loading = False
        self.loads += 1
        self._fill(listings)
        if self._again:
            self._again = False
            self.refresh()

    def _load_failed(self, message: str) -> None:
        self._loading = False
        self._say(f"Memory could not be read: {message}", error=True)

    def _fill(self, listings: list[ScopeListing]) -> None:
        keep = self._selected
        self.tree.blockSignals(True)
        self.tree.clear()
        self._entries = {}
        self._scopes = {}
        chosen: QTreeWidgetItem | None = None
        for listing in listings:
            scope = listing.scope
            self._scopes[scope.key] = scope
            count = len(listing.entries)
            label = f"{scope.label}  ({count})" if not listing.problem else f"{scope.label}  (!)"
            top = QTreeWidgetItem([label])
            top.setData(0, PATH_ROLE, scope.key)
            top.setToolTip(0, listing.problem or str(scope.folder))
            self.tree.addTopLevelItem(top)
            if scope.key == keep:
                chosen = top
            for entry in listing.entries:
                self._entries[entry.canonical] = entry
                first = flat(entry.first_line or entry.subject, 70)
                child = QTreeWidgetItem([f"{entry.subject}  —  {first}"])
                child.setData(0, PATH_ROLE, entry.canonical)
                child.setToolTip(0, f"{entry.canonical} ({entry.kind}, {entry.fields.origin})")
                top.addChild(child)
                if entry.canonical == keep:
                    chosen = child
            top.setExpanded(True)
        if chosen is not None:
            self.tree.setCurrentItem(chosen)
        else:
            self._selected = ""  # nothing chosen, or it is gone (forgotten, deleted on disk)
        self.tree.blockSignals(False)
        self._show_selection()

    # -- the chosen entry -------------------------------------------------------------------

    def selected_entry(self) -> MemoryEntry | None:
        return self._entries.get(self._selected)

    def entry_paths(self) -> list[str]:
        """The canonical paths listed now, in order (for tests)."""
        return list(self._entries)

    def select(self, canonical: str) -> bool:
        """Choose an entry (or a scope key) in the tree; False when it is not listed."""
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            if top.data(0, PATH_ROLE) == canonical:
                self.tree.setCurrentItem(top)
                return True
            for j in range(top.childCount()):
                if top.child(j).data(0, PATH_ROLE) == canonical:
                    self.tree.setCurrentItem(top.child(j))
                    return True
        return False

    @Slot(QTreeWidgetItem, QTreeWidgetItem)
    def _on_current(self, item: QTreeWidgetItem | None, _previous: object) -> None:
        self._selected = str(item.data(0, PATH_ROLE)) if item is not None else ""
        self.receipts.hide()
        self._say("")
        self._show_selection()

    def _show_selection(self) -> None:
        entry = self.selected_entry()
        scope = self._scopes.get(self._selected)
        self.open_button.setEnabled(entry is not None or scope is not None)
        self.forget_button.setEnabled(entry is not None)
        self.explain_button.setEnabled(entry is not None)
        if entry is not None:
            self.title.setText(visible(entry.first_line) or entry.subject)
            self.meta.setText(
                f"{entry.canonical}  ·  {entry.kind}  ·  origin {entry.fields.origin}"
                + (f"  ·  from {entry.fields.source}" if entry.fields.source else "")
            )
            shown = visible(entry.text)  # a hand edit's escapes are shown, not obeyed
            if self.text.toPlainText() != shown:
                self.text.setPlainText(shown)
            self.open_button.setText("Open file")
        elif scope is not None:
            self.title.setText(scope.label)
            self.meta.setText(str(scope.folder))
            self.text.setPlainText("")
            self.open_button.setText("Open folder")
        else:
            self.title.setText("Choose an entry")
            self.meta.setText(f"Memory lives in {self.service.root}")
            self.text.setPlainText("")

    def _say(self, text: str, *, error: bool = False) -> None:
        self.status.setText(text)
        self.status.setProperty("state", "error" if error else "")
        self.status.style().unpolish(self.status)
        self.status.style().polish(self.status)

    # -- actions ----------------------------------------------------------------------------

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            watched is self.tree
            and event.type() == QEvent.Type.KeyPress
            and isinstance(event, QKeyEvent)
            and event.key() == Qt.Key.Key_Delete
        ):
            self.forget_selected()
            return True
        return super().eventFilter(watched, event)

    @Slot()
    def open_selected(self) -> None:
        entry = self.selected_entry()
        scope = self._scopes.get(self._selected)
        target: Path | None = entry.path if entry is not None else None
        if target is None and scope is not None:
            scope.folder.mkdir(parents=True, exist_ok=True)
            target = scope.folder
        if target is not None:
            self.open_url(QUrl.fromLocalFile(str(target)))

    @Slot()
    def forget_selected(self) -> None:
        entry = self.selected_entry()
        if entry is not None:
            ask_to_forget(self, entry, lambda yes: self._forget(entry) if yes else None)

    def confirmation(self) -> QMessageBox | None:
        """The forget confirmation open now, if any."""
        return self.findChild(QMessageBox, "forgetConfirmation")

    def _forget(self, entry: MemoryEntry) -> None:
        service = self.service
        path = entry.canonical

        def done(gone: str) -> None:
            self._say(f"Forgot {gone}; its quoted sentences stay revoked.")
            self.forgotten.emit(gone)
            self.refresh()

        def failed(message: str) -> None:
            self._say(f"Could not forget {path}: {message}", error=True)
            self.refresh()

        if not self._run(lambda: service.forget(path), done, failed):
            failed("the engine has stopped")

    @Slot()
    def explain_selected(self) -> None:
        entry = self.selected_entry()
        if entry is None:
            return
        service = self.service
        path = entry.canonical
        self.receipts.setText("Reading receipts…")
        self.receipts.show()
        if not self._run(lambda: service.explain(path), self._explained, self._explain_failed):
            self._explain_failed("the engine has stopped")

    def _explained(self, info: Explanation) -> None:
        if info.path != self._selected:
            return  # another entry was chosen meanwhile
        entry_id = html.escape(info.entry_id or "-")
        head = (
            f"<b>Receipts</b> for {html.escape(info.path)}  ·  id {entry_id}"
            f"  ·  content hash {html.escape(info.hash)}"
        )
        if not info.records:
            self.receipts.setText(f"{head}<br>{NO_RECEIPTS}")
            return
        rows = []
        for r in info.records:
            cells = [
                str(r.get("status") or "-"),
                str(r.get("exposure") or "-"),
                f"conversation {str(r.get('conversation') or '-')[:12]}",
                f"request {r.get('request') or '-'}",
                when(r.get("at")),
            ]
            rows.append("  ·  ".join(html.escape(c) for c in cells))
        self.receipts.setText(head + "<br>" + "<br>".join(rows))

    def _explain_failed(self, message: str) -> None:
        self.receipts.setText(f"Receipts could not be read: {html.escape(message)}")
