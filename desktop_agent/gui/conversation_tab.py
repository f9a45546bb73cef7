"""One conversation's page: transcript, composer, and status line.

The tab wires its controller's signals to the transcript and its buttons to
the controller; it decides nothing itself.
"""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from .approval_queue import ApprovalChoice, ApprovalDecision, ApprovalRequest
from .conversation_controller import ConversationController
from .status_line import StatusLine
from .transcript import TranscriptView

MIN_LINES = 2
MAX_LINES = 8


class Composer(QPlainTextEdit):
    """The message box: Enter sends, Shift+Enter starts a new line.

    Signals:
        submitted(): The person pressed Enter.
        stop_requested(): The person pressed Esc.
    """

    submitted = Signal()
    stop_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("composer")
        self.setPlaceholderText("Message the model — Enter to send, Shift+Enter for a new line")
        self.setTabChangesFocus(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.document().contentsChanged.connect(self._fit_height)
        self._fit_height()

    def _fit_height(self) -> None:
        """Grow with the text from two to eight lines, then scroll."""
        lines = max(MIN_LINES, min(MAX_LINES, int(self.document().size().height())))
        margins = self.contentsMargins()
        extra = int(2 * self.document().documentMargin()) + margins.top() + margins.bottom()
        self.setFixedHeight(lines * self.fontMetrics().lineSpacing() + extra + 4)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Send on Enter unless Shift (or an input method) asks for a new line."""
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not (
                event.modifiers() & Qt.KeyboardModifier.ShiftModifier):
            self.submitted.emit()
            return
        if event.key() == Qt.Key.Key_Escape:
            self.stop_requested.emit()
            return
        super().keyPressEvent(event)


class ServerNotice(QFrame):
    """A banner above the transcript when no model can be used yet.

    Signals:
        choose_server(): "Choose server…" was clicked.
        retry(): "Retry" (search for servers again) was clicked.
        enter_url(): "Enter URL…" was clicked.
    """

    choose_server = Signal()
    retry = Signal()
    enter_url = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("serverNotice")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 8)
        icon = QLabel()
        icon.setPixmap(self.style().standardIcon(
            QStyle.StandardPixmap.SP_MessageBoxInformation).pixmap(24, 24))
        layout.addWidget(icon)
        self.message = QLabel()
        self.message.setWordWrap(True)
        layout.addWidget(self.message, 1)
        self.retry_button = QPushButton(self.style().standardIcon(
            QStyle.StandardPixmap.SP_BrowserReload), "Retry")
        self.retry_button.clicked.connect(self.retry)
        self.url_button = QPushButton("Enter URL…")
        self.url_button.clicked.connect(self.enter_url)
        self.choose_button = QPushButton("Choose server…")
        self.choose_button.clicked.connect(self.choose_server)
        for button in (self.retry_button, self.url_button, self.choose_button):
            layout.addWidget(button)

    def show_state(self, state: str) -> None:
        """``searching``, ``nothing_running``, ``choose`` or ``hidden``."""
        texts = {
            "searching": "Looking for model servers on this computer…",
            "nothing_running": "No model server is running. Start LM Studio, Ollama, llama.cpp "
                               "or vLLM and press Retry, or enter the URL of an "
                               "OpenAI-compatible server.",
            "choose": "Choose a server and a model for this conversation.",
        }
        if state not in texts:
            self.hide()
            return
        self.message.setText(texts[state])
        self.retry_button.setVisible(state == "nothing_running")
        self.url_button.setVisible(state == "nothing_running")
        self.choose_button.setVisible(state == "choose")
        self.show()


class ConversationTab(QWidget):
    """The widgets of one conversation, driven by its controller.

    Signals:
        choose_server_requested(): The person wants the server picker.
        retry_discovery_requested(): Search for servers again.
        enter_url_requested(): Open the picker with the URL field focused.
    """

    choose_server_requested = Signal()
    retry_discovery_requested = Signal()
    enter_url_requested = Signal()

    def __init__(self, controller: ConversationController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)

        self.notice = ServerNotice()
        self.notice.choose_server.connect(self.choose_server_requested)
        self.notice.retry.connect(self.retry_discovery_requested)
        self.notice.enter_url.connect(self.enter_url_requested)
        self.notice.hide()
        layout.addWidget(self.notice)

        self.transcript = TranscriptView()
        self.empty_hint = QLabel()
        self.empty_hint.setObjectName("emptyConversationHint")
        self.empty_hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_hint.setWordWrap(True)
        self.empty_hint.setEnabled(False)
        self._pages = QStackedWidget()
        self._pages.addWidget(self.empty_hint)
        self._pages.addWidget(self.transcript)
        layout.addWidget(self._pages, 1)

        bottom = QWidget()
        bottom_layout = QHBoxLayout(bottom)
        bottom_layout.setContentsMargins(8, 8, 8, 4)
        bottom_layout.setSpacing(6)
        self.composer = Composer()
        self.composer.submitted.connect(self.send)
        self.composer.stop_requested.connect(controller.stop)
        bottom_layout.addWidget(self.composer, 1)
        buttons = QVBoxLayout()
        style = self.style()
        self.send_button = QPushButton(style.standardIcon(QStyle.StandardPixmap.SP_ArrowRight),
                                       "Send")
        self.send_button.setToolTip("Send (Enter)")
        self.send_button.clicked.connect(self.send)
        self.stop_button = QPushButton(style.standardIcon(QStyle.StandardPixmap.SP_MediaStop),
                                       "Stop")
        self.stop_button.setToolTip("Stop the reply (Esc)")
        self.stop_button.clicked.connect(controller.stop)
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        buttons.addStretch(1)
        bottom_layout.addLayout(buttons)
        layout.addWidget(bottom)

        self.status_line = StatusLine()
        layout.addWidget(self.status_line)

        stop = QShortcut(QKeySequence(Qt.Key.Key_Escape), self, controller.stop)
        stop.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)

        self._connect(controller)
        self.transcript.load_messages(controller.stored_messages())
        self._update_empty_hint()
        self.status_line.show_figures(controller.figures)
        self._on_busy(controller.busy)

    def _show_waiting_for_approval(self, request: ApprovalRequest) -> None:
        """The call's card says it waits for the dock, then that it runs once allowed."""
        self.transcript.set_tool_status(request.tool_use_id, "waiting for approval")

        def answered(future: asyncio.Future[ApprovalDecision]) -> None:
            if not future.cancelled() and future.exception() is None \
                    and future.result().choice is not ApprovalChoice.DENY:
                self.transcript.set_tool_status(request.tool_use_id, "running…")

        request.future.add_done_callback(answered)

    def _connect(self, c: ConversationController) -> None:
        t = self.transcript
        c.transcript_reset.connect(t.load_messages)
        c.user_message.connect(lambda text, mid: t.add_user_message(text, message_id=mid))
        c.assistant_started.connect(lambda mid: t.begin_assistant_message(message_id=mid))
        c.text_delta.connect(t.append_text)
        c.thinking_delta.connect(t.append_thinking)
        c.tool_call.connect(lambda tid, name, args, source: t.add_tool_call(
            tid, name, args, source=source))
        c.tool_result.connect(lambda tid, content, is_error: t.set_tool_result(
            tid, content, is_error=is_error))
        c.tool_input_changed.connect(t.set_tool_input)
        c.tool_progress.connect(t.set_tool_status)
        c.tool_error.connect(lambda text, tid: t.add_tool_error(text, tool_use_id=tid))
        c.approval_requested.connect(self._show_waiting_for_approval)
        c.assistant_finished.connect(lambda interrupted: t.end_assistant_message(
            interrupted=interrupted))
        c.error.connect(lambda text, retry: t.add_error(text, retry=retry))
        c.busy_changed.connect(self._on_busy)
        c.busy_changed.connect(lambda _b: self._update_empty_hint())
        c.settings_changed.connect(lambda _s: self._update_empty_hint())
        c.transcript_reset.connect(lambda _m: self._update_empty_hint())
        c.user_message.connect(lambda _t, _m: self._update_empty_hint())
        c.error.connect(lambda _t, _r: self._update_empty_hint())
        c.figures_changed.connect(self.status_line.show_figures)
        t.retry_requested.connect(c.retry)
        t.regenerate_requested.connect(c.regenerate)
        t.edit_requested.connect(c.edit_and_resend)

    def send(self) -> None:
        """Hand the composer's text to the controller; clear it if it was taken."""
        if self.controller.send(self.composer.toPlainText()):
            self.composer.clear()

    def _update_empty_hint(self) -> None:
        """A new conversation shows what to do instead of an empty page."""
        empty = not self.transcript.item_keys() and not self.controller.busy
        if empty:
            model = self.controller.settings.get("model")
            self.empty_hint.setText(
                f"Start the conversation with {model}.\n\nType a message below and press "
                "Enter. Tool calls wait for your approval in the Approvals panel."
                if model else "Choose a server and a model, then type a message below.")
        self._pages.setCurrentWidget(self.empty_hint if empty else self.transcript)

    def _on_busy(self, busy: bool) -> None:
        self.stop_button.setEnabled(busy)
        self.send_button.setEnabled(not busy)

    def focus_composer(self) -> None:
        """Put the cursor in the message box."""
        self.composer.setFocus()
