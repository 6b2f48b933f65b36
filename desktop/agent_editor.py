"""The agent editor: an agent's engine, model, prompt, window pin and ceiling, and what the
engine says about them before they are saved.

Every field is described by the schema (engine/config/schema.py): its label, its tooltip,
what a blank means, and the check a value must pass, so the dialog refuses exactly what the
loader would refuse, with the same reason, next to the field. Probe asks the engine on the
engine thread (engine/agent/probe.py) and shows its answer for the agent as saved and as
edited, side by side, with every warning; the rules behind the figures are the engine's.
Save rewrites the agent's file keeping its comments and layout, and refuses to overwrite an
edit another program made meanwhile. The fields are built in desktop/agent_fields.py and the
engine's answer is drawn by desktop/probe_panel.py; this module arranges them and runs the
model list, probe and save flows.
"""

from __future__ import annotations

import html
import itertools
from pathlib import Path
from typing import Any

import shiboken6
from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from desktop import theme
from desktop.agent_fields import SettingField, show_field_problems
from desktop.agent_form import AgentForm
from desktop.agent_models import EngineCalls, ModelList
from desktop.fit_panel import FitPanel
from desktop.mcp_section import McpSection
from desktop.probe_panel import ProbePanel
from engine.api import (
    DEFAULT_BASE_URLS,
    AgentConfig,
    AgentConfigError,
    AgentFileChanged,
    ConfigError,
    FieldProblem,
    ProbeComparison,
    ProbeFailure,
    WindowResolution,
    default_output_cap,
    load_agent,
    probe_agent,
    save_agent,
)

DIALOG_SIZE = (1040, 760)

EDITOR_STYLE = theme.style_sheet("agent_editor")


class AgentEditorDialog(QDialog):
    """Edit one agent loaded from its file. `saved` carries the config as written."""

    saved = Signal(object)  # AgentConfig, as now on disk

    def __init__(
        self,
        agent: AgentConfig,
        engine: EngineCalls,
        *,
        live: WindowResolution | None = None,
        name_kept: str = "",
        listings_dir: Path | None = None,
        parent: QWidget | None = None,
    ) -> None:
        """`name_kept`, when given, says why the agent's name cannot change here (its
        conversations are filed under it): the Name field is read-only with that reason.
        `listings_dir`: where a tested MCP server's tool list is kept for conversations."""
        super().__init__(parent)
        if agent.source_path is None:
            raise ValueError("the agent editor edits an agent loaded from its file")
        self.original = agent
        self._engine = engine
        self._live = live
        self._listings_dir = listings_dir
        self._probe_token = 0
        self._saving = False
        self.comparison: ProbeComparison | ProbeFailure | None = None
        self.setObjectName("agentEditor")
        self.setWindowTitle(f"Edit agent — {agent.name}")
        self.setStyleSheet(EDITOR_STYLE)
        self.setModal(True)
        self.resize(*DIALOG_SIZE)

        self._build()
        if name_kept:
            self.form.keep_name(name_kept)
        self._say_output_cap()
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

        self.form = AgentForm()
        self._fields: dict[str, SettingField] = self.form.fields
        self.models_button = self.form.models_button
        self.models_status = self.form.models_status
        self.models = ModelList(self.form, self._engine, self.edited, self._alive, self)
        left = self.form

        # The engine's answers (probe, fit, MCP servers) scroll as one column, so the dialog
        # still fits a 768-pixel screen however much they say.
        right_column = QWidget(objectName="editorAnswers")
        right = QVBoxLayout(right_column)
        right.setContentsMargins(0, 0, 0, 0)
        right.setSpacing(6)
        self.probe_panel = ProbePanel()
        self.probe_panel.button.clicked.connect(self.probe)
        # The panel's parts the dialog's tests and tab order reach for.
        self.probe_button = self.probe_panel.button
        self.table = self.probe_panel.table
        self.failure = self.probe_panel.failure
        right.addWidget(self.probe_panel, 1)
        self.fit_panel = FitPanel(self._engine.call)  # desktop/fit_panel.py
        right.addWidget(self.fit_panel)
        self.mcp_section = McpSection(
            self.original.mcp,
            self._engine,
            self._changed,
            agent=self.edited,
            listings_dir=self._listings_dir,
        )
        right.addWidget(self.mcp_section)

        columns = QHBoxLayout()
        columns.setSpacing(12)
        columns.addWidget(left, 11)
        answers = QScrollArea(objectName="editorAnswersScroll")
        answers.setWidgetResizable(True)
        answers.setFrameShape(QFrame.Shape.NoFrame)
        answers.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        answers.setWidget(right_column)
        columns.addWidget(answers, 10)

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
        self._set_tab_order()
        self._connect_fields()

    def _say_output_cap(self) -> None:
        """A blank output cap is one derived from the window: with the window known, the
        placeholder says the number a blank means here, under the pin or ceiling as typed."""
        if self._live is None or not self._live.window:
            return
        edited = self.edited()
        typed = (edited.num_ctx, edited.max_context_tokens) if edited is not None else ()
        window = min([self._live.window, *(w for w in typed if w)])
        line = self._fields["max_tokens"].widget
        if isinstance(line, QLineEdit):
            # Short enough to be read whole in the field; the tooltip says the rule.
            line.setPlaceholderText(
                f"blank: {default_output_cap(window):,} (a quarter of {window:,})"
            )
            line.setToolTip(
                "Blank: a quarter of the window, 512 to 4,096 tokens, never more than the "
                "window has left after the prompt"
            )

    def _connect_fields(self) -> None:
        for field in self._fields.values():
            widget = field.widget
            if isinstance(widget, QComboBox) and not widget.isEditable():
                widget.currentIndexChanged.connect(self._on_provider_changed)
            elif isinstance(widget, QComboBox):
                widget.editTextChanged.connect(self._changed)
            elif isinstance(widget, QPlainTextEdit | QLineEdit):
                widget.textChanged.connect(self._changed)

    def _set_tab_order(self) -> None:
        chain = [*self.form.chain(), self.probe_button, self.cancel_button, self.save_button]
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
            return self.original.with_changes(**values, mcp=self.mcp_section.servers())
        except AgentConfigError:
            return None

    def validate(self) -> bool:
        """Check every field, show each refusal next to its field; Save only when all pass."""
        ok = show_field_problems(self._fields.values())
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
        self._say_output_cap()
        self.fit_panel.request(self.edited())
        if self.comparison is not None:
            self.probe_panel.mark_stale()

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
        self.models.set_provider(provider)
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
        self.models.refresh()

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
        self.probe_panel.asking(agent.provider, where)
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
        return self.probe_panel.probing()

    def show_comparison(self, result: ProbeComparison | ProbeFailure) -> None:
        self.comparison = result
        self.probe_panel.show_comparison(result)
        blank = result.blank_sampling if isinstance(result, ProbeComparison) else None
        for name in blank.settings if blank is not None else ():
            line = self._fields[name].widget  # the sampling settings, by their field names
            if isinstance(line, QLineEdit) and blank is not None:  # a blank, on this engine
                line.setPlaceholderText(f"blank: {blank.blank_text(name)}")

    def warning_texts(self) -> list[str]:
        """The warnings the probe shows now."""
        return self.probe_panel.warning_texts()

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
