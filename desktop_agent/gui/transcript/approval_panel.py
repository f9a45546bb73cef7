"""The answer buttons on a tool card that waits for the person, and its argument editor.

Why on the card: the person reads the call where it happens, with its
arguments right above, and answers there; the Approvals dock keeps the same
requests as a queue across tabs (both resolve one request). *Edit arguments*
opens the arguments as JSON to fix before allowing (a model's bad path or
command), so nobody has to find the dock for that. The panel only reports the
choice and each valid edit; the tab hands them to the approval queue, which
keeps one edit per request for the card and the dock alike.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase, QResizeEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.core.tooling.builtin.sandbox_warning import UNSANDBOXED_WARNING
from desktop_agent.gui.transcript.painted_panel import set_text_color
from desktop_agent.gui.transcript.theme import TranscriptTheme
from desktop_agent.gui.transcript.widget_style import muted_label, scaled_font

#: The answers, as the values of the approval queue's ``ApprovalChoice``.
ALLOW_ONCE = "allow_once"
ALLOW_CONVERSATION = "allow_conversation"
ALLOW_ALWAYS = "allow_always"
DENY = "deny"
#: Allow once, on an overlay first: its changes wait for Apply or Discard.
PREVIEW = "preview"


@dataclass(frozen=True)
class ApprovalPrompt:
    """What the card needs to ask: plain data, kept on the transcript item.

    Attributes:
        deadline: ``time.monotonic()`` at which the call is denied (None: never).
        can_remember: Whether "for this conversation" and "always" are offered.
        unsandboxed: The call would run with the account's full rights.
        plan: The call hands in a plan from plan mode: the answers approve it
            (asking before edits, or accepting them) instead of allowing a tool.
        agent: The subagent that asks (None: the conversation's own agent).
        arguments: The arguments Allow runs, as JSON: the model's, or the
            person's edit (on this card or in the dock).
        edited: Whether ``arguments`` are an edit (the editor then opens with them).
        can_preview: A command that may run on an overlay first (*Preview*).
    """

    deadline: float | None = None
    can_remember: bool = True
    unsandboxed: bool = False
    plan: bool = False
    agent: str | None = None
    arguments: str = ""
    edited: bool = False
    can_preview: bool = False


def parsed_arguments(text: str) -> tuple[dict[str, object] | None, str]:
    """The arguments in ``text``, or None and the sentence that says what is wrong."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, (f"The arguments are not valid JSON (line {exc.lineno}, column "
                      f"{exc.colno}: {exc.msg}). Fix them, or deny the call.")
    if not isinstance(value, dict):
        return None, "The arguments must be a JSON object ({ ... })."
    return value, ""


def format_countdown(seconds: float) -> str:
    """``m:ss`` rounded up, never negative."""
    whole = max(0, int(seconds + 0.999))
    return f"{whole // 60}:{whole % 60:02d}"


class ApprovalPanel(QWidget):
    """Countdown, optional unsandboxed warning, argument editor, reason field and four answers.

    A command that can be previewed gets a fifth, *Preview*: run it on a copy
    of the working folder first and decide on what it changed.

    Signals:
        answered(str, str): choice (``allow_once``... ``deny``, ``preview``) and the
            deny reason.
        arguments_edited(str): the edited arguments, as JSON, each time they are valid.
    """

    answered = Signal(str, str)
    arguments_edited = Signal(str)

    def __init__(self, prompt: ApprovalPrompt, theme: TranscriptTheme,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("approvalPanel")
        self._prompt = prompt
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 2)
        layout.setSpacing(6)
        self.warning = QLabel(UNSANDBOXED_WARNING[:1].upper() + UNSANDBOXED_WARNING[1:] + ".")
        self.warning.setObjectName("cardUnsandboxed")
        self.warning.setWordWrap(True)
        self.warning.setFont(scaled_font(self.warning, bold=True))
        set_text_color(self.warning, theme.error_text)
        self.warning.setVisible(prompt.unsandboxed)
        layout.addWidget(self.warning)
        self.asker = QLabel(f"Asked by the subagent “{prompt.agent}”" if prompt.agent else "")
        self.asker.setObjectName("approvalAgent")
        self.asker.setVisible(prompt.agent is not None)
        layout.addWidget(self.asker)

        self.countdown = QLabel()
        self.countdown.setObjectName("approvalCountdown")
        self.countdown.setFont(scaled_font(self.countdown, bold=True, scale=1.05))
        set_text_color(self.countdown, theme.accent)
        layout.addWidget(self.countdown)

        self.edit_button = QPushButton("Edit arguments", self)
        self.edit_button.setObjectName("editArguments")
        self.edit_button.setAccessibleName("Edit the arguments before allowing")
        self.edit_button.setToolTip("Change the arguments the call runs with (JSON), then "
                                    "allow it: the model is told what ran.")
        self.edit_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.edit_button.clicked.connect(lambda: self.open_editor(focus=True))
        edit_row = QHBoxLayout()
        edit_row.addWidget(self.edit_button)
        edit_row.addStretch(1)
        layout.addLayout(edit_row)
        self.editor_label = muted_label("Arguments to run (JSON): edit them, then allow",
                                        theme, self, bold=True, scale=0.85)
        self.editor_label.hide()
        layout.addWidget(self.editor_label)
        self.arguments_editor = QPlainTextEdit(self)
        self.arguments_editor.setObjectName("approvalArguments")
        self.arguments_editor.setAccessibleName("Arguments to run (JSON)")
        self.arguments_editor.setTabChangesFocus(True)
        self.arguments_editor.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.arguments_editor.setPlainText(prompt.arguments)
        lines = max(3, min(12, prompt.arguments.count("\n") + 2))
        self.arguments_editor.setFixedHeight(
            self.arguments_editor.fontMetrics().lineSpacing() * lines + 16)
        self.arguments_editor.textChanged.connect(self._arguments_changed)
        self.arguments_editor.hide()
        layout.addWidget(self.arguments_editor)
        self.json_error = QLabel(self)
        self.json_error.setObjectName("approvalJsonError")
        self.json_error.setWordWrap(True)
        set_text_color(self.json_error, theme.error_text)
        self.json_error.hide()
        layout.addWidget(self.json_error)
        if prompt.edited:
            self.open_editor(focus=False)

        self.reason = QLineEdit()
        self.reason.setPlaceholderText("Reason if you deny (optional, sent to the model)")
        self.reason.setAccessibleName("Reason for denying")
        self.reason.returnPressed.connect(lambda: self._answer(DENY))
        layout.addWidget(self.reason)

        plan = prompt.plan
        self.allow_button = self._button("Approve plan" if plan else "Allow once", ALLOW_ONCE,
                                         "primary")
        self.preview_button = self._button("Preview", PREVIEW)
        self.preview_button.setToolTip("Run it on a copy of the working folder first: you see "
                                       "what it would change, then Apply or Discard.")
        self.preview_button.setVisible(prompt.can_preview and not plan)
        self.allow_conversation_button = self._button(
            "Approve, accept edits" if plan else "Allow for this conversation",
            ALLOW_CONVERSATION)
        self.allow_always_button = self._button("Always allow", ALLOW_ALWAYS)
        self.deny_button = self._button("Deny", DENY, "danger")
        # One row where the card is wide enough; on a narrow card (a small window with
        # the dock open) the two remembering answers move to a second row, so no
        # button is cut off at the card's edge.
        self._first_row = QHBoxLayout()
        self._first_row.setSpacing(6)
        self._second_row = QHBoxLayout()
        self._second_row.setSpacing(6)
        self._first_row.addWidget(self.allow_button)
        if prompt.can_preview:
            self._first_row.addWidget(self.preview_button)
        self._first_row.addStretch(1)
        self._first_row.addWidget(self.deny_button)
        self._second_row.addStretch(1)
        self._two_rows: bool | None = None
        self.allow_conversation_button.setVisible(prompt.can_remember or plan)
        self.allow_always_button.setVisible(prompt.can_remember and not plan)
        layout.addLayout(self._first_row)
        layout.addLayout(self._second_row)
        self._arrange(two_rows=False)
        # Set, so the layout does not raise it to the one-row width: a narrow card
        # gets two rows instead of buttons cut off at its edge.
        preview_width = self.preview_button.sizeHint().width() if prompt.can_preview else 0
        self.setMinimumWidth(max(
            self.allow_button.sizeHint().width() + self.deny_button.sizeHint().width()
            + preview_width,
            self.allow_conversation_button.sizeHint().width()
            + self.allow_always_button.sizeHint().width()) + 3 * self._first_row.spacing())

        from desktop_agent.gui.theme import style_chrome

        style_chrome(self)  # a few widgets: the buttons read as one group, Allow stands out
        self._tick = QTimer(self)
        self._tick.setInterval(500)
        self._tick.timeout.connect(self._update_countdown)
        if prompt.deadline is not None:
            self._tick.start()
        self._update_countdown()

    def open_editor(self, *, focus: bool) -> None:
        """Show the arguments as editable JSON (the button that opens them goes)."""
        self.edit_button.hide()
        self.editor_label.show()
        self.arguments_editor.show()
        if focus:
            self.arguments_editor.setFocus()

    def show_arguments(self, text: str) -> None:
        """The arguments were edited elsewhere (the dock): show that edit here too."""
        current, _problem = parsed_arguments(self.arguments_editor.toPlainText())
        wanted, _ = parsed_arguments(text)
        if wanted is None or current == wanted:
            return  # the same call (perhaps written differently): leave the person's text
        self.arguments_editor.blockSignals(True)
        self.arguments_editor.setPlainText(text)
        self.arguments_editor.blockSignals(False)
        self.json_error.hide()
        self.open_editor(focus=False)

    def _arguments_changed(self) -> None:
        value, problem = parsed_arguments(self.arguments_editor.toPlainText())
        self.json_error.setText(problem)
        self.json_error.setVisible(bool(problem))
        if value is not None:
            self.arguments_edited.emit(json.dumps(value, ensure_ascii=False))

    @property
    def two_rows(self) -> bool:
        """Whether the answers take two rows (the card is too narrow for one)."""
        return bool(self._two_rows)

    def _one_row_width(self) -> int:
        """The width the four answers need side by side."""
        buttons = [self.allow_button, self.deny_button]
        if self._prompt.can_preview:
            buttons.append(self.preview_button)
        if self._prompt.can_remember:
            buttons += [self.allow_conversation_button, self.allow_always_button]
        spacing = self._first_row.spacing()
        return sum(b.sizeHint().width() for b in buttons) + spacing * (len(buttons) + 1)

    def _arrange(self, *, two_rows: bool) -> None:
        if two_rows == self._two_rows:
            return
        self._two_rows = two_rows
        remembering = (self.allow_conversation_button, self.allow_always_button)
        for button in remembering:
            self._first_row.removeWidget(button)
            self._second_row.removeWidget(button)
        if two_rows:
            for index, button in enumerate(remembering):
                self._second_row.insertWidget(index, button)
        else:
            start = 2 if self._prompt.can_preview else 1
            for index, button in enumerate(remembering, start=start):
                self._first_row.insertWidget(index, button)

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Put the answers on one row or two, as the card's width allows."""
        super().resizeEvent(event)
        self._arrange(two_rows=event.size().width() < self._one_row_width())

    def _button(self, text: str, choice: str, role: str = "") -> QPushButton:
        button = QPushButton(text, self)
        button.setAccessibleName(text)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        if role:
            button.setProperty("role", role)
        button.clicked.connect(lambda: self._answer(choice))
        return button

    def _update_countdown(self) -> None:
        deadline = self._prompt.deadline
        if deadline is None:
            self.countdown.setText("Waiting for your answer")
            return
        self.countdown.setText(
            f"Denied automatically in {format_countdown(deadline - time.monotonic())}")

    def _answer(self, choice: str) -> None:
        if not self.isEnabled():
            return
        if choice != DENY and not self.arguments_editor.isHidden():
            value, problem = parsed_arguments(self.arguments_editor.toPlainText())
            if value is None:  # nothing runs with arguments that cannot be read
                self.json_error.setText(problem)
                self.json_error.show()
                self.arguments_editor.setFocus()
                return
        self.setEnabled(False)
        self._tick.stop()
        self.answered.emit(choice, self.reason.text().strip() if choice == DENY else "")
