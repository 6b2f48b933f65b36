"""The agent editor's form is never cut off on the right: its fields, their hints and the
model list's buttons are whole at the dialog's size, for the embedded engine too (whose
model row carries Browse… beside Refresh)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QPoint

from desktop.agent_editor import DIALOG_SIZE, AgentEditorDialog
from engine.api import load_agent


class _NoEngine:
    def call(self, *args: Any, **kwargs: Any) -> bool:
        return False


def _right_edge(widget: Any, viewport: Any) -> int:
    return widget.mapTo(viewport, QPoint(widget.width(), 0)).x()


def test_the_embedded_agents_form_fits_its_column_with_browse_whole(qtbot: Any, tmp_path: Path):
    file = tmp_path / "default.toml"
    file.write_text('name = "default"\nprovider = "embedded"\nnum_ctx = 1024\n', encoding="utf-8")
    kept = "Its conversations are filed under this name. Duplicate makes a copy to name anew."
    dialog = AgentEditorDialog(load_agent(file), _NoEngine(), name_kept=kept)
    qtbot.addWidget(dialog)
    dialog.resize(*DIALOG_SIZE)
    dialog.show()
    qtbot.waitExposed(dialog)
    form = dialog.form
    viewport = form.viewport()
    browse = form.browse_button
    assert browse.isVisible()
    assert browse.width() >= browse.sizeHint().width()  # "Browse…", not "B"
    assert form.widget().width() <= viewport.width()
    for widget in (browse, form.name_note, dialog.field("model"), dialog.field("num_ctx")):
        assert _right_edge(widget, viewport) <= viewport.width(), widget.objectName()
    dialog.reject()
