"""A resource template's parameters, asked in a small form before its resource is read.

Each parameter is a line with suggestions from the server (``completion/complete``,
asked as the person types, the values already filled given as context); the
URI the values make is shown under the fields, so what is read is seen first.
The values are percent-encoded by the template's own expansion
(:meth:`~desktop_agent.core.tooling.mcp.mcp_items.McpResourceTemplate.expand`):
a ``../`` stays one segment of the server's URI, and nothing here reads a file.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING

from PySide6.QtCore import QStringListModel, Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.conversation.suggesting_field import SuggestingField
from desktop_agent.gui.theme import style_chrome

if TYPE_CHECKING:
    from desktop_agent.core.tooling.mcp.mcp_items import McpResourceTemplate

def _no_suggestions() -> tuple[type[Exception], ...]:
    """The failures that only mean the server has none (imported late: the window paints first)."""
    from desktop_agent.core.errors import AgentError
    from desktop_agent.session import NoMcpServers

    return (NoMcpServers, AgentError)


Complete = Callable[[str, tuple[str, str], str, str, Mapping[str, str] | None],
                    Awaitable[list[str]]]


class TemplateForm(QDialog):
    """Asks a template's parameters; emits the URI they make.

    Args:
        template: The resource template.
        complete: The session's ``complete_argument``.
        parent: The conversation page.

    Signals:
        chosen(str): The URI to read (OK clicked, every parameter filled).

    Attributes:
        fields: One line per parameter, by name.
        suggestions: The suggestions each line offers now, by name.
        uri: The URI the values make, shown as typed.
    """

    chosen = Signal(str)

    def __init__(self, template: McpResourceTemplate, complete: Complete,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        style_chrome(self)
        self.setObjectName("templateForm")
        self.setWindowTitle(f"{template.server}: {template.title or template.name}")
        self._template = template
        self._complete = complete
        self._suggesting: dict[str, SuggestingField] = {}
        layout = QVBoxLayout(self)
        if template.description:
            about = QLabel(template.description)
            about.setWordWrap(True)
            layout.addWidget(about)
        form = QFormLayout()
        self.fields: dict[str, QLineEdit] = {}
        self.suggestions: dict[str, QStringListModel] = {}
        for name in template.parameters:
            line = QLineEdit()
            line.setObjectName(f"templateField_{name}")
            line.setPlaceholderText("type for suggestions from the server")
            suggesting = SuggestingField(line, partial(self._ask, name),
                                         partial(self._show_suggestions, name),
                                         quiet=_no_suggestions)
            line.setCompleter(suggesting.completer)
            line.textChanged.connect(lambda _t: self._show_uri())
            self.fields[name] = line
            self.suggestions[name] = suggesting.model
            self._suggesting[name] = suggesting
            form.addRow(name, line)
        layout.addLayout(form)
        self.uri = QLabel()
        self.uri.setObjectName("templateUri")
        self.uri.setProperty("muted", True)
        self.uri.setWordWrap(True)
        self.uri.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.uri)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setText("Attach")
        self.buttons.accepted.connect(self._accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self._show_uri()
        self.resize(max(420, self.sizeHint().width()), self.sizeHint().height())

    def values(self) -> dict[str, str]:
        """The parameters as typed (blanks stripped)."""
        return {name: line.text().strip() for name, line in self.fields.items()}

    def _show_uri(self) -> None:
        values = self.values()
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setEnabled(all(values.values()))
        self.uri.setText(f"Reads {self._template.expand(values)}")

    def _ask(self, name: str, text: str) -> Awaitable[list[str]]:
        """The server's suggestions for ``name``, the other values filled given as context."""
        context = {k: v for k, v in self.values().items() if v and k != name}
        return self._complete(self._template.server, ("template", self._template.uri_template),
                              name, text, context or None)

    def _show_suggestions(self, name: str, found: list[str]) -> None:
        self.suggestions[name].setStringList(found)
        line = self.fields[name]
        if found and line.hasFocus():
            line.completer().complete()

    def _accept(self) -> None:
        values = self.values()
        if not all(values.values()):
            return
        self.chosen.emit(self._template.expand(values))
        self.accept()

    def done(self, result: int) -> None:
        """Stop asking for suggestions when the form closes."""
        for suggesting in self._suggesting.values():
            suggesting.cancel()
        super().done(result)
