"""The agent editor's per-setting fields: the widget that edits a setting, its label and the
refusal shown under it.

Kept apart from the dialog because everything here follows from one schema entry
(engine/config/schema.py): which widget a setting gets, what a blank means, the letter that
jumps to it and the reason the loader would refuse its value. The dialog only arranges the
fields and decides what to do with their values.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from PySide6.QtWidgets import QComboBox, QLabel, QLineEdit, QPlainTextEdit, QSizePolicy, QWidget

from engine.api import (
    FIELDS_BY_NAME,
    FieldProblem,
)

# The settings the editor shows, in order; every other setting in the file is kept as it is.
EDITED_FIELDS: tuple[str, ...] = (
    "provider",
    "base_url",
    "api_key_env",
    "model",
    "system_prompt",
    "num_ctx",
    "max_context_tokens",
    "summarizer_model",
    "compaction_ratio",
    "compaction_reserve_tokens",
    "max_iterations",
    "max_tokens",
)
# The letter each field's label underlines (Alt+letter focuses it). Probe, Save and the
# model list's refresh button take P, S and F.
MNEMONICS: dict[str, str] = {
    "provider": "E",
    "base_url": "U",
    "api_key_env": "K",
    "model": "M",
    "system_prompt": "y",
    "num_ctx": "w",
    "max_context_tokens": "g",
    "summarizer_model": "z",
    "compaction_ratio": "r",
    "compaction_reserve_tokens": "v",
    "max_iterations": "I",
    "max_tokens": "O",
}
# The system prompt's label sits above its box, so it can say what the box is for.
SYSTEM_PROMPT_LABEL = "The agent's own instructions"


def with_mnemonic(label: str, letter: str) -> str:
    """`label` with `&` before the first `letter` (case-insensitive), for Alt+letter."""
    index = label.lower().find(letter.lower())
    if index < 0:
        return f"&{label}"
    return label[:index] + "&" + label[index:]


class SettingField:
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

    def make_label(self) -> QLabel:
        """The field's label: its letter underlined, its buddy the widget, the schema's tooltip."""
        text = SYSTEM_PROMPT_LABEL if self.name == "system_prompt" else self.spec.label
        label = QLabel(with_mnemonic(text, MNEMONICS[self.name]))
        label.setBuddy(self.widget)
        label.setToolTip(self.spec.description)
        self.label = label
        return label


def make_field(name: str) -> SettingField:
    """The widget the schema asks for: a list for a choice, an editable list for a model, a
    box for text, a line for the rest; a blank's meaning as the placeholder."""
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
        combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
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
    return SettingField(name, widget, problem)


def show_field_problems(fields: Iterable[SettingField]) -> bool:
    """Check each field, show each refusal next to its field; True when all pass."""
    ok = True
    for field in fields:
        try:
            field.parse()
        except FieldProblem as exc:
            reason = str(exc)
            field.show_problem(reason[:1].upper() + reason[1:])
            ok = False
        else:
            field.show_problem(None)
    return ok


def align_labels(fields: Iterable[SettingField]) -> None:
    """One label column across the sections, so the fields line up."""
    fields = list(fields)
    labels = [f.label for f in fields if f.label is not None]
    width = max(label.sizeHint().width() for label in labels)
    for field in fields:
        if field.label is not None and field.name != "system_prompt":
            field.label.setMinimumWidth(width)
