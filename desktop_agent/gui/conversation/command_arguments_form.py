"""The arguments of a ``/command`` or ``/server:prompt``, asked in a small form.

Typing ``name=value`` after a prompt's name works, but a person has to know the
names and which are required. When the chosen command has named arguments (an
MCP prompt's, or a command file's ``$1``... named by its ``argument-hint``) this
form asks for them: required ones first, marked with ``*``, each with what the
server says of it. For an MCP prompt the server's ``completion/complete``
suggestions are offered as one types (a :class:`QCompleter` under the field,
asked a moment after the last key). *Put in message* is enabled once every
required field holds something; the form's values then go to the session,
whose result is put in the composer to read before sending.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from PySide6.QtCore import QStringListModel
from PySide6.QtWidgets import (
    QCompleter,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.conversation.suggesting_field import SuggestingField

Suggest = Callable[[str, str, Mapping[str, str]], Awaitable[list[str]]]
"""Suggestions for (argument, value typed, the other values): the session's completion."""
#: Asked this long after the last key, so typing a word asks once, not per letter.
SUGGEST_DELAY_MS = 200


class CommandArgumentsForm(QDialog):
    """Asks for a command's arguments.

    Args:
        command: The ``/`` menu's entry (``name``, ``description``, ``arguments``).
        suggest: Suggestions for a field (None: the command offers none).
        parent: The conversation's tab.

    Attributes:
        inputs: The field of each argument, by name.
        completers: The suggestion list of each field, by name (prompts only).
    """

    def __init__(self, command: Any, suggest: Suggest | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("commandArguments")
        self.setWindowTitle(f"/{command.name}")
        self.command_name: str = command.name
        self._suggest = suggest
        self._required = [a.name for a in command.arguments if a.required]
        self.inputs: dict[str, QLineEdit] = {}
        self.completers: dict[str, QCompleter] = {}
        self._suggesting: list[SuggestingField] = []
        layout = QVBoxLayout(self)
        heading = QLabel(f"/{command.name}")  # the title bar may be far or absent
        heading.setObjectName("commandArgumentsName")
        font = heading.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        heading.setFont(font)
        layout.addWidget(heading)
        if command.description:
            about = QLabel(command.description)
            about.setWordWrap(True)
            about.setObjectName("commandArgumentsAbout")
            layout.addWidget(about)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        for argument in sorted(command.arguments, key=lambda a: not a.required):
            form.addRow(self._label(argument), self._field(argument))
        layout.addLayout(form)
        if self._required:
            note = QLabel("* required")
            note.setObjectName("commandArgumentsNote")
            note.setEnabled(False)  # the palette's muted text, in either theme
            layout.addWidget(note)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.ok_button = self.buttons.addButton("Put in message",
                                                QDialogButtonBox.ButtonRole.AcceptRole)
        self.ok_button.setDefault(True)
        cancel = self.buttons.button(QDialogButtonBox.StandardButton.Cancel)
        if cancel is not None:  # Enter in a field puts the values in, never cancels
            cancel.setAutoDefault(False)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.setMinimumWidth(420)
        self._update_ok()
        self.finished.connect(lambda _result: self._stop())

    def _label(self, argument: Any) -> QLabel:
        label = QLabel(f"{argument.name} *" if argument.required else argument.name)
        if argument.required:
            font = label.font()
            font.setBold(True)
            label.setFont(font)
        if argument.description:
            label.setToolTip(argument.description)
        return label

    def _field(self, argument: Any) -> QLineEdit:
        field = QLineEdit()
        field.setObjectName(f"argument:{argument.name}")
        field.setAccessibleName(argument.name)
        field.setPlaceholderText(argument.description or
                                 ("Required" if argument.required else "Optional"))
        field.setToolTip(argument.description or "")
        field.textChanged.connect(self._update_ok)
        self.inputs[argument.name] = field
        suggest = self._suggest
        if suggest is not None:
            name = argument.name
            suggesting = SuggestingField(
                field, lambda _text: self._ask(suggest, name),
                lambda found: self._show_suggestions(name, found), delay_ms=SUGGEST_DELAY_MS)
            completer = suggesting.completer
            completer.setWidget(field)
            completer.activated.connect(field.setText)
            self.completers[name] = completer
            self._suggesting.append(suggesting)
        return field

    def values(self) -> dict[str, str]:
        """What the fields hold, by argument name (empty ones too)."""
        return {name: field.text().strip() for name, field in self.inputs.items()}

    def suggestions(self, name: str) -> list[str]:
        """The suggestions last offered for ``name``."""
        completer = self.completers.get(name)
        model = completer.model() if completer is not None else None
        return model.stringList() if isinstance(model, QStringListModel) else []

    def _update_ok(self) -> None:
        values = self.values()
        self.ok_button.setEnabled(all(values[name] for name in self._required))

    def _ask(self, suggest: Suggest, name: str) -> Awaitable[list[str]]:
        """Suggestions for ``name`` as it reads now, the other values filled given as context."""
        values = self.values()
        typed = values.pop(name)
        return suggest(name, typed, {k: v for k, v in values.items() if v})

    def _show_suggestions(self, name: str, found: list[str]) -> None:
        completer = self.completers[name]
        model = completer.model()
        assert isinstance(model, QStringListModel)
        field = self.inputs[name]
        shown = [s for s in found if s != field.text()]
        model.setStringList(shown)
        if shown and self.isVisible() and self.focusWidget() is field:  # still typing there
            completer.complete()
        elif not shown and (popup := completer.popup()) is not None:
            popup.hide()

    def _stop(self) -> None:
        for suggesting in self._suggesting:
            suggesting.cancel()
