"""One conversation's page: transcript, composer, and status line.

The tab wires its controller's signals to the transcript and its buttons to
the controller; it decides nothing itself. A tab restored in the background
makes its widgets (``tab_parts.py``) only when it is first shown or needed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QPalette, QShortcut, QShowEvent
from PySide6.QtWidgets import QLabel, QToolButton, QVBoxLayout, QWidget

from desktop_agent.gui.approvals.approval_queue import (
    ApprovalChoice,
    ApprovalDecision,
    ApprovalQueue,
    ApprovalRequest,
    RequestState,
)
from desktop_agent.gui.conversation.attachments import (
    Attachment,
    AttachmentError,
    message_content,
    read_attachment,
    shown_text,
)
from desktop_agent.gui.conversation.card_edits import CardEdits, card_prompt
from desktop_agent.gui.conversation.composer import Composer, ComposerBox
from desktop_agent.gui.conversation.context_window_banner import ContextWindowBanner
from desktop_agent.gui.conversation.conversation_controller import (
    ConversationController,
)
from desktop_agent.gui.conversation.conversation_header import ConversationHeader
from desktop_agent.gui.conversation.doctor_banner import DoctorBanner
from desktop_agent.gui.conversation.file_mentions import FileMentions
from desktop_agent.gui.conversation.files_changed_bar import FilesChangedBar
from desktop_agent.gui.conversation.resource_mentions import ResourceAttaching
from desktop_agent.gui.conversation.server_notice import ServerNotice
from desktop_agent.gui.conversation.server_question_dialog import ServerQuestionDialog
from desktop_agent.gui.conversation.slash_menu import SlashMenu
from desktop_agent.gui.conversation.status_line import StatusLine, waiting_text
from desktop_agent.gui.conversation.tab_commands import TabCommands
from desktop_agent.gui.conversation.tab_parts import TabParts
from desktop_agent.gui.conversation.tab_undo import TabUndo
from desktop_agent.gui.loop_work import when_loop_runs
from desktop_agent.gui.transcript import TranscriptView

if TYPE_CHECKING:
    from desktop_agent.gui.conversation.plan_panel import PlanPanel
    from desktop_agent.session import TurnChanges

__all__ = ["Composer", "ConversationTab", "ServerNotice"]

class ConversationTab(QWidget):
    """The widgets of one conversation, driven by its controller.

    Layout: the header (model, folder, sandbox, network) on top; the transcript
    as the main surface; the rounded composer and the status line below it,
    centred in the same reading column as the messages.

    Signals:
        choose_server_requested(): The person wants the server picker.
        retry_discovery_requested(): Search for servers again.
        enter_url_requested(): Open the picker with the URL field focused.
        run_local_requested(): The person wants to run a model on this computer.
        restart_engine_requested(): Run the stopped model of this computer again.
        branch_requested(str, int): Show another version of this message (key, -1/+1).
        new_conversation_requested(): ``/clear``: a new conversation in this folder.
    """

    branch_requested = Signal(str, int)
    choose_server_requested = Signal()
    retry_discovery_requested = Signal()
    enter_url_requested = Signal()
    run_local_requested = Signal()
    restart_engine_requested = Signal()
    new_conversation_requested = Signal()

    def __init__(self, controller: ConversationController,
                 approvals: ApprovalQueue | None = None, parent: QWidget | None = None, *,
                 lazy: bool = False) -> None:
        """Make the page; with ``lazy``, its widgets wait until the tab is first needed.

        Why lazy: a tab restored in the background is often never looked at in a
        session. Its widgets (header, composer, transcript: ~50) cost 0.57 MB of
        RSS before it is shown; left unmade, the tab costs 0.07 MB
        (``bench/tab_memory.py``), and a window restoring five tabs, one shown,
        idles 1.9 MiB smaller (``bench/startup.py``, a model server answering).
        They are made when the tab is first shown, when its conversation starts a
        turn, reports an error, asks for an approval or changes files, or when
        anything asks for one of them.
        """
        super().__init__(parent)
        self.controller = controller
        self._approvals = approvals
        self._requests: dict[str, ApprovalRequest] = {}
        self._card_edits = CardEdits(approvals, self._requests, self)
        if approvals is not None:  # an edit in the dock shows on the card
            approvals.input_edited.connect(self._show_edited_input)
        self.setObjectName("conversationPage")
        self.setBackgroundRole(QPalette.ColorRole.Base)  # the reading surface, edge to edge
        self.setAutoFillBackground(True)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(0)
        self._parts: TabParts | None = None
        self._when_built: list[Callable[[], None]] = []
        #: Open MCP server questions (sampling, forms), by id.
        self.server_questions: dict[str, ServerQuestionDialog] = {}
        self.attachments: list[Attachment] = []
        self._waiting_since: float | None = None
        self._progress: tuple[int, int] | None = None
        self._loading: str | None = None  # the model on this computer loading for the turn
        self._loaded = False
        # What needs the widgets of a tab that has none yet (the widgets' own
        # connections, made with them, miss the signal that made them).
        controller.busy_changed.connect(self._needed)
        controller.user_message.connect(self._needed)  # the store holds the message already
        controller.error.connect(self._error_before_built)
        controller.approval_requested.connect(self._approval_before_built)
        controller.undo.files_changed.connect(self._files_changed_before_built)
        if not lazy:
            self.ensure_loaded()

    # -- the widgets, made when first needed ----------------------------------------------

    @property
    def built(self) -> bool:
        """Whether the tab's widgets exist (a background tab has none until needed)."""
        return self._parts is not None

    def when_built(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the tab's widgets exist (now, if they do)."""
        if self._parts is not None:
            callback()
        else:
            self._when_built.append(callback)

    def _built_parts(self) -> TabParts:
        if self._parts is None:
            self._build()
        assert self._parts is not None
        return self._parts

    @property
    def header(self) -> ConversationHeader:
        """Model, folder, sandbox and network of the conversation."""
        return self._built_parts().header

    @property
    def notice(self) -> ServerNotice:
        """The "no server yet" banner."""
        return self._built_parts().notice

    @property
    def doctor(self) -> DoctorBanner:
        """The model doctor's banner (a template without tools, a slow prompt)."""
        return self._built_parts().doctor

    @property
    def transcript(self) -> TranscriptView:
        """The messages."""
        return self._built_parts().transcript

    @property
    def empty_hint(self) -> QLabel:
        """What to do in an empty conversation."""
        return self._built_parts().empty_hint

    @property
    def files_bar(self) -> FilesChangedBar:
        """What the last turn changed in the folder, with Undo."""
        return self._built_parts().files_bar

    @property
    def undo_actions(self) -> TabUndo:
        """Undo this turn, Restore files… and the Files changed window."""
        self._built_parts()
        return self._undo

    @property
    def plan_panel(self) -> PlanPanel:
        """The model's plan."""
        return self._built_parts().plan_panel

    @property
    def composer_box(self) -> ComposerBox:
        """The message box with its buttons and attachments."""
        return self._built_parts().composer_box

    @property
    def composer(self) -> Composer:
        """The text field of the message box."""
        return self.composer_box.text

    @property
    def send_button(self) -> QToolButton:
        """Send."""
        return self.composer_box.send_button

    @property
    def stop_button(self) -> QToolButton:
        """Stop the turn."""
        return self.composer_box.stop_button

    @property
    def status_line(self) -> StatusLine:
        """Context use, figures and "Processing prompt…"."""
        return self._built_parts().status_line

    @property
    def file_mentions(self) -> FileMentions:
        """The "@file" completion of the message box."""
        self._built_parts()
        return self._file_mentions

    @property
    def slash_menu(self) -> SlashMenu:
        """The "/command" completion of the message box."""
        self._built_parts()
        return self._slash_menu

    @property
    def slash_commands(self) -> TabCommands:
        """What a "/command" sent does: built-ins, the argument form, the expansion."""
        self._built_parts()
        return self._commands

    def _build(self) -> None:
        """Make the widgets, wire them to the controller and show its state now."""
        controller = self.controller
        parts = self._parts = TabParts(self._layout)
        parts.notice.choose_server.connect(self.choose_server_requested)
        parts.notice.retry.connect(self.retry_discovery_requested)
        parts.notice.enter_url.connect(self.enter_url_requested)
        parts.notice.run_local.connect(self.run_local_requested)
        parts.notice.restart_engine.connect(self.restart_engine_requested)
        box = parts.composer_box
        box.send_requested.connect(self.send)
        box.stop_requested.connect(controller.stop)
        box.files_added.connect(self.attach_files)
        box.attachment_removed.connect(self._remove_attachment)
        self._file_mentions = FileMentions(box.text, controller.work_folder,
                                           controller.session.mcp_resources)
        self._file_mentions.file_chosen.connect(lambda path: self.attach_files([path]))
        self.resource_attaching = ResourceAttaching(self, controller.session,
                                                    self.add_attachments, self._say_problem)
        self._file_mentions.resource_chosen.connect(self.resource_attaching.choose)
        self._slash_menu = SlashMenu(box.text, controller.session.slash_commands)
        controller.server_question.connect(self._show_server_question)
        controller.server_question_settled.connect(self._server_question_settled)
        box.text.completing = lambda: (self._file_mentions.is_open()
                                       or self._slash_menu.is_open())
        stop = QShortcut(QKeySequence(Qt.Key.Key_Escape), self, controller.stop)
        stop.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self._waiting_timer = QTimer(self)
        self._waiting_timer.setInterval(250)
        self._waiting_timer.timeout.connect(self._show_waiting)
        self._connect(controller)
        self._commands = TabCommands(self, controller, self.transcript, box.text,
                                     self._slash_menu, self._undo,
                                     self.choose_server_requested.emit,
                                     self.new_conversation_requested.emit,
                                     self._update_empty_hint,
                                     parts.status_line.show_waiting)
        self._update_empty_hint()
        parts.status_line.show_figures(controller.figures)
        self._on_busy(controller.busy)
        if controller.busy:
            self._undo.on_busy(True)
        callbacks, self._when_built = self._when_built, []
        for callback in callbacks:
            callback()

    def _make_larger_window(self, banner: ContextWindowBanner, tokens: int) -> None:
        fix = banner.fix
        banner.show_working(fix.ollama_model if fix is not None else "the model")
        self.controller.make_larger_window(tokens)

    def _needed(self, *_args: object) -> None:
        if self._parts is None:
            self.ensure_loaded()

    def _error_before_built(self, text: str, retry: bool) -> None:
        if self._parts is None:
            self.ensure_loaded()
            self.transcript.add_error(text, retry=retry)
            self._update_empty_hint()

    def _approval_before_built(self, request: ApprovalRequest) -> None:
        if self._parts is None:
            self.ensure_loaded()
            self._show_waiting_for_approval(request)

    def _files_changed_before_built(self, changes: TurnChanges) -> None:
        if self._parts is None:
            self.ensure_loaded()
            self.undo_actions.on_files_changed(changes)
            self.transcript.offer_restore(True)

    def _show_new_preview(self, request: ApprovalRequest) -> None:
        """The arguments were edited in the dock: the card shows the edited call's diff."""
        if self._requests.get(request.tool_use_id) is request and request.preview is not None:
            self.transcript.set_tool_preview(request.tool_use_id, request.preview.diff,
                                             request.preview.problem)

    def _show_edited_input(self, request: ApprovalRequest) -> None:
        if self._requests.get(request.tool_use_id) is request and request.pending:
            self.transcript.set_tool_approval(request.tool_use_id, card_prompt(request))

    def _show_waiting_for_approval(self, request: ApprovalRequest) -> None:
        """Ask on the call's card; when answered (here or in the dock), say how it ended."""
        self._requests[request.tool_use_id] = request
        self.transcript.set_tool_status(request.tool_use_id, "waiting for approval")
        if request.preview is not None:
            self.transcript.set_tool_preview(request.tool_use_id, request.preview.diff,
                                             request.preview.problem)
        self.transcript.set_tool_approval(request.tool_use_id, card_prompt(request))

        def answered(future: asyncio.Future[ApprovalDecision]) -> None:
            self._requests.pop(request.tool_use_id, None)
            if request.state is RequestState.EXPIRED:
                outcome: str | None = "expired"
            elif request.state is RequestState.CANCELLED or future.cancelled():
                outcome = "cancelled"
            elif future.exception() is None and not future.result().allowed:
                outcome = "denied"
            else:
                outcome = None
            self.transcript.set_tool_approval(request.tool_use_id, None, outcome)
            if outcome is None:
                self.transcript.set_tool_status(request.tool_use_id, "running…")

        request.future.add_done_callback(answered)

    def answer_on_card(self, tool_use_id: str, choice: str, reason: str = "") -> bool:
        """Resolve the request behind a card's buttons (the same one the dock lists)."""
        request = self._requests.get(tool_use_id)
        if request is None or self._approvals is None:
            return False
        previewed = choice == "preview"  # allowed once, run on an overlay first
        choice_made = ApprovalChoice.ALLOW_ONCE if previewed else ApprovalChoice(choice)
        # The person's edit, made on the card or in the dock, is what Allow runs.
        edited = request.edited_input if choice_made is not ApprovalChoice.DENY else None
        decision = ApprovalDecision(choice_made, reason, edited, preview=previewed)
        if not request.can_remember and decision.choice in (
                ApprovalChoice.ALLOW_CONVERSATION, ApprovalChoice.ALLOW_ALWAYS):
            return False
        done = self._approvals.answer(request, decision)
        self.focus_composer()
        return done

    def _connect(self, c: ConversationController) -> None:
        t = self.transcript
        c.transcript_reset.connect(t.load_messages)
        c.error.connect(lambda _t, _r: self.ensure_loaded())  # before the error is shown
        c.busy_changed.connect(lambda _b: self.ensure_loaded())
        c.transcript_reset.connect(lambda _m: setattr(self, "_loaded", True))
        c.user_message.connect(self._on_user_message)
        c.assistant_started.connect(lambda mid: t.begin_assistant_message(message_id=mid))
        c.resources_changed.connect(t.add_reply_note)
        c.text_delta.connect(t.append_text)
        c.thinking_delta.connect(t.append_thinking)
        c.tool_call.connect(lambda tid, name, args, source: t.add_tool_call(
            tid, name, args, source=source))
        c.tool_result.connect(lambda tid, content, is_error, pictures: t.set_tool_result(
            tid, content, is_error=is_error, pictures=pictures))
        c.tool_input_changed.connect(t.set_tool_input)
        c.tool_change.connect(t.set_tool_change)
        c.tool_settled.connect(t.settle_tool_call)
        c.tool_progress.connect(t.set_tool_status)
        c.tool_output.connect(t.add_tool_output)
        c.subagent_step.connect(t.add_subagent_step)
        c.tool_error.connect(lambda text, tid: t.add_tool_error(text, tool_use_id=tid))
        c.compacted.connect(t.add_compaction_marker)
        c.prompt_cut.connect(t.add_reply_note)
        banner = self._built_parts().window_banner
        c.window_checked.connect(banner.show_check)
        banner.make_model.connect(lambda tokens: self._make_larger_window(banner, tokens))
        c.window_fixed.connect(banner.show_done)
        c.plan_changed.connect(self._built_parts().show_plan)
        c.approval_requested.connect(self._show_waiting_for_approval)
        c.approval_preview_changed.connect(self._show_new_preview)
        c.assistant_finished.connect(lambda interrupted: t.end_assistant_message(
            interrupted=interrupted))
        c.error.connect(lambda text, retry: t.add_error(text, retry=retry))
        c.busy_changed.connect(self._on_busy)
        c.busy_changed.connect(lambda _b: self._update_empty_hint())
        c.settings_changed.connect(lambda _s: self._update_empty_hint())
        c.transcript_reset.connect(lambda _m: self._update_empty_hint())
        c.user_message.connect(lambda _t, _m, _p: self._update_empty_hint())
        c.error.connect(lambda _t, _r: self._update_empty_hint())
        c.figures_changed.connect(self.status_line.show_figures)
        c.prompt_progress.connect(self._on_prompt_progress)
        c.assistant_started.connect(lambda _m: self._stop_waiting())
        c.local_model.connect(self._on_local_model)
        t.retry_requested.connect(c.retry)
        t.regenerate_requested.connect(c.regenerate)
        t.edit_requested.connect(c.edit_and_resend)
        t.approval_answered.connect(self.answer_on_card)
        t.approval_arguments_edited.connect(self._card_edits.edit)
        t.tool_stop_requested.connect(self._stop_tool_call)
        t.preview_decided.connect(c.previews.decide)
        c.previews.preview_changed.connect(t.set_command_preview)
        t.branch_requested.connect(self.branch_requested)
        c.busy_changed.connect(lambda busy: None if busy else self._show_branches())
        self._undo = TabUndo(self, c, self.files_bar, t, self.composer)

    def _stop_tool_call(self, tool_use_id: str) -> None:
        """Stop on a running command's card: end that command, and say so on the card."""
        if self.controller.stop_tool_call(tool_use_id):
            self.transcript.mark_tool_stopping(tool_use_id)

    def ensure_loaded(self) -> None:
        """Build the transcript from the store the first time it is needed.

        Why lazy: tabs restored in the background hold hundreds of widgets each;
        building them only when a tab is first shown keeps start-up fast and an idle
        window with several tabs small.
        """
        if self._loaded:
            return
        self._built_parts()
        self._loaded = True
        self.transcript.set_earlier_source(self.controller.earlier_messages)
        page, plan = self.controller.shown_page()
        self.transcript.load_messages(page)
        self._built_parts().show_plan(plan)
        self._update_empty_hint()
        self._offer_restore_if_changed()

    def _offer_restore_if_changed(self) -> None:
        """Offer "Restore files…" on messages once the conversation has changed files.

        The check reads the checkpoints in a worker thread: it starts once the
        loop runs (the first tab is loaded just before it does).
        """
        async def check() -> None:
            if await self.controller.undo.has_changes():
                self.transcript.offer_restore(True)

        when_loop_runs(self, lambda: self.controller.undo.start(check()))

    def _on_user_message(self, text: str, message_id: str, pictures: list[str]) -> None:
        if not self._loaded:
            self.ensure_loaded()  # the store already holds the new message
            return
        self.transcript.add_user_message(text, message_id=message_id, pictures=pictures)

    def setVisible(self, visible: bool) -> None:
        """Make the widgets and load the transcript before the tab is first shown.

        Before, not in the show event: widgets made then would be shown a moment
        after the page, which would paint once without them. Only where it is seen
        (its tab widget on screen): a tab widget also "shows" the first tab added to
        it while the window, or the tab widget itself, is still hidden (restoring
        tabs, before or just after the window's first paint), and that tab may never
        be looked at.
        """
        shelf = self.parentWidget()
        if visible and shelf is not None and shelf.isVisible():
            self.ensure_loaded()
        super().setVisible(visible)

    def showEvent(self, event: QShowEvent) -> None:
        """Load the transcript when the tab is first seen."""
        self.ensure_loaded()
        super().showEvent(event)

    def _show_branches(self) -> None:
        """‹ 1/2 › on messages that were edited or regenerated (those on screen)."""
        self.transcript.refresh_branches()

    def send(self) -> None:
        """Hand the composer's text (and attachments) to the controller; clear what it took."""
        self.ensure_loaded()
        text = self.composer.toPlainText()
        attached = list(self.attachments)
        if self._commands.take(text):
            return
        if not attached:
            taken = self.controller.send(text)
        else:
            taken = self.controller.send(text, message_content(text, attached),
                                         shown_text(text, attached))
        if taken:
            self.composer.clear()
            self.attachments.clear()
            self.composer_box.show_attachments([])

    def _show_server_question(self, question: object) -> None:
        """A server asks to run the model or for a form: show it beside the conversation."""
        session = self.controller.session
        dialog = ServerQuestionDialog(question, session.answer_sampling,
                                      session.answer_elicitation, self)
        self.server_questions[dialog.question_id] = dialog
        dialog.finished.connect(lambda _r: self.server_questions.pop(dialog.question_id, None))
        dialog.show()

    def _server_question_settled(self, question_id: str) -> None:
        dialog = self.server_questions.pop(question_id, None)
        if dialog is not None:
            dialog.settled()

    def attach_files(self, paths: list[str]) -> None:
        """Attach files (paperclip or drop); a file that cannot be attached is said so."""
        problems = []
        read = []
        for path in paths:
            try:
                read.append(read_attachment(path))
            except (AttachmentError, OSError) as exc:
                problems.append(str(exc))
        self.add_attachments(read)
        if problems:
            self._say_problem(" ".join(problems))

    def add_attachments(self, attachments: list[Attachment]) -> None:
        """Attach what was read (files, or an MCP resource's contents) and show their chips."""
        self.attachments.extend(attachments)
        self.composer_box.show_attachments([a.name for a in self.attachments])
        self.focus_composer()

    def _say_problem(self, sentence: str) -> None:
        self.transcript.add_error(sentence, retry=False)
        self._update_empty_hint()

    def _remove_attachment(self, index: int) -> None:
        if 0 <= index < len(self.attachments):
            del self.attachments[index]
        self.composer_box.show_attachments([a.name for a in self.attachments])

    def _update_empty_hint(self) -> None:
        """A new conversation shows what to do instead of an empty page."""
        shown = bool(self.transcript.item_keys()) if self._loaded else \
            not self.controller.is_empty()
        empty = not shown and not self.controller.busy
        if empty:
            model = self.controller.settings.get("model")
            self.empty_hint.setText(
                f"Start the conversation with {model}.\n\nType a message below and press "
                "Enter. When the model wants to run a tool, it asks you here first."
                if model else "Choose a server and a model, then type a message below.")
        self._built_parts().pages.setCurrentWidget(self.empty_hint if empty else self.transcript)

    def _on_busy(self, busy: bool) -> None:
        self.composer_box.set_busy(busy)
        if busy:
            self._waiting_since = time.monotonic()
            self._progress = None
            self._waiting_timer.start()
            self._show_waiting()
        else:
            self._stop_waiting()

    def _on_prompt_progress(self, processed: int, total: int) -> None:
        self._progress = (processed, total)
        self._loading = None
        self._show_waiting()

    def _on_local_model(self, event: object) -> None:
        """The model on this computer loads for this turn, or its engine crashed."""
        from desktop_agent.session import LocalModelStarting

        if isinstance(event, LocalModelStarting):
            self._loading = event.model
            self._show_waiting()
        else:  # LocalModelCrashed: how, with Restart (the window refreshes it as models change)
            self.notice.show_engine_stopped(str(getattr(event, "message", "")))

    def _show_waiting(self) -> None:
        """Until the first token: "Processing prompt… N s" (and % when the server says)."""
        if self._waiting_since is None:
            return
        elapsed = time.monotonic() - self._waiting_since
        if self._loading is not None:
            self.status_line.show_waiting(f"Loading {self._loading} on this computer… "
                                          f"{elapsed:.0f} s")
            return
        processed, total = self._progress or (None, None)
        self.status_line.show_waiting(waiting_text(elapsed, processed, total))

    def _stop_waiting(self) -> None:
        self._loading = None
        self._waiting_since = None
        self._waiting_timer.stop()
        self.status_line.show_waiting(None)

    def focus_composer(self) -> None:
        """Put the cursor in the message box."""
        self.composer.setFocus()

