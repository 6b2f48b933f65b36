"""The agent editor: an agent's engine, model, prompt, window pin and ceiling, and what the
engine says about them before they are saved.

Every field is described by the schema (engine/config/schema.py): its label, its tooltip,
what a blank means, and the check a value must pass, so the dialog refuses exactly what the
loader would refuse, with the same reason, next to the field. Probe asks the engine on the
engine thread (engine/agent_probe.py) and shows its answer for the agent as saved and as
edited, side by side, with every warning; the rules behind the figures are the engine's.
Save rewrites the agent's file keeping its comments and layout, and refuses to overwrite an
edit another program made meanwhile.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Callable
from typing import Any, Protocol

import shiboken6
from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QFont, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop import theme
from engine.agent_probe import ProbeComparison, ProbeFailure, list_agent_models, probe_agent
from engine.config import (
    FIELDS_BY_NAME,
    AgentConfig,
    AgentConfigError,
    AgentFileChanged,
    ConfigError,
    FieldProblem,
    save_agent,
)
from engine.providers.base import DEFAULT_BASE_URLS, ModelInfo
from engine.window import WindowResolution

# The settings the editor shows, in order; every other setting in the file is kept as it is.
EDITED_FIELDS: tuple[str, ...] = (
    "provider",
    "base_url",
    "model",
    "system_prompt",
    "num_ctx",
    "max_context_tokens",
    "summarizer_model",
    "compaction_ratio",
    "compaction_reserve_tokens",
    "max_iterations",
)
# The letter each field's label underlines (Alt+letter focuses it). Probe, Save and the
# model list's refresh button take P, S and F.
MNEMONICS: dict[str, str] = {
    "provider": "E",
    "base_url": "U",
    "model": "M",
    "system_prompt": "y",
    "num_ctx": "w",
    "max_context_tokens": "g",
    "summarizer_model": "z",
    "compaction_ratio": "r",
    "compaction_reserve_tokens": "v",
    "max_iterations": "I",
}
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Engine", ("provider", "base_url", "model")),
    ("Context window", ("num_ctx", "max_context_tokens")),
    ("Compaction", ("summarizer_model", "compaction_ratio", "compaction_reserve_tokens")),
    ("Run", ("max_iterations",)),
    ("System prompt", ("system_prompt",)),
)
DIALOG_SIZE = (1040, 720)
FAILURE_HEADLINES: dict[str, str] = {
    "unreachable": "The engine did not answer.",
    "timeout": "The engine did not answer in time.",
    "model_not_found": "The engine does not have this model.",
}
SOURCE_LEGEND = (
    "Window source: <b>server</b> what the engine serves now · <b>pinned</b> your num_ctx · "
    "<b>ceiling</b> your max_context_tokens · <b>model-max</b> the model's training length · "
    "<b>catalog</b> a published figure for the model's name · <b>fallback</b> a guess, "
    "nothing reported. Nothing is saved by probing."
)

EDITOR_STYLE = f"""
QDialog#agentEditor {{ background: {theme.WINDOW_BG}; }}
QGroupBox {{
    background: {theme.SURFACE}; border: 1px solid {theme.BORDER}; border-radius: 6px;
    margin-top: 16px; padding: 10px 8px 6px 8px; font-weight: 600; color: {theme.TEXT};
}}
QGroupBox::title {{ subcontrol-origin: margin; left: 10px; padding: 0 4px; }}
QLabel {{ font-weight: normal; }}
QLabel#fieldProblem {{ color: {theme.ERROR_TEXT}; }}
QLabel#fieldHint, QLabel#probeNote {{ color: {theme.MUTED}; }}
QLabel#probeStatus {{ color: {theme.MUTED}; }}
QLabel#probeFailure {{
    background: {theme.ERROR_BG}; border: 1px solid {theme.ERROR_BORDER}; border-radius: 5px;
    color: {theme.ERROR_TEXT}; padding: 8px;
}}
QLabel#probeWarning {{
    background: {theme.WARNING_BG}; border-radius: 5px; color: {theme.WARNING_TEXT};
    padding: 6px 8px;
}}
QFrame#conflict {{
    background: {theme.ERROR_BG}; border: 1px solid {theme.ERROR_BORDER}; border-radius: 6px;
}}
QLabel#conflictText {{ color: {theme.ERROR_TEXT}; }}
QTableWidget#probeTable {{
    background: {theme.SURFACE}; border: 1px solid {theme.BORDER}; gridline-color: {theme.BORDER};
}}
QLineEdit[invalid="true"], QComboBox[invalid="true"] {{ border: 1px solid {theme.ERROR_TEXT}; }}
"""


class EngineCalls(Protocol):
    """Runs work on the engine thread and answers on the GUI thread (`EngineBridge.call`)."""

    def call(
        self,
        fn: Callable[[], Any],
        on_result: Callable[[Any], None],
        on_error: Callable[[str], None] | None = None,
    ) -> bool: ...


def with_mnemonic(label: str, letter: str) -> str:
    """`label` with `&` before the first `letter` (case-insensitive), for Alt+letter."""
    index = label.lower().find(letter.lower())
    if index < 0:
        return f"&{label}"
    return label[:index] + "&" + label[index:]


def format_cell(value: int | str | None, unset: str) -> str:
    if value is None:
        return unset
    if isinstance(value, int):
        return f"{value:,}"
    return value


class _Field:
    """One setting's editor widget, its problem label and its schema entry."""

    def __init__(self, name: str, widget: QWidget, problem: QLabel) -> None:
        self.name = name
        self.spec = FIELDS_BY_NAME[name]
        self.widget = widget
        self.problem = problem
        self.label: QLabel | None = None

    def text(self) -> str:
        widget = self.widget
        if isinstance(widget, QPlainTextEdit):
            return widget.toPlainText()
        if isinstance(widget, QComboBox):
            return widget.currentText()
        assert isinstance(widget, QLineEdit)
        return widget.text()

    def set_text(self, text: str) -> None:
        widget = self.widget
        if isinstance(widget, QPlainTextEdit):
            widget.setPlainText(text)
        elif isinstance(widget, QComboBox):
            if widget.isEditable():
                widget.setEditText(text)
            else:
                widget.setCurrentIndex(max(0, widget.findText(text)))
        else:
            assert isinstance(widget, QLineEdit)
            widget.setText(text)

    def parse(self) -> Any:
        """The value as AgentConfig holds it, or `FieldProblem`."""
        return self.spec.parse_text(self.text())

    def show_problem(self, message: str | None) -> None:
        self.problem.setText(message or "")
        self.problem.setVisible(bool(message))
        # A wrapped label in a form gets one line unless it asks for more.
        width = max(self.widget.width(), 240)
        self.problem.setMinimumHeight(self.problem.heightForWidth(width) if message else 0)
        target = self.widget
        if target.property("invalid") != bool(message):
            target.setProperty("invalid", bool(message))
            target.style().unpolish(target)
            target.style().polish(target)


class AgentEditorDialog(QDialog):
    """Edit one agent loaded from its file. `saved` carries the config as written."""

    saved = Signal(object)  # AgentConfig, as now on disk

    def __init__(
        self,
        agent: AgentConfig,
        engine: EngineCalls,
        *,
        live: WindowResolution | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        if agent.source_path is None:
            raise ValueError("the agent editor edits an agent loaded from its file")
        self.original = agent
        self._engine = engine
        self._live = live
        self._fields: dict[str, _Field] = {}
        self._probe_token = 0
        self._models_token = 0
        self._saving = False
        self.comparison: ProbeComparison | ProbeFailure | None = None
        self.setObjectName("agentEditor")
        self.setWindowTitle(f"Edit agent — {agent.name}")
        self.setStyleSheet(EDITOR_STYLE)
        self.setModal(True)
        self.resize(*DIALOG_SIZE)

        self._build()
        self._fill(agent)
        self._on_provider_changed()
        self.validate()
        self.list_models()

    # -- building ----------------------------------------------------------------------------

    def _build(self) -> None:
        self.conflict = QFrame(objectName="conflict")
        self.conflict_text = QLabel("", objectName="conflictText")
        self.conflict_text.setWordWrap(True)
        self.reload_button = QPushButton("&Discard edits and reload")
        self.reload_button.setAutoDefault(False)
        self.reload_button.clicked.connect(self.reload_from_disk)
        conflict_row = QHBoxLayout(self.conflict)
        conflict_row.setContentsMargins(10, 8, 8, 8)
        conflict_row.addWidget(self.conflict_text, 1)
        conflict_row.addWidget(self.reload_button, 0, Qt.AlignmentFlag.AlignTop)
        self.conflict.hide()

        where = html.escape(str(self.original.source_path))
        path_label = QLabel(
            f"{html.escape(self.original.name)} · <span style='color:{theme.MUTED}'>{where}</span>",
            objectName="agentPath",
        )
        path_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        form_column = QVBoxLayout()
        form_column.setSpacing(6)
        for title, names in SECTIONS:
            if title == "System prompt":
                continue
            form_column.addWidget(self._section(title, names))
        form_column.addWidget(self._section("System prompt", ("system_prompt",)), 1)

        left = QWidget()
        left.setLayout(form_column)
        left.setMinimumWidth(470)

        right = QVBoxLayout()
        right.setSpacing(6)
        probe_box = QGroupBox("What the engine says")
        probe_layout = QVBoxLayout(probe_box)
        probe_layout.setSpacing(8)
        self.probe_button = QPushButton("&Probe")
        self.probe_button.setAutoDefault(False)
        self.probe_button.setToolTip(
            "Ask the engine what it serves for these settings (nothing is saved)"
        )
        self.probe_button.clicked.connect(self.probe)
        self.busy = QProgressBar(objectName="loadProgress")
        self.busy.setRange(0, 0)
        self.busy.setTextVisible(False)
        self.busy.setFixedHeight(8)
        self.busy.hide()
        self.probe_status = QLabel(
            "Probe asks the engine what window it serves with these settings, before saving.",
            objectName="probeStatus",
        )
        self.probe_status.setWordWrap(True)
        top = QHBoxLayout()
        top.addWidget(self.probe_button)
        top.addWidget(self.probe_status, 1)
        self.table = QTableWidget(0, 3, objectName="probeTable")
        self.table.setHorizontalHeaderLabels(["", "Saved", "These settings"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
        self.table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.table.hide()
        self.failure = QLabel("", objectName="probeFailure")
        self.failure.setWordWrap(True)
        self.failure.hide()
        self.warnings_box = QVBoxLayout()
        self.warnings_box.setSpacing(6)
        self.notes = QLabel("", objectName="probeNote")
        self.notes.setWordWrap(True)
        self.notes.hide()
        probe_layout.addLayout(top)
        probe_layout.addWidget(self.busy)
        probe_layout.addWidget(self.failure)
        probe_layout.addWidget(self.table)
        probe_layout.addLayout(self.warnings_box)
        probe_layout.addWidget(self.notes)
        probe_layout.addStretch(1)
        legend = QLabel(SOURCE_LEGEND, objectName="probeNote")
        legend.setWordWrap(True)
        probe_layout.addWidget(legend)
        right.addWidget(probe_box, 1)

        columns = QHBoxLayout()
        columns.setSpacing(12)
        columns.addWidget(left, 11)
        columns.addLayout(right, 10)

        self.save_problem = QLabel("", objectName="fieldProblem")
        self.save_problem.setWordWrap(True)
        self.save_button = QPushButton("&Save")
        self.save_button.setDefault(True)
        self.save_button.setAutoDefault(True)
        self.save_button.clicked.connect(self.save)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setAutoDefault(False)
        self.cancel_button.clicked.connect(self.reject)
        buttons = QHBoxLayout()
        hint = QLabel(
            "Enter saves (Ctrl+Enter in the prompt) · Esc cancels · Alt+underlined letter jumps "
            "to a field",
            objectName="fieldHint",
        )
        buttons.addWidget(hint)
        buttons.addWidget(self.save_problem, 1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.save_button)

        outer = QVBoxLayout(self)
        outer.setContentsMargins(14, 12, 14, 12)
        outer.setSpacing(8)
        outer.addWidget(path_label)
        outer.addWidget(self.conflict)
        outer.addLayout(columns, 1)
        outer.addLayout(buttons)

        QShortcut(QKeySequence("Ctrl+Return"), self, activated=self._save_if_valid)
        QShortcut(QKeySequence("Ctrl+Enter"), self, activated=self._save_if_valid)
        self._align_labels()
        self._set_tab_order()
        self._connect_fields()

    def _section(self, title: str, names: tuple[str, ...]) -> QGroupBox:
        box = QGroupBox(title)
        form = QFormLayout(box)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.ExpandingFieldsGrow)
        form.setVerticalSpacing(4)
        form.setContentsMargins(6, 6, 6, 4)
        for name in names:
            field = self._make_field(name)
            holder = QWidget()
            column = QVBoxLayout(holder)
            column.setContentsMargins(0, 0, 0, 0)
            column.setSpacing(2)
            if name == "model":
                row = QHBoxLayout()
                row.setSpacing(6)
                row.addWidget(field.widget, 1)
                self.models_button = QPushButton("Re&fresh")
                self.models_button.setAutoDefault(False)
                self.models_button.setToolTip("List the models the engine offers again")
                self.models_button.clicked.connect(self.list_models)
                row.addWidget(self.models_button)
                column.addLayout(row)
                self.models_status = QLabel("", objectName="fieldHint")
                self.models_status.setWordWrap(True)
                column.addWidget(self.models_status)
            else:
                column.addWidget(field.widget)
            column.addWidget(field.problem)
            label = QLabel(with_mnemonic(field.spec.label, MNEMONICS[name]))
            label.setBuddy(field.widget)
            label.setToolTip(field.spec.description)
            field.label = label
            if name == "system_prompt":
                form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
                label.setText(with_mnemonic("The agent's own instructions", MNEMONICS[name]))
            form.addRow(label, holder)
        return box

    def _make_field(self, name: str) -> _Field:
        spec = FIELDS_BY_NAME[name]
        widget: QWidget
        if spec.type == "choice":
            combo = QComboBox()
            combo.addItems(list(spec.choices))
            widget = combo
        elif name in ("model", "summarizer_model"):
            combo = QComboBox()
            combo.setEditable(True)
            combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
            combo.setSizeAdjustPolicy(
                QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
            )
            combo.setMinimumContentsLength(18)
            combo.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
            if spec.nullable and combo.lineEdit() is not None:
                combo.lineEdit().setPlaceholderText(f"blank: {spec.unset}")
            widget = combo
        elif spec.type == "text":
            edit = QPlainTextEdit()
            edit.setTabChangesFocus(True)
            edit.setMinimumHeight(90)
            widget = edit
        else:
            line = QLineEdit()
            if spec.nullable:
                line.setPlaceholderText(f"blank: {spec.unset}")
            elif spec.default is not None:
                line.setPlaceholderText(f"blank: {spec.format_text(spec.default)}")
            widget = line
        widget.setObjectName(f"field_{name}")
        widget.setToolTip(spec.description)
        problem = QLabel("", objectName="fieldProblem")
        problem.setWordWrap(True)
        problem.hide()
        field = _Field(name, widget, problem)
        self._fields[name] = field
        return field

    def _connect_fields(self) -> None:
        for field in self._fields.values():
            widget = field.widget
            if isinstance(widget, QComboBox) and not widget.isEditable():
                widget.currentIndexChanged.connect(self._on_provider_changed)
            elif isinstance(widget, QComboBox):
                widget.editTextChanged.connect(self._changed)
            elif isinstance(widget, QPlainTextEdit | QLineEdit):
                widget.textChanged.connect(self._changed)

    def _align_labels(self) -> None:
        """One label column across the sections, so the fields line up."""
        labels = [f.label for f in self._fields.values() if f.label is not None]
        width = max(label.sizeHint().width() for label in labels)
        for field in self._fields.values():
            if field.label is not None and field.name != "system_prompt":
                field.label.setMinimumWidth(width)

    def _set_tab_order(self) -> None:
        chain: list[QWidget] = []
        for _, names in SECTIONS:
            for name in names:
                chain.append(self._fields[name].widget)
                if name == "model":
                    chain.append(self.models_button)
        chain += [self.probe_button, self.cancel_button, self.save_button]
        for first, second in itertools.pairwise(chain):
            QWidget.setTabOrder(first, second)

    # -- values ------------------------------------------------------------------------------

    def field(self, name: str) -> QWidget:
        """The editor widget of one setting (for tests and screenshots)."""
        return self._fields[name].widget

    def problem_text(self, name: str) -> str:
        """The reason shown next to a refused field ("" when it is valid)."""
        field = self._fields[name]
        return "" if field.problem.isHidden() else field.problem.text()

    def _fill(self, agent: AgentConfig) -> None:
        for name, field in self._fields.items():
            field.widget.blockSignals(True)
            field.set_text(field.spec.format_text(getattr(agent, name)))
            field.widget.blockSignals(False)

    def edited(self) -> AgentConfig | None:
        """The agent as the fields say, or None while a field is refused."""
        values: dict[str, Any] = {}
        for name, field in self._fields.items():
            try:
                values[name] = field.parse()
            except FieldProblem:
                return None
        try:
            return self.original.with_changes(**values)
        except AgentConfigError:
            return None

    def validate(self) -> bool:
        """Check every field, show each refusal next to its field; Save only when all pass."""
        ok = True
        for field in self._fields.values():
            try:
                field.parse()
            except FieldProblem as exc:
                reason = str(exc)
                field.show_problem(reason[:1].upper() + reason[1:])
                ok = False
            else:
                field.show_problem(None)
        message = ""
        if ok:
            try:
                self.original.with_changes(**{n: f.parse() for n, f in self._fields.items()})
            except AgentConfigError as exc:
                ok = False
                message = exc.problem
        self.save_problem.setText(message or ("" if ok else "Fix the fields marked in red."))
        self.save_button.setEnabled(ok and not self._saving)
        self.probe_button.setEnabled(ok and not self.probing())
        return ok

    @Slot()
    def _changed(self) -> None:
        self.validate()
        if self.comparison is not None and not self.table.isHidden():
            self.probe_status.setText("Settings changed since the probe: probe again.")

    @Slot()
    def _on_provider_changed(self) -> None:
        provider = self._fields["provider"].text()
        for field in self._fields.values():
            applies = field.spec.applies_to(provider)
            field.widget.setEnabled(applies)
            if field.label is not None:
                field.label.setEnabled(applies)
        base = self._fields["base_url"].widget
        if isinstance(base, QLineEdit):
            default = DEFAULT_BASE_URLS.get(provider)
            base.setPlaceholderText(
                f"blank: {default}" if default else "the embedded engine has no URL"
            )
        model = self._fields["model"].widget
        if isinstance(model, QComboBox) and model.lineEdit() is not None:
            model.lineEdit().setPlaceholderText(
                "blank: the bundled model (or a GGUF file path)"
                if provider == "embedded"
                else "blank: the only model the server serves"
            )
        self._changed()

    # -- the model list ----------------------------------------------------------------------

    @Slot()
    def list_models(self) -> None:
        """Fill the model pickers from what the engine offers (on the engine thread)."""
        agent = self.edited()
        if agent is None:
            self.models_status.setText("Fix the engine settings to list its models.")
            return
        self._models_token += 1
        token = self._models_token
        self.models_status.setText(
            "The embedded engine runs a GGUF file: type its path, or leave blank."
            if agent.provider == "embedded"
            else f"Listing the models {agent.provider} offers…"
        )

        def done(result: list[ModelInfo] | ProbeFailure) -> None:
            if self._alive() and token == self._models_token:
                self._show_models(result, agent)

        self._engine.call(lambda: list_agent_models(agent), done, self._models_failed)

    def _models_failed(self, message: str) -> None:
        if self._alive():
            self.models_status.setText(f"Could not list the models: {message}")

    def _show_models(self, result: list[ModelInfo] | ProbeFailure, agent: AgentConfig) -> None:
        if isinstance(result, ProbeFailure):
            self.models_status.setText(f"Could not list the models: {result.message}")
            return
        names = [m.id for m in result]
        for name in ("model", "summarizer_model"):
            combo = self._fields[name].widget
            assert isinstance(combo, QComboBox)
            text = combo.currentText()
            combo.blockSignals(True)
            combo.clear()
            combo.addItems(([""] if name == "summarizer_model" else []) + names)
            combo.setEditText(text)
            combo.blockSignals(False)
        if agent.provider != "embedded":
            count = len(names)
            self.models_status.setText(
                f"{count} model{'s' if count != 1 else ''} on {agent.provider}; "
                "pick one or type a name."
                if count
                else f"{agent.provider} offers no models."
            )

    # -- probing -----------------------------------------------------------------------------

    @Slot()
    def probe(self) -> None:
        """Ask the engine (on the engine thread) and show its answer; the window stays live."""
        agent = self.edited()
        if agent is None:
            return
        self._probe_token += 1
        token = self._probe_token
        where = agent.effective_base_url or "this machine"
        self.probe_status.setText(f"Asking {agent.provider} at {where}…")
        self.busy.show()
        self.probe_button.setEnabled(False)
        original, live = self.original, self._live

        def done(result: ProbeComparison | ProbeFailure) -> None:
            if self._alive() and token == self._probe_token:
                self.show_comparison(result)

        def failed(message: str) -> None:
            if self._alive() and token == self._probe_token:
                failure = ProbeFailure("internal", message, agent.provider, where)
                self.show_comparison(failure)

        if not self._engine.call(lambda: probe_agent(agent, original, live=live), done, failed):
            failed("the engine thread has stopped")

    def probing(self) -> bool:
        """A probe is in flight (its busy bar shows)."""
        return not self.busy.isHidden()

    def show_comparison(self, result: ProbeComparison | ProbeFailure) -> None:
        self.comparison = result
        self.busy.hide()
        self.probe_button.setEnabled(True)
        self._clear_warnings()
        if isinstance(result, ProbeFailure):
            self.table.hide()
            self.notes.hide()
            self.failure.setText(
                f"<b>{FAILURE_HEADLINES.get(result.kind, 'The probe failed.')}</b><br>"
                f"{html.escape(result.message)}"
            )
            self.failure.show()
            self.probe_status.setText(
                "Check that the engine runs at that address, then probe again."
            )
            return
        self.failure.hide()
        rows = result.rows()
        has_saved = result.saved is not None
        self.table.setColumnHidden(1, not has_saved)
        self.table.setRowCount(len(rows))
        bold = QFont(self.font())
        bold.setWeight(QFont.Weight.DemiBold)
        for index, row in enumerate(rows):
            label = QTableWidgetItem(row.label)
            saved = QTableWidgetItem(format_cell(row.saved, row.unset) if has_saved else "")
            edited = QTableWidgetItem(format_cell(row.edited, row.unset))
            for item in (saved, edited):
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if row.key in ("window", "source") or (has_saved and row.saved != row.edited):
                edited.setFont(bold)
            self.table.setItem(index, 0, label)
            self.table.setItem(index, 1, saved)
            self.table.setItem(index, 2, edited)
        self.table.resizeRowsToContents()
        height = self.table.horizontalHeader().height() + 4
        height += sum(self.table.rowHeight(i) for i in range(len(rows)))
        self.table.setFixedHeight(height)
        self.table.show()
        for warning in result.warnings:
            label = QLabel(f"⚠ {warning}", objectName="probeWarning")
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.warnings_box.addWidget(label)
        self.notes.setText(" ".join(result.notes))
        self.notes.setVisible(bool(result.notes))
        count = len(result.warnings)
        self.probe_status.setText(
            f"{result.provider}: effective window {result.window:,} ({result.source})"
            + (f" · {count} warning{'s' if count != 1 else ''}" if count else " · no warnings")
        )

    def warning_texts(self) -> list[str]:
        """The warnings the probe shows now."""
        texts = []
        for i in range(self.warnings_box.count()):
            widget = self.warnings_box.itemAt(i).widget()
            if isinstance(widget, QLabel):
                texts.append(widget.text().removeprefix("⚠ "))
        return texts

    def _clear_warnings(self) -> None:
        while self.warnings_box.count():
            widget = self.warnings_box.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()

    # -- saving ------------------------------------------------------------------------------

    @Slot()
    def _save_if_valid(self) -> None:
        if self.save_button.isEnabled():
            self.save()

    @Slot()
    def save(self) -> None:
        """Write the agent's file on the engine thread; a concurrent edit is reported."""
        agent = self.edited()
        if agent is None or self._saving:
            return
        path = self.original.source_path
        assert path is not None
        self._saving = True
        self.save_button.setEnabled(False)
        self.save_problem.setText("Saving…")

        def write() -> AgentConfig | ConfigError:
            try:
                return save_agent(path, agent)
            except ConfigError as exc:
                return exc

        def done(result: AgentConfig | ConfigError) -> None:
            if self._alive():
                self._saved(result)

        def failed(message: str) -> None:
            if self._alive():
                self._saving = False
                self.save_problem.setText(f"Not saved: {message}")
                self.validate()

        if not self._engine.call(write, done, failed):
            failed("the engine thread has stopped")

    def _saved(self, result: AgentConfig | ConfigError) -> None:
        self._saving = False
        if isinstance(result, AgentFileChanged):
            self.conflict_text.setText(
                f"<b>{html.escape(self.original.source_path.name)} was changed by another "
                "program</b> after this editor opened it. Nothing was saved, so that edit is "
                "not lost. Reload to see the file as it is now, then make your changes again."
            )
            self.conflict.show()
            self.save_problem.setText("Not saved: the file changed on disk.")
            self.save_button.setEnabled(True)
            self.reload_button.setFocus()
            return
        if isinstance(result, ConfigError):
            self.save_problem.setText(f"Not saved: {result}")
            self.validate()
            return
        self.saved.emit(result)
        self.accept()

    @Slot()
    def reload_from_disk(self) -> None:
        """After a conflict: start again from the file as another program left it."""
        path = self.original.source_path
        assert path is not None

        def load() -> AgentConfig | ConfigError:
            from engine.config import load_agent

            try:
                return load_agent(path)
            except ConfigError as exc:
                return exc

        def done(result: AgentConfig | ConfigError) -> None:
            if not self._alive():
                return
            if isinstance(result, ConfigError):
                self.conflict_text.setText(
                    f"The file cannot be loaded now: {html.escape(str(result))}"
                )
                return
            self.original = result
            self._fill(result)
            self._on_provider_changed()
            self.conflict.hide()
            self.save_problem.setText("")
            self.validate()
            self._fields["provider"].widget.setFocus()

        self._engine.call(load, done)

    def _alive(self) -> bool:
        """False once Qt deleted the dialog (a late answer from the engine is dropped)."""
        return shiboken6.isValid(self)
