"""The "Approvals" dock: tool calls waiting for a person, from every tab.

It shows the queue, the selected request's conversation, tool and arguments
(formatted JSON the person may edit), and the four answers. It only displays
and resolves requests through the :class:`ApprovalQueue`; what an answer
means is up to the conversation's controller.

On a short screen (a 1024×640 window) a request with a diff shows the diff
first: the tool's description is hidden and its arguments are folded behind
their header (one click opens them; a JSON error opens them), so the diff gets
the room instead of three rows of it. Taller, everything shows.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase, QKeySequence, QResizeEvent, QShortcut
from PySide6.QtWidgets import (
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.core.tooling.builtin.sandbox_warning import UNSANDBOXED_WARNING
from desktop_agent.gui.approvals.approval_queue import (
    ApprovalChoice,
    ApprovalDecision,
    ApprovalQueue,
    ApprovalRequest,
    RequestState,
)
from desktop_agent.gui.approvals.fold_toggle import ElidedLabel, FoldToggle
from desktop_agent.gui.icons import icon, set_icon
from desktop_agent.gui.transcript.approval_panel import parsed_arguments
from desktop_agent.gui.transcript.frame_scheduler import FrameScheduler
from desktop_agent.gui.transcript.theme import TranscriptTheme

if TYPE_CHECKING:
    from desktop_agent.gui.transcript.diff_view import DiffView
    from desktop_agent.session import ChangePreview

log = logging.getLogger("desktop_agent.gui.approvals")

#: Quiet time after the last key in the arguments before their diff is worked out again.
PREVIEW_DELAY_MS = 300

#: Shorter than this (pixels), a request with a diff hides its description and folds its
#: arguments so that the diff gets the room (the dock at a 1024×640 window is ~530).
COMPACT_HEIGHT = 600

ALLOW_SHORTCUT = "Ctrl+Shift+Return"
DENY_SHORTCUT = "Ctrl+Shift+Backspace"


def _format_countdown(seconds: float) -> str:
    seconds = max(0, int(seconds + 0.999))
    return f"{seconds // 60}:{seconds % 60:02d}"


class ApprovalDock(QDockWidget):
    """Dockable panel listing approval requests.

    Signals:
        conversation_requested(str): The person clicked a request; show its conversation.
        answered(): A request was answered here (its button or shortcut).
    """

    conversation_requested = Signal(str)
    answered = Signal()

    def __init__(self, queue: ApprovalQueue, parent: QWidget | None = None) -> None:
        super().__init__("Approvals", parent)
        self.setObjectName("approvalsDock")
        self.setMinimumWidth(260)
        self._queue = queue
        self._items: dict[int, QListWidgetItem] = {}
        self._requests_by_number: dict[int, ApprovalRequest] = {}
        self._shown: ApprovalRequest | None = None
        self._preview_task: asyncio.Future[ChangePreview | None] | None = None
        self._scheduler = FrameScheduler(self)  # the diff's lines arrive a slice per frame
        self._preview_timer = QTimer(self)
        self._preview_timer.setSingleShot(True)
        self._preview_timer.setInterval(PREVIEW_DELAY_MS)
        self._preview_timer.timeout.connect(self._preview_edited)

        body = QWidget()
        outer = QVBoxLayout(body)
        outer.setContentsMargins(8, 8, 8, 8)
        self._stack = QStackedWidget()
        outer.addWidget(self._stack)

        empty = QLabel("No tool is waiting for approval.\n\nWhen a model asks to run a tool, "
                       "the request appears here.")
        empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        empty.setWordWrap(True)
        empty.setEnabled(False)
        self._stack.addWidget(empty)

        splitter = QSplitter(Qt.Orientation.Vertical)
        self._list = QListWidget()
        self._list.setObjectName("approvalList")
        self._list.setMinimumHeight(60)
        # Long titles end in "…" (the full text is the tooltip), not in a scroll bar.
        self._list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self._list.currentItemChanged.connect(self._on_current_changed)
        self._list.itemClicked.connect(self._on_clicked)
        splitter.addWidget(self._list)
        splitter.addWidget(self._build_detail())
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([64, 700])  # a few requests; the detail (and its diff) gets the room
        self._stack.addWidget(splitter)
        self.setWidget(body)

        self._tick = QTimer(self)
        self._tick.setInterval(500)
        self._tick.timeout.connect(self._update_countdown)

        # On the window, not the dock: the keys work while the dock is hidden (the
        # request is then answered on its card, which resolves the same request).
        QShortcut(QKeySequence(ALLOW_SHORTCUT), parent or self, self.allow_once,
                  context=Qt.ShortcutContext.WindowShortcut)
        QShortcut(QKeySequence(DENY_SHORTCUT), parent or self, self.deny,
                  context=Qt.ShortcutContext.WindowShortcut)

        queue.added.connect(self._on_added)
        queue.changed.connect(self._on_changed)
        queue.input_edited.connect(self._on_input_edited)
        queue.preview_changed.connect(self._on_preview_changed)
        for request in queue.requests():
            self._on_added(request)
        self._refresh_stack()

    # -- layout -------------------------------------------------------------

    def _build_detail(self) -> QWidget:
        detail = QWidget()
        layout = QVBoxLayout(detail)
        layout.setContentsMargins(0, 6, 0, 0)
        layout.setSpacing(6)
        self._title = QLabel()
        self._title.setTextFormat(Qt.TextFormat.RichText)
        self._title.setWordWrap(True)
        self._conversation = ElidedLabel()
        self._description = QLabel()
        self._description.setWordWrap(True)
        self._unsandboxed = QLabel(UNSANDBOXED_WARNING)
        self._unsandboxed.setObjectName("approvalUnsandboxed")
        self._unsandboxed.setWordWrap(True)
        self._unsandboxed.hide()
        self._state = QLabel()
        self._state.setWordWrap(True)
        self._state.setObjectName("approvalState")
        self._arguments = QPlainTextEdit()
        self._arguments.setObjectName("approvalArguments")
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self._arguments.setFont(mono)
        self._arguments.setMinimumHeight(self._arguments.fontMetrics().lineSpacing() * 3 + 12)
        self._arguments.setTabChangesFocus(True)
        self._arguments.textChanged.connect(self._validate_arguments)
        self._json_error = QLabel()
        self._json_error.setObjectName("approvalJsonError")
        self._json_error.setStyleSheet("color: #d9534f;")
        self._json_error.setWordWrap(True)
        self._json_error.hide()
        self._detail, self._detail_layout = detail, layout
        self._diff_view: DiffView | None = None  # made for the first request with a preview
        self._reason = QLineEdit()
        self._reason.setPlaceholderText("Reason for denying (optional, sent to the model)")
        self._reason.returnPressed.connect(self.deny)

        self.deny_button = QPushButton("&Deny")
        set_icon(self.deny_button, "ban")
        self.deny_button.setProperty("role", "danger")
        self.deny_button.setToolTip(f"Do not run the tool ({DENY_SHORTCUT})")
        self.deny_button.clicked.connect(self.deny)
        self.allow_button = QPushButton("&Allow once")
        set_icon(self.allow_button, "check", "accent_text")
        self.allow_button.setProperty("role", "primary")
        self.allow_button.setToolTip(f"Run the tool this time ({ALLOW_SHORTCUT})")
        self.allow_button.clicked.connect(self.allow_once)
        self.allow_conversation_button = QPushButton("Allow for this &conversation")
        self.allow_conversation_button.clicked.connect(self.allow_for_conversation)
        self.allow_always_button = QPushButton("Al&ways allow this tool")
        self.allow_always_button.setToolTip("Remember in the settings; revoke it there")
        self.allow_always_button.clicked.connect(self.allow_always)
        self.dismiss_button = QPushButton("Dis&miss")
        self.dismiss_button.clicked.connect(self._dismiss)

        row1 = QHBoxLayout()
        row1.addWidget(self.deny_button)
        row1.addStretch(1)
        row1.addWidget(self.allow_button)
        # Stacked, so the dock stays narrow enough to sit beside a 1024-pixel conversation.
        row2 = QVBoxLayout()
        row2.addWidget(self.allow_conversation_button)
        row2.addWidget(self.allow_always_button)
        row2.addWidget(self.dismiss_button)

        layout.addWidget(self._title)
        layout.addWidget(self._conversation)
        layout.addWidget(self._description)
        layout.addWidget(self._unsandboxed)
        self.arguments_toggle = FoldToggle("Arguments (JSON, editable before running)",
                                           self._arguments)
        layout.addWidget(self.arguments_toggle)
        layout.addWidget(self._arguments, 1)
        layout.addWidget(self._json_error)
        layout.addWidget(self._reason)
        layout.addWidget(self._state)
        layout.addLayout(row1)
        layout.addLayout(row2)
        return detail

    @property
    def diff_view(self) -> DiffView:
        """The diff of what a file-changing call would do, made when first needed.

        Why lazy: the dock is built with the window, and the diff view's modules
        and widgets are not an idle window's; the first request with a preview
        makes it, between the arguments and the reason, where it takes the room.
        """
        if self._diff_view is None:
            from desktop_agent.gui.transcript.diff_view import DiffView

            view = DiffView(TranscriptTheme.from_palette(self.palette()), self._scheduler,
                            self._detail, fill=True)
            self._detail_layout.insertWidget(self._detail_layout.indexOf(self._reason), view, 3)
            self._diff_view = view
        return self._diff_view

    # -- queue events -------------------------------------------------------

    def _on_added(self, request: ApprovalRequest) -> None:
        item = QListWidgetItem(self._item_text(request))
        item.setToolTip(self._item_text(request))
        item.setIcon(icon("circle-help"))
        item.setData(Qt.ItemDataRole.UserRole, request.number)
        self._list.addItem(item)
        self._items[request.number] = item
        self._requests_by_number[request.number] = request
        if self._shown is None or not self._shown.pending:
            self._list.setCurrentItem(item)
        self._refresh_stack()
        if request.timeout is not None and not self._tick.isActive():
            self._tick.start()

    def _on_changed(self, request: ApprovalRequest) -> None:
        item = self._items.get(request.number)
        if item is None:
            return
        if request.state is RequestState.EXPIRED:
            item.setText(self._item_text(request))
            item.setIcon(icon("triangle-alert"))
            if self._shown is request:
                self._show(request)
            return
        if request not in self._queue.requests():
            self._remove_item(request)

    def _on_preview_changed(self, request: ApprovalRequest) -> None:
        preview = request.preview
        if self._shown is request and preview is not None:
            self.diff_view.set_diff(preview.diff, preview.problem)
            self._fit_to_room()

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Fold or unfold the parts around the diff as the dock's height crosses the limit."""
        super().resizeEvent(event)
        self._fit_to_room()

    def _fit_to_room(self) -> None:
        """On a short dock, a diff comes before the description and the arguments."""
        request = self._shown
        if request is None:
            return
        diff = None if self._diff_view is None else self._diff_view.diff()
        compact = diff is not None and bool(diff.hunks) and self.height() < COMPACT_HEIGHT
        self._description.setVisible(bool(request.description) and not compact)
        if not self.arguments_toggle.touched and self._json_error.isHidden():
            self.arguments_toggle.set_open(not compact)

    def _remove_item(self, request: ApprovalRequest) -> None:
        item = self._items.pop(request.number, None)
        self._requests_by_number.pop(request.number, None)
        if item is not None:
            row = self._list.row(item)
            self._list.takeItem(row)
        if self._shown is request:
            self._shown = None
            self._select_next_pending()
        self._refresh_stack()

    def _select_next_pending(self) -> None:
        for i in range(self._list.count()):
            request = self._request_of(self._list.item(i))
            if request is not None and request.pending:
                self._list.setCurrentRow(i)
                return
        if self._list.count():
            self._list.setCurrentRow(0)

    def _request_of(self, item: QListWidgetItem | None) -> ApprovalRequest | None:
        if item is None:
            return None
        return self._requests_by_number.get(item.data(Qt.ItemDataRole.UserRole))

    def _refresh_stack(self) -> None:
        self._stack.setCurrentIndex(1 if self._list.count() else 0)
        if not any(r.pending and r.timeout is not None for r in self._queue.requests()):
            self._tick.stop()

    @staticmethod
    def _item_text(request: ApprovalRequest) -> str:
        prefix = "Expired · " if request.state is RequestState.EXPIRED else ""
        return f"{prefix}{request.tool_name} — {request.conversation_title}"

    def show_conversation(self, conversation_id: str) -> None:
        """Select the oldest pending request of a conversation (the visible tab's)."""
        for number, request in self._requests_by_number.items():
            if request.pending and request.conversation_id == conversation_id:
                self._list.setCurrentItem(self._items[number])
                return

    # -- detail -------------------------------------------------------------

    def _on_current_changed(self, current: QListWidgetItem | None, _previous: object) -> None:
        request = self._request_of(current)
        if request is not None:
            self._show(request)

    def _on_clicked(self, item: QListWidgetItem) -> None:
        request = self._request_of(item)
        if request is not None:
            self.conversation_requested.emit(request.conversation_id)

    def _show(self, request: ApprovalRequest) -> None:
        changed = self._shown is not request
        self._shown = request
        facts = [f for f in (request.source, "read-only" if request.read_only else None) if f]
        source = f" <span style='color:gray'>({_escape(' · '.join(facts))})</span>" \
            if facts else ""
        asker = (f" <span style='color:gray'>— asked by the subagent "
                 f"“{_escape(request.agent)}”</span>" if request.agent else "")
        self._title.setText(f"<b>{_escape(request.tool_name)}</b>{source}{asker}")
        self._conversation.set_full_text(f"Conversation: {request.conversation_title}")
        self._description.setText(request.description)
        self._description.setVisible(bool(request.description))
        if changed:
            self._preview_timer.stop()
            self._arguments.blockSignals(True)
            self._arguments.setPlainText(json.dumps(
                request.edited_input if request.edited_input is not None
                else request.tool_input, indent=2, ensure_ascii=False))
            self._arguments.blockSignals(False)
            self._json_error.hide()
            self._reason.clear()
            preview = request.preview
            if preview is not None or self._diff_view is not None:
                self.diff_view.set_diff(None if preview is None else preview.diff,
                                        None if preview is None else preview.problem)
            self.arguments_toggle.reset()
        pending = request.pending
        for widget in (self._arguments, self._reason, self.deny_button, self.allow_button,
                       self.allow_conversation_button, self.allow_always_button):
            widget.setEnabled(pending)
        self.dismiss_button.setVisible(not pending)
        self._unsandboxed.setVisible(request.unsandboxed)
        plan = request.is_plan
        self.allow_button.setText("&Approve plan" if plan else "&Allow once")
        self.allow_conversation_button.setText(
            "Approve, accept &edits" if plan else "Allow for this &conversation")
        self.allow_conversation_button.setVisible(request.can_remember or plan)
        self.allow_always_button.setVisible(request.can_remember and not plan)
        self._fit_to_room()
        self._update_countdown()

    def _update_countdown(self) -> None:
        request = self._shown
        if request is None:
            return
        if request.state is RequestState.EXPIRED:
            self._state.setText("Expired: no answer in time, so the tool was denied and "
                                "the model was told.")
            self._state.setStyleSheet("color: #d9534f; font-weight: bold;")
        elif request.deadline is not None:
            left = request.deadline - time.monotonic()
            self._state.setText(f"Denied automatically in {_format_countdown(left)} "
                                "if not answered.")
            self._state.setStyleSheet("")
        else:
            self._state.clear()

    def _validate_arguments(self) -> None:
        parsed = self._parsed_arguments()
        if parsed is not None and self._shown is not None:
            self._queue.edit(self._shown, parsed)  # the card shows (and runs) it too
            if self._shown.previewer is not None:
                self._preview_timer.start()

    def _on_input_edited(self, request: ApprovalRequest) -> None:
        """The arguments were edited on the request's card: show that edit here."""
        if request is not self._shown:
            return
        wanted = request.edited_input if request.edited_input is not None \
            else request.tool_input
        current, _problem = parsed_arguments(self._arguments.toPlainText())
        if current == wanted:
            return
        self._arguments.blockSignals(True)
        self._arguments.setPlainText(json.dumps(wanted, indent=2, ensure_ascii=False))
        self._arguments.blockSignals(False)
        self._json_error.hide()

    def _preview_edited(self) -> None:
        """Work out the diff of the edited arguments (in the session, off the loop)."""
        request = self._shown
        arguments = self._parsed_arguments()
        if request is None or request.previewer is None or arguments is None:
            return
        if self._preview_task is not None:
            self._preview_task.cancel()
        task: asyncio.Future[ChangePreview | None] = asyncio.ensure_future(
            request.previewer(arguments))
        self._preview_task = task

        def shown(done: asyncio.Future[ChangePreview | None]) -> None:
            if done.cancelled() or self._shown is not request:
                return
            preview = done.result() if done.exception() is None else None
            if preview is None:
                log.info("no diff for the edited arguments of %s", request.tool_name)
                return
            self._queue.set_preview(request, preview)  # the card follows through the queue

        task.add_done_callback(shown)

    def preview_pending(self) -> bool:
        """Whether a diff of edited arguments is being worked out (for tests and the UI)."""
        return self._preview_timer.isActive() or (
            self._preview_task is not None and not self._preview_task.done())

    def _parsed_arguments(self) -> dict[str, object] | None:
        """The edited arguments, or None (with a visible message) when they are not valid."""
        value, problem = parsed_arguments(self._arguments.toPlainText())
        if value is None:
            self._json_error.setText(problem)
            self._json_error.show()
            self.arguments_toggle.set_open(True)
            return None
        self._json_error.hide()
        return value

    # -- answers (also the keyboard shortcuts) -------------------------------

    def current_request(self) -> ApprovalRequest | None:
        """The request shown in the detail panel."""
        return self._shown

    def set_arguments_text(self, text: str) -> None:
        """Replace the argument editor's text (as if the person typed it)."""
        self._arguments.setPlainText(text)

    def set_reason(self, text: str) -> None:
        """Fill in the deny reason."""
        self._reason.setText(text)

    def json_error(self) -> str:
        """The visible message about invalid arguments ('' when they are valid)."""
        return self._json_error.text() if not self._json_error.isHidden() else ""

    def allow_once(self) -> bool:
        """Run the shown request's tool this time."""
        return self._answer(ApprovalChoice.ALLOW_ONCE)

    def allow_for_conversation(self) -> bool:
        """Run it, and this tool again in the same conversation without asking."""
        return self._answer(ApprovalChoice.ALLOW_CONVERSATION)

    def allow_always(self) -> bool:
        """Run it, and remember to always allow this tool."""
        return self._answer(ApprovalChoice.ALLOW_ALWAYS)

    def deny(self) -> bool:
        """Refuse the call; the reason (if any) goes to the model."""
        return self._answer(ApprovalChoice.DENY)

    def _answer(self, choice: ApprovalChoice) -> bool:
        request = self._shown
        if request is None or not request.pending:
            return False
        if not request.can_remember and choice in (ApprovalChoice.ALLOW_CONVERSATION,
                                                   ApprovalChoice.ALLOW_ALWAYS):
            return False  # not offered for unsandboxed calls
        updated = None
        if choice is not ApprovalChoice.DENY:
            parsed = self._parsed_arguments()
            if parsed is None:
                self._arguments.setFocus()
                return False
            if parsed != request.tool_input:
                updated = parsed
        decision = ApprovalDecision(choice, self._reason.text().strip(), updated)
        log.info("approval %s for %s", choice.value, request.tool_name)
        done = self._queue.answer(request, decision)
        if done:
            self.answered.emit()
        return done

    def _dismiss(self) -> None:
        if self._shown is not None and not self._shown.pending:
            self._queue.discard(self._shown)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
