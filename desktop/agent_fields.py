"""The agent editor's per-setting fields: the widget that edits a setting, its label and the
refusal shown under it.

Kept apart from the dialog because everything here follows from the schema
(engine/config/schema.py): which settings are shown and in which box (the schema's order and
groups), which widget a setting gets, what a blank means, the letter that jumps to it and the
reason the loader would refuse its value. A setting added to the schema appears here without
an edit. The dialog only arranges the fields and decides what to do with their values.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from PySide6.QtWidgets import QComboBox, QLabel, QLineEdit, QPlainTextEdit, QSizePolicy, QWidget

from desktop.wheel_guard import wheel_only_when_focused
from engine.api import (
    AGENT_FIELDS,
    FIELDS_BY_NAME,
    FieldProblem,
    FieldSpec,
)

# The kinds of value the editor has a widget for; a setting of another kind (a table of
# tables) stays in the file as it is.
EDITABLE_TYPES = frozenset({"str", "text", "url", "int", "float", "choice", "secret"})
# A section's title for each schema group; a group not named here is titled from its name.
GROUP_TITLES: dict[str, str] = {
    "general": "Agent",
    "engine": "Engine",
    "window": "Context window",
    "compaction": "Compaction",
    "run": "Run",
    "prompt": "System prompt",
}
# Letters the dialog's buttons underline: Probe, Save, Refresh (the model list), Browse (a
# GGUF file), Discard (after a conflict). No field's label takes them.
BUTTON_LETTERS = frozenset("psfbd")
# The system prompt's label sits above its box, so it can say what the box is for.
SYSTEM_PROMPT_LABEL = "The agent's own instructions"


def edited_specs() -> tuple[FieldSpec, ...]:
    """Every setting of the schema the editor can show, in the schema's order."""
    return tuple(spec for spec in AGENT_FIELDS if spec.type in EDITABLE_TYPES)


def sections() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The editor's boxes: the settings grouped by their schema group, in schema order."""
    groups: dict[str, list[str]] = {}
    for spec in edited_specs():
        groups.setdefault(spec.group, []).append(spec.name)
    return tuple(
        (GROUP_TITLES.get(group, group.replace("_", " ").capitalize()), tuple(names))
        for group, names in groups.items()
    )


def label_text(spec: FieldSpec) -> str:
    return SYSTEM_PROMPT_LABEL if spec.name == "system_prompt" else spec.label


def mnemonics(specs: Iterable[FieldSpec]) -> dict[str, str]:
    """One letter per field for Alt+letter, no two alike and none of the buttons': first
    each field's first free word initial, then, for those left, the first free letter of
    its label (a field may be left without one when the alphabet runs out)."""
    specs = list(specs)
    taken = set(BUTTON_LETTERS)
    chosen: dict[str, str] = {}

    def pick(spec: FieldSpec, candidates: list[str]) -> None:
        for letter in candidates:
            if letter.isascii() and letter.isalpha() and letter.lower() not in taken:
                taken.add(letter.lower())
                chosen[spec.name] = letter
                return

    for spec in specs:
        pick(spec, [word[0] for word in label_text(spec).split() if word])
    for spec in specs:
        if spec.name not in chosen:
            pick(spec, list(label_text(spec)))
    return chosen


MNEMONICS: dict[str, str] = mnemonics(edited_specs())


def is_model_field(spec: FieldSpec) -> bool:
    """A setting that names one of the engine's models: picked from the list it serves."""
    return spec.type == "str" and spec.name.endswith("model")


def with_mnemonic(label: str, letter: str | None) -> str:
    """`label` with `&` before the first `letter` (case-insensitive), for Alt+letter."""
    label = label.replace("&", "&&")
    if letter is None:
        return label
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
        label = QLabel(with_mnemonic(label_text(self.spec), MNEMONICS.get(self.name)))
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
    elif is_model_field(spec):
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
        if spec.type == "secret":  # shown as dots: a key is never on screen
            line.setEchoMode(QLineEdit.EchoMode.Password)
        if spec.nullable:
            line.setPlaceholderText(f"blank: {spec.unset}")
        elif spec.default is not None:
            line.setPlaceholderText(f"blank: {spec.format_text(spec.default)}")
        widget = line
    if isinstance(widget, QComboBox):
        wheel_only_when_focused(widget)
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
