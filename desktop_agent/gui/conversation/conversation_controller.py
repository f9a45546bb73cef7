"""One conversation in the window: Qt signals over a session.

The conversation itself (its Client and turn task, options, tools, the
approval broker, the recorder, the turn lease) is the session layer's
:class:`~desktop_agent.session.conversation.ConversationSession`, the same
one the REST server drives. This controller is the window's adapter, by
composition: it subscribes to the session's events and re-emits them as Qt
signals for the tab's widgets, shows approval questions in the shared dock
(:class:`DockAsker`) and maps the session's typed refusals to sentences. Its
parts: the status line's figures (:mod:`.context_meter`), the plan
(:mod:`.branch_plan`), undo and restore, command previews.

The core is imported lazily (inside the first turn) so the window paints
before the openai SDK loads.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from desktop_agent.gui.approvals.approval_queue import ApprovalQueue, ApprovalRequest
from desktop_agent.gui.approvals.dock_asker import DockAsker
from desktop_agent.gui.conversation.branch_plan import BranchPlan
from desktop_agent.gui.conversation.command_preview_actions import CommandPreviewActions
from desktop_agent.gui.conversation.context_meter import ContextMeter
from desktop_agent.gui.conversation.error_messages import describe_error
from desktop_agent.gui.conversation.folder_undo_actions import FolderUndoActions
from desktop_agent.gui.conversation.turn_figures import TurnFigures
from desktop_agent.session import (
    BUSY_ELSEWHERE,
    DEFAULT_TITLE,
    LOCAL_SERVER,
    TITLE_LENGTH,
    ApprovalSettled,
    CompactionReported,
    ContextWindowChecked,
    ConversationSession,
    DoctorNotice,
    ElicitationAsked,
    LocalModelCrashed,
    LocalModelStarting,
    MessageStored,
    NotConfiguredError,
    Notice,
    PathReset,
    PlanUpdated,
    PromptCutReported,
    PromptProgressReported,
    ReplyEnded,
    ReplyStarted,
    ResourcesChanged,
    SamplingAsked,
    ServerQuestionSettled,
    SessionEnvironment,
    SessionError,
    SessionEvent,
    SettingsChanged,
    StateChanged,
    SubagentReported,
    TextDelta,
    ThinkingDelta,
    TitleChanged,
    ToolCallProbed,
    ToolCallStarted,
    ToolCatalog,
    ToolErrorReported,
    ToolInputReplaced,
    ToolOutputReported,
    ToolProgressReported,
    ToolResultArrived,
    TurnFailed,
    UsageReported,
    UserMessageAdded,
    WorkdirError,
    conversation_allowed_tools,
    next_permission_mode,
    permission_mode_of,
    picture_urls,
    plan_of,
    runs_locally,
    stored_file_change,
    tool_call_state,
    tool_result_text,
    view_dict,
    workdir_path,
)
from desktop_agent.store.errors import ConversationBusyError, StaleParentError

if TYPE_CHECKING:
    from desktop_agent.core.wire.connection_pool import ConnectionPool
    from desktop_agent.session import Plan, ProjectInstructions
    from desktop_agent.store import ConversationRecord, MessageRecord, Store

log = logging.getLogger("desktop_agent.gui.conversation")

HISTORY_PAGE = 200
"""Messages read from the store at a time when a conversation is shown."""

# Other modules import these names from here.
__all__ = ["DEFAULT_TITLE", "TITLE_LENGTH", "ConversationController", "TurnFigures"]


class ConversationController(QObject):
    """The window's side of one conversation.

    Attributes:
        undo: Undo this turn, Restore files and Files changed (its ``files_changed``
            signal tells when a turn changed files).
        previews: Command previews (its ``preview_changed`` signal updates their cards).

    Signals:
        title_changed(str): The conversation's title changed.
        settings_changed(dict): Its settings changed (server, model, sampling...).
        busy_changed(bool): A turn started (True) or ended (False).
        transcript_reset(list): Show these stored messages instead of what is shown
            (each a dict: ``id``, ``role``, ``message``, ``metadata``, ``status``): the
            last page of the branch; :meth:`earlier_messages` has the rest.
        user_message(str, str, list): A user message was sent (text, message id,
            the pictures sent with it as data: URIs).
        assistant_started(str): An assistant reply begins (message id).
        text_delta(str): A piece of the answer.
        thinking_delta(str): A piece of reasoning.
        tool_call(str, str, object, object): id, name, input dict, source.
        tool_result(str, str, bool, list): id, content, is_error, pictures (data: URIs).
        tool_input_changed(str, object): id, the input the call ran with (edited
            in the approval dock); the card shows it instead of the model's.
        tool_progress(str, str): id, how far the running call is ("running… 2/3").
        subagent_step(object): A delegation's subagent did something (a ``SubagentReported``,
            keyed by the delegation call's ``tool_use_id``).
        tool_output(str, str, int, float, bool): id, what the running command printed
            since the last report, lines so far, seconds so far, whether it can be stopped.
        tool_error(str, object): text, tool use id or None.
        tool_change(str, object): id, the FileDiff of what the call changed in its file.
        tool_settled(str, object): id, the call's :class:`ToolCallState` read from its
            stored result (what the card shows; the same when the conversation is reopened).
        assistant_finished(bool): The reply ended (True: it was interrupted).
        error(str, bool): A turn failed: sentence, whether Retry makes sense.
        figures_changed(object): New :class:`TurnFigures`.
        prompt_progress(int, int): Prompt tokens the server has read, of all (before the
            first token, when the server reports it).
        pending_approvals_changed(int): Requests of this conversation waiting.
        approval_requested(object): A new :class:`ApprovalRequest` (for notifications).
        approval_preview_changed(object): One of this conversation's requests has a new
            diff (its arguments were edited in the dock).
        notice(str): Something the person should know that is not part of the
            transcript (e.g. a remembered approval could not be saved).
        compacted(int, object): The model's view of the conversation was
            compacted: messages covered, and the summary (None when dropped).
        plan_changed(object): The model's plan now is this ``Plan`` (None: no plan).
        window_checked(object): Before a turn, the ``ContextWindowChecked`` event: the
            window the server applies, and when the conversation outgrows it the
            warning and its fix.
        prompt_cut(str): The server cut the prompt of the reply being shown (the mark).
        resources_changed(str): MCP resources attached earlier changed and were read
            again for the reply being shown (its mark, given once the reply began).
        window_fixed(object, object): The one-click fix ended: the model now used (None
            when it failed) and the problem in words (None when it worked).
        local_model(object): The model this computer runs for the conversation is
            loading (``LocalModelStarting``) or its engine crashed (``LocalModelCrashed``).
    """

    title_changed = Signal(str)
    settings_changed = Signal(dict)
    busy_changed = Signal(bool)
    transcript_reset = Signal(list)
    user_message = Signal(str, str, list)
    assistant_started = Signal(str)
    text_delta = Signal(str)
    thinking_delta = Signal(str)
    tool_call = Signal(str, str, object, object)
    tool_result = Signal(str, str, bool, list)
    tool_input_changed = Signal(str, object)
    tool_progress = Signal(str, str)
    tool_output = Signal(str, str, int, float, bool)
    subagent_step = Signal(object)
    tool_settled = Signal(str, object)
    tool_error = Signal(str, object)
    tool_change = Signal(str, object)
    assistant_finished = Signal(bool)
    error = Signal(str, bool)
    figures_changed = Signal(object)
    prompt_progress = Signal(int, int)
    pending_approvals_changed = Signal(int)
    approval_requested = Signal(object)
    approval_preview_changed = Signal(object)
    notice = Signal(str)
    doctor_notice = Signal(str, str, list)
    tool_call_probed = Signal(object)
    compacted = Signal(int, object)
    plan_changed = Signal(object)
    window_checked = Signal(object)
    prompt_cut = Signal(str)
    resources_changed = Signal(str)
    window_fixed = Signal(object, object)
    server_question = Signal(object)
    server_question_settled = Signal(str)
    local_model = Signal(object)

    def __init__(self, store: Store, record: ConversationRecord, approvals: ApprovalQueue,
                 tools: ToolCatalog | None = None, *, approval_timeout: float | None = 300.0,
                 connection_pool: ConnectionPool | None = None,
                 local_servers: Any = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._approvals = approvals
        self._tools = tools or ToolCatalog()
        self._asker = DockAsker(approvals, lambda: self.title, self.approval_requested.emit,
                                previewer=lambda name, args: self.session.preview_change(name,
                                                                                         args))
        env = SessionEnvironment(tools=self._tools, approval_timeout=approval_timeout,
                                 connection_pool=connection_pool, local_servers=local_servers)
        self.session = ConversationSession(store, record.id, env, self._asker, owner="window")
        self.session.subscribe(self._on_event)
        self.undo = FolderUndoActions(self.session, store, self)
        self.previews = CommandPreviewActions(self.session, approval_timeout, self)
        self._transcript_open = False
        self._resource_note: str | None = None  # said on the reply once it begins
        self._busy_shown = False
        self._shown_next: str | None = None
        self._plan = BranchPlan(self.session, self.plan_changed.emit)
        self.meter = ContextMeter(self.session, self.figures_changed.emit,
                                  self.window_fixed.emit)
        approvals.pending_count_changed.connect(self._on_pending_count)
        approvals.preview_changed.connect(self._on_preview_changed)

    # -- properties ----------------------------------------------------------

    @property
    def conversation_id(self) -> str:
        """The store id of this conversation."""
        return self.session.conversation_id

    @property
    def title(self) -> str:
        """The conversation's title."""
        return self.session.record.title

    @property
    def settings(self) -> dict[str, Any]:
        """A copy of the conversation's settings."""
        return self.session.settings

    @property
    def busy(self) -> bool:
        """Whether a turn is running."""
        return self.session.busy

    @property
    def task(self) -> asyncio.Task[None] | None:
        """The task running the current turn, if any."""
        return self.session.task

    @property
    def figures(self) -> TurnFigures:
        """The latest status-line figures."""
        return self.meter.figures

    @property
    def has_server(self) -> bool:
        """Whether a server (or this computer) and a model are chosen."""
        s = self.session.record.settings
        return bool(s.get("model") and (s.get("base_url") or runs_locally(s)))

    @property
    def can_regenerate(self) -> bool:
        """Whether there is a user message to answer again."""
        # Without reading a long branch: its newest message is a user's or answers one.
        last = self.session.last_message()
        return not self.busy and last is not None and last.role != "system"

    def stored_messages(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The active branch as shown in the transcript (with ``limit``: its last page).

        A page starts at a user message, so a turn is never cut from its tool
        results; :meth:`earlier_messages` brings the pages before it.
        """
        records = self.session.read_branch() if limit is None else self.session.latest_page(limit)
        return [view_dict(r) for r in records]

    def earlier_messages(self, before: str, limit: int = HISTORY_PAGE) -> list[dict[str, Any]]:
        """The page of the active branch before message ``before`` (empty at the root)."""
        return [view_dict(r) for r in self.session.page_before(before, limit)]

    def is_empty(self) -> bool:
        """Whether the active branch holds no message (reads one row, not the branch)."""
        return self.session.last_message() is None

    def work_folder(self) -> Path | None:
        """The folder the tools use (``@`` completes its files); None when it is refused."""
        try:
            return workdir_path(self.conversation_id, self.session.record.settings,
                                self._tools.workdirs_root)
        except WorkdirError:
            return None

    def shown_page(self) -> tuple[list[dict[str, Any]], Plan | None]:
        """The transcript's last page and the model's plan on it, from one read.

        A long conversation whose plan was set before that page gets it from
        the whole branch, read in a worker thread; :attr:`plan_changed` brings it.
        """
        records = self.session.latest_page(HISTORY_PAGE)
        return [view_dict(r) for r in records], self._plan.on_page(records)

    def project_instructions(self) -> ProjectInstructions | None:
        """The working folder's ``AGENTS.md`` as the next turn sends it (a stat, a small read)."""
        return self.session.project_instructions()

    def session_allowed_tools(self) -> list[str]:
        """Tools allowed for this conversation without asking."""
        return conversation_allowed_tools(self.session.record.settings)

    # -- settings ------------------------------------------------------------

    def rename(self, title: str) -> None:
        """Give the conversation a new title (blank titles are ignored)."""
        self.session.rename(title)

    def update_settings(self, **changes: Any) -> None:
        """Change settings by key (None removes one); takes effect from the next turn."""
        self.session.update_settings(**changes)

    def set_permission_mode(self, mode: str) -> bool:
        """Use ``mode`` from the next tool call on; a refusal is told, not raised.

        ``bypassPermissions`` without an active sandbox is refused with the reason
        (:class:`~desktop_agent.session.PermissionModeError`), shown as a notice;
        the header then shows the mode still in force.
        """
        from desktop_agent.session import SettingsError

        try:
            self.session.update_settings(permission_mode=mode)
        except SettingsError as exc:
            self.notice.emit(str(exc))
            self.settings_changed.emit(self.settings)  # the selector goes back
            return False
        client = self.session.client
        if client is not None and self.session.busy:
            client.set_permission_mode(permission_mode_of(self.session.settings))
        return True

    def cycle_permission_mode(self) -> None:
        """Shift+Tab: the next of Claude Code's modes (never bypass: that is chosen on purpose)."""
        self.set_permission_mode(next_permission_mode(permission_mode_of(self.settings)))

    def set_server(self, base_url: str, model: str, *, api_key_name: str | None = None,
                   context_length: int | None = None, vision: bool | None = None) -> None:
        """Use this server and model from the next turn (mid-conversation too).

        ``vision`` is what the server says about the model reading images (None:
        unknown), so a picture for a text-only model is refused in words before
        anything is sent.
        """
        self.update_settings(server=None, base_url=base_url, model=model,
                             api_key_name=api_key_name, context_length=context_length,
                             vision=vision)

    def use_local_model(self, model: str, context_length: int | None = None) -> None:
        """Run ``model`` on this computer from the next turn (the app's engine loads it).

        ``context_length``: what it runs (or will run) with, for the context meter.
        """
        self.update_settings(server=LOCAL_SERVER, model=model, base_url=None,
                             api_key_name=None, context_length=context_length, vision=None)

    def make_larger_window(self, tokens: int) -> None:
        """Run Ollama's one-click fix (a copy of the model with ``tokens``): ``window_fixed``."""
        self.meter.make_larger_window(tokens)

    async def estimate_context(self) -> None:
        """Fill in "context used" for a conversation opened from the store (see the meter)."""
        await self.meter.estimate()

    def revoke_conversation_approval(self, tool_name: str) -> None:
        """Stop allowing a tool without asking in this conversation."""
        self.session.revoke_in_conversation(tool_name)

    def refresh_from_store(self) -> bool:
        """Catch up with another process's writes when idle (True: the branch changed)."""
        return self.session.refresh()

    # -- user actions --------------------------------------------------------

    def send(self, text: str, content: str | list[dict[str, Any]] | None = None,
             shown: str | None = None) -> bool:
        """Send a user message and stream the reply (False when it cannot be sent).

        Args:
            text: The typed text (it names the conversation).
            content: What is sent instead of ``text``: a string, or OpenAI content
                parts when pictures are attached.
            shown: How the message reads in the transcript (default: ``text``).
        """
        text = text.strip()
        if (not text and not content) or self.busy:
            return False
        prompt = content if content else text
        self._shown_next = shown or text
        try:
            return self._act(lambda: self.session.send(prompt))
        finally:
            self._shown_next = None

    def retry(self) -> bool:
        """Run the last user message again (after an error); a new branch in the store."""
        return self.regenerate()

    def regenerate(self) -> bool:
        """Answer the last user message again; the old answer stays as a sibling branch."""
        if self.busy:
            return False
        return self._act(self.session.regenerate)

    def edit_and_resend(self, message_id: str, text: str) -> bool:
        """Replace a user message with ``text`` (a sibling branch) and answer it."""
        text = text.strip()
        if not text or self.busy:
            return False
        return self._act(lambda: self.session.edit(message_id, text))

    def _act(self, action: Any) -> bool:
        """Run a session action; its refusals become a sentence in the transcript."""
        try:
            action()
        except NotConfiguredError:
            self.error.emit("Pick a model first (at the top of the conversation).", False)
            return False
        except ConversationBusyError:
            self.error.emit(f"{BUSY_ELSEWHERE} Wait for its reply, then send again.", False)
            return False
        except StaleParentError:
            self.session.refresh()
            self.error.emit("This conversation changed in another window or server; it was "
                            "reloaded. Send your message again.", False)
            return False
        except SessionError as exc:
            log.debug("action refused: %s", exc)
            return False
        return True

    def stop(self) -> None:
        """Stop the running turn; the partial reply is kept and marked interrupted."""
        if not self.busy:
            return
        self._approvals.cancel_conversation(self.conversation_id)
        self.session.stop()

    def stop_tool_call(self, tool_use_id: str) -> bool:
        """End just one running command (Stop on its card); the turn goes on."""
        return self.session.stop_tool_call(tool_use_id)

    async def close(self) -> None:
        """Deny pending approvals, cancel the turn and any undo, release the client."""
        self._approvals.cancel_conversation(self.conversation_id)
        self._plan.cancel()
        self.meter.cancel()
        await self.undo.cancel_all()
        await self.previews.cancel_all()
        await self.session.close()

    # -- session events -> signals -------------------------------------------------
    def _on_server_question(
            self, event: SamplingAsked | ElicitationAsked | ServerQuestionSettled) -> None:
        """An MCP server's sampling request or form, and its end (the tab shows them)."""
        if isinstance(event, ServerQuestionSettled):
            self.server_question_settled.emit(event.question_id)
        else:
            self.server_question.emit(event.question)

    def _on_event(self, event: SessionEvent) -> None:
        if isinstance(event, StateChanged):
            if event.state == "idle":
                self._end_transcript_message(event.outcome != "complete")
                if self._busy_shown:
                    self._busy_shown = False
                    self.busy_changed.emit(False)
                if event.outcome is not None:
                    # Between turns the conversation holds no copy of its history (the
                    # transcript shows its widgets; the next turn reads the branch again):
                    # a tab kept open would otherwise grow with every turn.
                    self.session.release_history()
            elif not self._busy_shown:
                self._busy_shown = True
                self.busy_changed.emit(True)
        elif isinstance(event, UserMessageAdded):
            content = event.record.message.get("content")
            shown = self._shown_next if self._shown_next is not None else (
                content if isinstance(content, str) else "")
            self.user_message.emit(shown, event.record.id, list(picture_urls(content)))
        elif isinstance(event, PathReset):
            # The transcript gets the last page; it asks for earlier ones as it scrolls up.
            self.transcript_reset.emit(self.stored_messages(HISTORY_PAGE))
            self.plan_changed.emit(plan_of(event.records))
        elif isinstance(event, PlanUpdated):
            self.plan_changed.emit(event.plan)
        elif isinstance(event, TurnFailed):
            description = describe_error(event.error)
            self.error.emit(description.sentence, description.can_retry)
        elif isinstance(event, SettingsChanged):
            self.meter.settings_changed(event.settings)
            self.settings_changed.emit(dict(event.settings))
        elif isinstance(event, ContextWindowChecked):
            self.meter.window_checked(event)
            self.window_checked.emit(event)
        elif isinstance(event, TitleChanged):
            self.title_changed.emit(event.title)
        elif isinstance(event, ApprovalSettled):
            # The broker gave up on a question: the dock shows it expired or withdrawn.
            self._asker.settled(event.tool_use_id, event.record)
        else:
            self._on_notice_event(event)

    def _on_notice_event(self, event: SessionEvent) -> None:
        """What the conversation tells beside the reply: notices, probes, the local model."""
        if isinstance(event, Notice):
            self.notice.emit(event.text)
        elif isinstance(event, DoctorNotice):
            self.doctor_notice.emit(event.kind, event.text, list(event.offers))
        elif isinstance(event, ToolCallProbed):
            self.tool_call_probed.emit(event)
        elif isinstance(event, LocalModelStarting | LocalModelCrashed):
            self.local_model.emit(event)
        elif isinstance(event, ResourcesChanged):
            self._resource_note = event.text
        else:
            self._on_reply_event(event)

    def _on_reply_event(self, event: SessionEvent) -> None:
        """The reply's pieces: one signal each, in the order they streamed."""
        if isinstance(event, ReplyStarted):
            self.meter.reply_started()
            if not self._transcript_open:  # the transcript shows one reply per turn
                self._transcript_open = True
                self.assistant_started.emit(event.message_id)
            if self._resource_note is not None:
                note, self._resource_note = self._resource_note, None
                self.resources_changed.emit(note)
        elif isinstance(event, TextDelta):
            self.text_delta.emit(event.text)
            self.meter.streamed_piece()
        elif isinstance(event, ThinkingDelta):
            self.thinking_delta.emit(event.text)
            self.meter.streamed_piece()
        elif isinstance(event, MessageStored):
            self._on_stored(event.record)
        elif isinstance(event, UsageReported):
            self.meter.usage(event)
        elif isinstance(event, PromptProgressReported):
            self.prompt_progress.emit(event.processed, event.total)
        elif isinstance(event, CompactionReported):
            self.compacted.emit(event.block.messages, event.block.summary)
        elif isinstance(event, PromptCutReported):
            self.prompt_cut.emit(event.block.message)
            self.meter.prompt_cut(event.block)
        elif isinstance(event, ReplyEnded):
            self._end_transcript_message(event.interrupted)
        else:
            self._on_tool_event(event)

    def _on_tool_event(self, event: SessionEvent) -> None:
        """A tool call's life: started, input replaced, progress, output, result, error."""
        if isinstance(event, ToolCallStarted):
            self.tool_call.emit(event.tool_use_id, event.name, dict(event.input), event.source)
        elif isinstance(event, ToolInputReplaced):
            self.tool_input_changed.emit(event.tool_use_id, dict(event.input))
        elif isinstance(event, ToolResultArrived):
            if not event.reported:
                self.tool_result.emit(event.tool_use_id,
                                      tool_result_text(event.content, event.user_content),
                                      event.is_error, list(event.pictures))
        elif isinstance(event, ToolOutputReported):
            self.tool_output.emit(event.tool_use_id, event.text, event.lines, event.elapsed,
                                  event.stoppable)
        elif isinstance(event, ToolProgressReported):
            self.tool_progress.emit(event.tool_use_id, progress_text(event))
        elif isinstance(event, SubagentReported):
            self.subagent_step.emit(event)
        elif isinstance(event, ToolErrorReported):
            self.tool_error.emit(event.error, event.tool_use_id)
        elif isinstance(event, SamplingAsked | ElicitationAsked | ServerQuestionSettled):
            self._on_server_question(event)  # asked while a tool call runs

    def _on_stored(self, record: MessageRecord) -> None:
        """A stored tool result: its card takes the stored state (and keeps a file's diff)."""
        if record.role != "tool":
            return
        call_id = record.message.get("tool_call_id")
        if isinstance(call_id, str):
            self.tool_settled.emit(call_id, tool_call_state(record.message, record.metadata))
        change = stored_file_change(record.metadata)
        if change is not None and isinstance(call_id, str):
            self.tool_change.emit(call_id, change)

    def _end_transcript_message(self, interrupted: bool) -> None:
        if self._transcript_open:
            self._transcript_open = False
            self.assistant_finished.emit(interrupted)

    def _on_preview_changed(self, request: ApprovalRequest) -> None:
        if request.conversation_id == self.conversation_id:
            self.approval_preview_changed.emit(request)

    def _on_pending_count(self, conversation_id: str, count: int) -> None:
        if conversation_id == self.conversation_id:
            self.pending_approvals_changed.emit(count)


def progress_text(progress: ToolProgressReported) -> str:
    """A running call's progress as the card's status ("running… 2/3 (67%)")."""
    if progress.total:
        share = progress.progress / progress.total
        done = f"{progress.progress:g}/{progress.total:g} ({share:.0%})"
    else:
        done = f"{progress.progress:g}"
    return f"running… {done}" + (f": {progress.message}" if progress.message else "")

