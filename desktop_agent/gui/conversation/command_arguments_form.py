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

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from PySide6.QtCore import QStringListModel, Qt, QTimer
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

log = logging.getLogger("desktop_agent.gui.command_arguments")

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
        self._task: asyncio.Task[None] | None = None
        self.inputs: dict[str, QLineEdit] = {}
        self.completers: dict[str, QCompleter] = {}
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
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SUGGEST_DELAY_MS)
        self._timer.timeout.connect(self._ask_suggestions)
        self._asking: str | None = None
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
        if self._suggest is not None:
            completer = QCompleter(QStringListModel(self), self)
            completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
            completer.setCompletionMode(QCompleter.CompletionMode.UnfilteredPopupCompletion)
            completer.setWidget(field)
            completer.activated.connect(field.setText)
            self.completers[argument.name] = completer
            field.textEdited.connect(lambda _text, name=argument.name: self._typed(name))
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

    def _typed(self, name: str) -> None:
        self._asking = name
        self._timer.start()

    def _ask_suggestions(self) -> None:
        name, suggest = self._asking, self._suggest
        if name is None or suggest is None:
            return
        if self._task is not None and not self._task.done():
            self._task.cancel()
        values = self.values()
        typed = values.pop(name)
        others = {k: v for k, v in values.items() if v}

        async def ask() -> None:
            try:
                found = await suggest(name, typed, others)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - suggestions must never break the form
                log.info("no suggestions for %s: %s", name, exc)
                return
            with contextlib.suppress(RuntimeError):  # the form may be gone
                self._show_suggestions(name, found)

        self._task = asyncio.ensure_future(ask())

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
        self._timer.stop()
        if self._task is not None:
            self._task.cancel()
