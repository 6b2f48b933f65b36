"""The agent editor's model list: what the agent's engine serves, and a GGUF file picker.

A server is asked on the engine thread (engine/agent/probe.py `list_agent_models`: Ollama's
/api/tags, the others' /v1/models); the embedded engine offers the bundled models installed
here, and Browse… picks any GGUF file. The answer fills the model and summarizer pickers
and keeps what was typed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QObject, Slot
from PySide6.QtWidgets import QComboBox, QFileDialog, QWidget

from desktop.agent_fields import is_model_field
from desktop.agent_form import MODEL_FIELD, AgentForm
from engine.api import AgentConfig, ModelInfo, ProbeFailure, list_agent_models

GGUF_FILTER = "GGUF models (*.gguf);;All files (*)"


class EngineCalls(Protocol):
    """Runs work on the engine thread and answers on the GUI thread (`EngineBridge.call`)."""

    def call(
        self,
        fn: Callable[[], Any],
        on_result: Callable[[Any], None],
        on_error: Callable[[str], None] | None = None,
    ) -> bool: ...


EMBEDDED_MODELS = (
    "The embedded engine runs a bundled model or a GGUF file: pick one, browse for a file, or "
    "leave blank for the default."
)


class ModelList(QObject):
    """Fills the form's model pickers from the engine; `edited` is the agent as typed now
    (None while a field is refused), `alive` False once the dialog is gone."""

    def __init__(
        self,
        form: AgentForm,
        engine: EngineCalls,
        edited: Callable[[], AgentConfig | None],
        alive: Callable[[], bool],
        parent: QWidget,
    ) -> None:
        super().__init__(parent)
        self.form = form
        self._engine = engine
        self._edited = edited
        self._alive = alive
        self._dialog_parent = parent
        self._token = 0
        self._provider = ""  # the engine the form names now
        self._provider_listed = ""  # the engine the pickers' items came from
        form.models_button.clicked.connect(self.refresh)
        form.browse_button.clicked.connect(self.browse)

    def set_provider(self, provider: str) -> None:
        """Browse… is for the embedded engine, which runs a file. Another engine makes the
        list and its status line stale: they say what this engine offers once refreshed."""
        self.form.browse_button.setVisible(provider == "embedded")
        if provider == self._provider:
            return
        self._provider = provider
        self._token += 1  # a listing still in flight was for the engine before
        self.form.models_status.setText(
            EMBEDDED_MODELS
            if provider == "embedded"
            else f"Refresh lists the models {provider} offers; or type a name."
        )
        combo = self.form.fields[MODEL_FIELD].widget
        if isinstance(combo, QComboBox) and self._provider_listed not in ("", provider):
            text = combo.currentText()
            combo.blockSignals(True)
            combo.clear()
            combo.setEditText(text)
            combo.blockSignals(False)

    @Slot()
    def refresh(self) -> None:
        """Ask the engine (on the engine thread) for what it serves."""
        status = self.form.models_status
        agent = self._edited()
        if agent is None:
            status.setText("Fix the engine settings to list its models.")
            return
        self._token += 1
        token = self._token
        status.setText(
            EMBEDDED_MODELS
            if agent.provider == "embedded"
            else f"Listing the models {agent.provider} offers…"
        )

        def done(result: list[ModelInfo] | ProbeFailure) -> None:
            if self._alive() and token == self._token:
                self._show(result, agent)

        def failed(message: str) -> None:
            if self._alive():
                status.setText(f"Could not list the models: {message}")

        self._engine.call(lambda: list_agent_models(agent), done, failed)

    @Slot()
    def browse(self) -> None:
        """Pick a GGUF file for the embedded engine; its path becomes the model."""
        combo = self.form.fields[MODEL_FIELD].widget
        assert isinstance(combo, QComboBox)
        current = combo.currentText()
        start = str(Path(current).parent) if current and Path(current).is_absolute() else ""
        chosen, _ = QFileDialog.getOpenFileName(
            self._dialog_parent, "A GGUF model file", start, GGUF_FILTER
        )
        if chosen:
            combo.setEditText(chosen)

    def _show(self, result: list[ModelInfo] | ProbeFailure, agent: AgentConfig) -> None:
        status = self.form.models_status
        if isinstance(result, ProbeFailure):
            status.setText(f"Could not list the models: {result.message}")
            return
        names = [m.id for m in result]
        self._provider_listed = agent.provider
        for name, field in self.form.fields.items():
            combo = field.widget
            if not is_model_field(field.spec) or not isinstance(combo, QComboBox):
                continue
            text = combo.currentText()
            combo.blockSignals(True)
            combo.clear()
            combo.addItems(([] if name == MODEL_FIELD else [""]) + names)
            combo.setEditText(text)
            combo.blockSignals(False)
        if agent.provider != "embedded":
            count = len(names)
            status.setText(
                f"{count} model{'s' if count != 1 else ''} on {agent.provider}; "
                "pick one or type a name."
                if count
                else f"{agent.provider} offers no models."
            )
