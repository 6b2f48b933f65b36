"""The agent editor's form: every setting of the schema, in boxes by their schema group.

The boxes, their order, the fields in them and each field's widget follow from the schema
(desktop/agent_fields.py), so a setting added there appears here without an edit. The model
field gets the engine's list beside it (Refresh, and Browse… for a GGUF file); the form
scrolls when the settings outgrow the dialog.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import (
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from desktop.agent_fields import SettingField, align_labels, make_field, sections

MODEL_FIELD = "model"
NAME_FIELD = "name"
PROMPT_FIELD = "system_prompt"
MIN_WIDTH = 470  # the form's least width, whatever its fields need


class AgentForm(QScrollArea):
    """The fields by name, the model list's buttons and status line, in one scrolled column."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("agentForm")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.fields: dict[str, SettingField] = {}
        self.models_button = QPushButton("Re&fresh")
        self.models_button.setAutoDefault(False)
        self.models_button.setToolTip("List the models the engine offers again")
        self.browse_button = QPushButton("&Browse…")
        self.browse_button.setAutoDefault(False)
        self.browse_button.setToolTip("Pick a GGUF model file for the embedded engine")
        self.models_status = QLabel("")
        self.models_status.setObjectName("fieldHint")
        self.models_status.setWordWrap(True)
        self.name_note = QLabel("")
        self.name_note.setObjectName("fieldHint")
        self.name_note.setWordWrap(True)
        self.name_note.hide()
        self.sections = sections()

        body = QWidget()
        body.setObjectName("agentFormBody")
        column = QVBoxLayout(body)
        column.setContentsMargins(0, 0, 6, 0)
        column.setSpacing(6)
        for title, names in self.sections:
            column.addWidget(self._section(title, names), 1 if PROMPT_FIELD in names else 0)
        self.setWidget(body)
        align_labels(self.fields.values())

    def _section(self, title: str, names: tuple[str, ...]) -> QGroupBox:
        box = QGroupBox(title)
        form = QFormLayout(box)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.ExpandingFieldsGrow)
        form.setVerticalSpacing(4)
        form.setContentsMargins(6, 6, 6, 4)
        for name in names:
            field = make_field(name)
            self.fields[name] = field
            holder = QWidget()
            column = QVBoxLayout(holder)
            column.setContentsMargins(0, 0, 0, 0)
            column.setSpacing(2)
            if name == MODEL_FIELD:
                row = QHBoxLayout()
                row.setSpacing(6)
                row.addWidget(field.widget, 1)
                row.addWidget(self.models_button)
                row.addWidget(self.browse_button)
                column.addLayout(row)
                column.addWidget(self.models_status)
            else:
                column.addWidget(field.widget)
            if name == NAME_FIELD:
                column.addWidget(self.name_note)
            column.addWidget(field.problem)
            if name == PROMPT_FIELD:
                form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
            form.addRow(field.make_label(), holder)
        return box

    def minimumSizeHint(self) -> QSize:
        """Never narrower than its fields: the column scrolls down, never sideways (its
        horizontal bar is off), so a narrower one would cut the fields and their buttons
        off on the right (Browse… read "B")."""
        hint = super().minimumSizeHint()
        body = self.widget()
        bar = self.verticalScrollBar().sizeHint().width()
        need = body.minimumSizeHint().width() + bar + 2 * self.frameWidth() if body else 0
        return QSize(max(hint.width(), need, MIN_WIDTH), hint.height())

    def keep_name(self, reason: str) -> None:
        """The agent's name stays as it is (read-only), for `reason`, said under it."""
        field = self.fields.get(NAME_FIELD)
        if field is None or not isinstance(field.widget, QLineEdit):
            return
        field.widget.setReadOnly(True)
        field.widget.setToolTip(reason)
        self.name_note.setText(reason)
        self.name_note.show()

    def chain(self) -> list[QWidget]:
        """The fields and the model list's buttons in tab order."""
        chain: list[QWidget] = []
        for _, names in self.sections:
            for name in names:
                chain.append(self.fields[name].widget)
                if name == MODEL_FIELD:
                    chain += [self.models_button, self.browse_button]
        return chain
