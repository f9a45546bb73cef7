"""An MCP server's question to the person: run the model (sampling) or fill a form.

Shown beside the conversation (not modal: the window stays usable) and answered
through the session, as the REST routes answer them. Sampling shows which
server asks, its messages and the most tokens, with *Allow once*, *Allow for
this server* and *Deny*. A form shows the schema's fields with their limits
(text, numbers, a switch, one or several choices); values the session finds
wrong are said under the form, which stays open. A link (URL elicitation) is
shown and opened only on a click. Closing the dialog denies or cancels; a
question that expired or whose turn stopped closes it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.session import UnknownQuestion

log = logging.getLogger("desktop_agent.gui.server_question")

Answer = Callable[..., None]
"""The session's ``answer_sampling`` or ``answer_elicitation``."""


class ServerQuestionDialog(QDialog):
    """One open question of a server.

    Args:
        question: The session's question (``id``, ``kind``, ``to_dict()``).
        answer_sampling: Answers a sampling question (id, choice).
        answer_elicitation: Answers a form (id, action, values).
        parent: The conversation's tab.
    """

    def __init__(self, question: Any, answer_sampling: Answer, answer_elicitation: Answer,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.question_id: str = question.id
        self._kind: str = question.kind
        self._answer_sampling = answer_sampling
        self._answer_elicitation = answer_elicitation
        self._answered = False
        self.inputs: dict[str, QWidget] = {}
        self._fields: list[Mapping[str, Any]] = []
        shown = question.to_dict()
        self.setObjectName("serverQuestion")
        self.setModal(False)
        layout = QVBoxLayout(self)
        self.problem = QLabel()
        self.problem.setObjectName("serverQuestionProblem")
        self.problem.setWordWrap(True)
        self.problem.hide()
        self.buttons = QDialogButtonBox()
        if self._kind == "sampling":
            self._sampling(layout, shown)
        else:
            self._elicitation(layout, shown)
        layout.addWidget(self.problem)
        layout.addWidget(self.buttons)
        self.setMinimumWidth(460)

    # -- sampling ----------------------------------------------------------------------
    def _sampling(self, layout: QVBoxLayout, shown: Mapping[str, Any]) -> None:
        self.setWindowTitle(f"{shown['server']} asks to use the model")
        intro = QLabel(f"The MCP server <b>{_escape(shown['server'])}</b> asks the "
                       f"conversation's model to answer (at most {shown['max_tokens']} "
                       "tokens, no tools).")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        text = QPlainTextEdit()
        text.setReadOnly(True)
        parts = [f"System: {shown['system_prompt']}"] if shown.get("system_prompt") else []
        parts += [f"{m['role'].capitalize()}: {m['text']}" for m in shown["messages"]]
        text.setPlainText("\n\n".join(parts))
        text.setObjectName("samplingMessages")
        layout.addWidget(text)
        for label, choice, role in (("Allow once", "allow_once",
                                     QDialogButtonBox.ButtonRole.AcceptRole),
                                    ("Allow for this server", "allow_server",
                                     QDialogButtonBox.ButtonRole.AcceptRole),
                                    ("Deny", "deny", QDialogButtonBox.ButtonRole.RejectRole)):
            button = self.buttons.addButton(label, role)
            button.clicked.connect(lambda _c=False, c=choice: self.answer(c))

    # -- elicitation -------------------------------------------------------------------
    def _elicitation(self, layout: QVBoxLayout, shown: Mapping[str, Any]) -> None:
        self.setWindowTitle(f"{shown['server']} asks for information")
        message = QLabel(_escape(shown.get("message") or ""))
        message.setWordWrap(True)
        layout.addWidget(message)
        if shown.get("mode") == "url":
            link = QLabel(_escape(shown.get("url") or ""))
            link.setObjectName("elicitationUrl")
            link.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            layout.addWidget(link)
            opener = QPushButton("Open the link")
            opener.clicked.connect(lambda: QDesktopServices.openUrl(QUrl(shown["url"])))
            layout.addWidget(opener)
        else:
            form = QFormLayout()
            self._fields = list(shown.get("fields") or [])
            for spec in self._fields:
                widget = _input_for(spec)
                widget.setToolTip(spec.get("description") or "")
                self.inputs[spec["name"]] = widget
                label = spec.get("title") or spec["name"]
                form.addRow(f"{label}{' *' if spec.get('required') else ''}", widget)
            layout.addLayout(form)
        for label, action, role in (("Accept", "accept", QDialogButtonBox.ButtonRole.AcceptRole),
                                    ("Decline", "decline",
                                     QDialogButtonBox.ButtonRole.RejectRole),
                                    ("Cancel", "cancel", QDialogButtonBox.ButtonRole.RejectRole)):
            button = self.buttons.addButton(label, role)
            button.clicked.connect(lambda _c=False, a=action: self.answer(a))

    def values(self) -> dict[str, Any]:
        """The form's values as typed (empty optional fields left out)."""
        found: dict[str, Any] = {}
        for spec in self._fields:
            value = _value_of(spec, self.inputs[spec["name"]])
            if value is not None:
                found[spec["name"]] = value
        return found

    # -- answering ---------------------------------------------------------------------
    def answer(self, choice: str) -> None:
        """Give ``choice`` (a sampling choice or a form action) to the session."""
        try:
            if self._kind == "sampling":
                self._answer_sampling(self.question_id, choice)
            else:
                self._answer_elicitation(self.question_id, choice,
                                         self.values() if choice == "accept" else None)
        except ValueError as exc:  # a wrong value: say it, keep the form open
            self.problem.setText(str(exc))
            self.problem.show()
            return
        except UnknownQuestion:  # settled meanwhile (it expired, the turn stopped)
            log.info("question %s was settled before the answer", self.question_id)
        self._answered = True
        self.close()

    def settled(self) -> None:
        """The session ended the question (expired, withdrawn): close without answering."""
        self._answered = True
        self.close()

    def done(self, result: int) -> None:
        """Closing the dialog (Esc, the title bar) denies or cancels."""
        if not self._answered:
            self._answered = True
            try:
                if self._kind == "sampling":
                    self._answer_sampling(self.question_id, "deny")
                else:
                    self._answer_elicitation(self.question_id, "cancel", None)
            except Exception as exc:  # noqa: BLE001 - settled meanwhile: nothing to answer
                log.info("question %s: %s", self.question_id, exc)
        super().done(result)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _input_for(spec: Mapping[str, Any]) -> QWidget:
    kind = spec["kind"]
    default = spec.get("default")
    if kind == "boolean":
        box = QCheckBox()
        box.setChecked(bool(default))
        return box
    if kind in ("integer", "number"):
        spin: QSpinBox | QDoubleSpinBox = QSpinBox() if kind == "integer" else QDoubleSpinBox()
        low = spec.get("minimum")
        high = spec.get("maximum")
        if isinstance(spin, QSpinBox):
            spin.setRange(int(low) if low is not None else -2**31,
                          int(high) if high is not None else 2**31 - 1)
        else:
            spin.setDecimals(4)
            spin.setRange(low if low is not None else -1e12, high if high is not None else 1e12)
        if isinstance(default, int | float) and not isinstance(default, bool):
            spin.setValue(default)  # type: ignore[arg-type]
        spin.setSpecialValueText("")
        return spin
    if kind == "choice":
        combo = QComboBox()
        if not spec.get("required"):
            combo.addItem("", None)
        for value, label in spec.get("options") or []:
            combo.addItem(label, value)
        if default is not None:
            combo.setCurrentIndex(max(0, combo.findData(default)))
        return combo
    if kind == "choices":
        listing = QListWidget()
        for value, label in spec.get("options") or []:
            item = QListWidgetItem(label)
            item.setData(Qt.ItemDataRole.UserRole, value)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if isinstance(default, list)
                               and value in default else Qt.CheckState.Unchecked)
            listing.addItem(item)
        listing.setMaximumHeight(110)
        return listing
    line = QLineEdit()
    if spec.get("max_length"):
        line.setMaxLength(int(spec["max_length"]))
    if spec.get("format"):
        line.setPlaceholderText(str(spec["format"]))
    if isinstance(default, str):
        line.setText(default)
    return line


def _value_of(spec: Mapping[str, Any], widget: QWidget) -> Any:
    if isinstance(widget, QCheckBox):
        return widget.isChecked()
    if isinstance(widget, QSpinBox | QDoubleSpinBox):
        return widget.value()
    if isinstance(widget, QComboBox):
        return widget.currentData()
    if isinstance(widget, QListWidget):
        picked = [widget.item(i).data(Qt.ItemDataRole.UserRole) for i in range(widget.count())
                  if widget.item(i).checkState() == Qt.CheckState.Checked]
        return picked if picked or spec.get("required") else None
    if isinstance(widget, QLineEdit):
        return widget.text() or None
    return None
