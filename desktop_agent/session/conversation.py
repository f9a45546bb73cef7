"""ConversationSession: one conversation's life, the same for the window and the REST server.

The session owns the conversation's core :class:`~desktop_agent.core.client.Client`
and the task running its turn (kept referenced, cancelled on close). Each
turn takes the store's turn lease (one turn at a time per conversation,
across processes), re-reads the settings and the active branch, builds its
options in :mod:`~desktop_agent.session.turn.options`, decides tool calls
through the :class:`~desktop_agent.session.approvals.approval_broker.ApprovalBroker`,
writes every message through the
:class:`~desktop_agent.session.turn.recorder.TurnRecorder` and reports
:mod:`~desktop_agent.session.events` to its listeners. Front ends are
adapters: the window maps events to Qt signals, the REST server to its event
log; neither runs a turn itself.

:class:`ConversationSession` is the one object front ends hold, and it is thin:
it is composed of parts, one job each, as
:class:`~desktop_agent.store.store.Store` is, and each public method is its
part's method, declared once here
(:class:`~desktop_agent.store.part_method.PartMethod`), so its signature and
docstring live in the part:

- :class:`~desktop_agent.session.settings.settings_record.SettingsRecord`: the
  record as last read, title and settings changed by key;
- :class:`~desktop_agent.session.branch.branch_pages.BranchPages`: the active
  branch, a page at a time or whole, caught up with other processes;
- :class:`~desktop_agent.session.files.working_folder.WorkingFolder` and
  :class:`~desktop_agent.session.files.folder_undo.FolderUndo`: checkpoints,
  file changes and previews; undo and restore;
- :class:`~desktop_agent.session.files.command_previews.CommandPreviewDesk`:
  commands run on an overlay, waiting for Apply or Discard;
- :class:`~desktop_agent.session.turn.turn_starts.TurnStarts`,
  :class:`~desktop_agent.session.turn.turn_runner.TurnRunner`,
  :class:`~desktop_agent.session.turn.conversation_client.ConversationClient`
  and :class:`~desktop_agent.session.turn.turn_status.TurnStatus`: what a user
  action starts, the turn that runs, the client it streams from, the state
  listeners hear;
- :class:`~desktop_agent.session.turn.larger_window.LargerWindow`: the one-click
  fix when the server's window is too small (a larger Ollama model).

A step that calls the store is one coroutine taking the
:class:`~desktop_agent.session.store_calls.StoreCalls` that runs those
calls. ``serve`` awaits it (``send_off_loop``, ``run_off_loop``) with a runner
that keeps the calls off its event loop; the window calls the same step as a
plain method that is done when it returns
(:class:`~desktop_agent.session.store_calls.AtOnce`).

User actions raise typed errors (:class:`SessionError`, the store's
``ConversationBusyError`` and ``StaleParentError``) that each front end maps
to a sentence or an HTTP status; nothing here knows either.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from desktop_agent.session.approvals.approval_broker import (
    ApprovalAnswer,
    ApprovalBroker,
    Asker,
    ToolCallQuestion,
)
from desktop_agent.session.branch.branch_pages import BranchPages
from desktop_agent.session.commands.conversation_commands import ConversationCommands
from desktop_agent.session.errors import lease_owner
from desktop_agent.session.events import ApprovalSettled, Notice, RunState, SessionEvent
from desktop_agent.session.files.checkpoint_paths import previews_folder
from desktop_agent.session.files.command_previews import CommandPreviewDesk
from desktop_agent.session.files.folder_undo import FolderUndo
from desktop_agent.session.files.working_folder import WorkingFolder
from desktop_agent.session.mcp.conversation_mcp import ConversationMcp
from desktop_agent.session.mcp.server_questions import ServerQuestions
from desktop_agent.session.settings.settings_record import SettingsRecord
from desktop_agent.session.store_calls import (
    AtOnce,
    finish_now,
    on_the_spot,
)
from desktop_agent.session.turn.compact_now import CompactNow
from desktop_agent.session.turn.conversation_client import ConversationClient
from desktop_agent.session.turn.larger_window import LargerWindow
from desktop_agent.session.turn.options import SessionEnvironment
from desktop_agent.session.turn.turn_runner import TurnRunner
from desktop_agent.session.turn.turn_starts import TurnStarts
from desktop_agent.session.turn.turn_status import TurnStatus
from desktop_agent.store.errors import NotFoundError
from desktop_agent.store.part_method import PartMethod

if TYPE_CHECKING:
    from desktop_agent.core.client import Client
    from desktop_agent.session.files.file_checkpoints import ConversationCheckpoints
    from desktop_agent.session.files.preview_cards import PreviewCard
    from desktop_agent.store import ConversationRecord, MessageRecord, Store

log = logging.getLogger("desktop_agent.session.conversation")

Listener = Callable[[SessionEvent], None]


class ConversationSession:
    """One conversation, driven by one front end.

    Args:
        store: The conversation store.
        conversation_id: The conversation.
        env: What all conversations share (tools, config, hooks, timeout).
        ask: Shows approval questions (the window's dock, the REST pending list).
        owner: Who runs turns, as other processes are told (``window``, ``server``).
        record: The conversation as the caller just read it (``serve`` reads it off
            the event loop to answer 404); read here when not given.

    Attributes:
        broker: The conversation's approval broker.
    """

    def __init__(self, store: Store, conversation_id: str, env: SessionEnvironment,
                 ask: Asker, *, owner: str = "window",
                 record: ConversationRecord | None = None) -> None:
        if record is None or record.id != conversation_id:
            record = store.get_conversation(conversation_id)
            if record is None:
                raise NotFoundError(f"no conversation {conversation_id}")
        self._ask = ask  # read at each question: a front end may put another in its place
        # A tuple, replaced on subscribe: each event is reported to those subscribed when
        # it was emitted, without copying the list per event (one event per streamed piece).
        self._listeners: tuple[Listener, ...] = ()
        emit = self._emit
        self._settings = SettingsRecord(store, record, emit)
        self._branch = BranchPages(store, self._settings, emit)
        self._folder = WorkingFolder(self._settings, env.tools, emit)
        self._status = TurnStatus(emit)
        self._undo = FolderUndo(self._folder, self._branch,
                                lease=lambda activity: store.turn_lease(
                                    conversation_id, lease_owner(owner, activity)),
                                busy=lambda: self._runner.busy, emit=emit)
        self._previews = CommandPreviewDesk(
            conversation_id, lambda: self._settings.current, previews_folder(conversation_id),
            env.approval_timeout, self._undo.command_checkpoint, emit)
        self.broker = ApprovalBroker(
            conversation_id, self._asked, settings=lambda: self._settings.current,
            timeout=env.approval_timeout, config=env.config,
            allow_in_conversation=self.allow_in_conversation,
            on_settled=lambda i, r: emit(ApprovalSettled(i, r)),
            on_problem=lambda text: emit(Notice(text)),
            preview=self._folder.preview_change, before_run=self._folder.changes.before_run,
            previewable=self._previews.previewable, run_as_preview=self._previews.want,
            set_permission_mode=lambda mode: self.update_settings(permission_mode=mode),
            notify=lambda name, call_id, agent: self._client.notify(name, call_id, agent))
        self._questions = ServerQuestions(emit, env.approval_timeout)
        self._mcp = ConversationMcp(conversation_id, lambda: self._settings.current, env.tools,
                                    self._questions, lambda r: self._client.sample(r))
        self._commands = ConversationCommands(conversation_id, lambda: self._settings.current,
                                              env.tools.workdirs_root, self._mcp)
        self._client = ConversationClient(self._settings, env, self.broker, self._folder,
                                          self._previews, emit, store, self._mcp)
        self._runner = TurnRunner(store, owner, self._settings, self._branch, self._folder,
                                  self.broker, self._client, self._status, emit)
        self._starts = TurnStarts(store, env, self._settings, self._branch, self._runner, emit)
        self._compact_now = CompactNow(store, self._settings, self._branch, self._runner,
                                       self._client, emit)
        self._window = LargerWindow(self._settings, env)

    # -- listening ---------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> None:
        """Report every event to ``listener`` (called on the loop, in order)."""
        self._listeners = (*self._listeners, listener)

    def _emit(self, event: SessionEvent) -> None:
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:  # a front end's bug must not end the turn
                log.exception("a session listener failed on %s", type(event).__name__)

    async def _asked(self, question: ToolCallQuestion) -> ApprovalAnswer:
        """The broker's asker: the run state reports the question, the front end answers."""
        return await self._status.asked(question, self._ask)

    # -- what the session is doing ---------------------------------------------------------
    @property
    def state(self) -> RunState:
        """``idle``, ``running``, ``waiting_approval`` or ``interrupting``."""
        return self._status.state

    @property
    def last_used(self) -> float:
        """``time.monotonic()`` of the last action (for idle eviction)."""
        return self._status.last_used

    @property
    def busy(self) -> bool:
        """Whether a turn runs (or is starting) in this process."""
        return self._runner.busy

    @property
    def task(self) -> asyncio.Task[None] | None:
        """The task running the current turn, if any."""
        return self._runner.task

    @property
    def client(self) -> Client | None:
        """The conversation's client once a turn ran."""
        return self._client.client

    def can_evict(self) -> bool:
        """Whether the session holds nothing the store does not (no turn, question, preview)."""
        return not self.busy and self.state == "idle" and not self._previews.pending

    # -- the record and its settings (settings/settings_record.py) -----------------------
    @property
    def conversation_id(self) -> str:
        """The store id of the conversation."""
        return self._settings.conversation_id

    @property
    def record(self) -> ConversationRecord:
        """The conversation's record as last read."""
        return self._settings.record

    @property
    def settings(self) -> dict[str, Any]:
        """A copy of the settings as last read."""
        return self._settings.settings

    reload_settings = AtOnce("_settings", SettingsRecord.reload)
    rename = AtOnce("_settings", SettingsRecord.rename)
    update_settings = AtOnce("_settings", SettingsRecord.update_settings)
    allow_in_conversation = AtOnce("_settings", SettingsRecord.allow_in_conversation)
    revoke_in_conversation = AtOnce("_settings", SettingsRecord.revoke_in_conversation)

    # -- the active branch (branch/branch_pages.py) --------------------------------------
    @property
    def path(self) -> list[MessageRecord]:
        """The active branch as last read (root first); read whole on first use."""
        return self._branch.path

    latest_page = PartMethod("_branch", BranchPages.latest_page)
    last_message = PartMethod("_branch", BranchPages.last_message)
    read_branch = PartMethod("_branch", BranchPages.read_branch)
    page_before = PartMethod("_branch", BranchPages.page_before)
    plan = PartMethod("_branch", BranchPages.plan)

    release_history = PartMethod("_runner", TurnRunner.release_history)

    def refresh(self) -> bool:
        """Catch up with other processes' writes when idle; True when the branch changed."""
        if self.busy or self._runner.closed:
            return False
        return finish_now(self._branch.catch_up(on_the_spot))

    # -- turns (turn/turn_starts.py, turn/turn_runner.py) --------------------------------
    add_user_message = AtOnce("_starts", TurnStarts.add_user_message)
    send = AtOnce("_starts", TurnStarts.send)
    run = AtOnce("_starts", TurnStarts.run)
    send_off_loop = PartMethod("_starts", TurnStarts.send)
    run_off_loop = PartMethod("_starts", TurnStarts.run)
    regenerate = AtOnce("_starts", TurnStarts.regenerate)
    retry = AtOnce("_starts", TurnStarts.regenerate)
    edit = AtOnce("_starts", TurnStarts.edit)
    compact = PartMethod("_compact_now", CompactNow.compact)
    stop_tool_call = PartMethod("_client", ConversationClient.stop_tool_call)
    make_larger_window = PartMethod("_window", LargerWindow.make_larger_window)
    test_model = PartMethod("_client", ConversationClient.test_model)

    # -- what MCP servers bring (mcp/), slash commands and skills (commands/) -------------
    mcp_prompts = PartMethod("_mcp", ConversationMcp.prompts)
    mcp_resources = PartMethod("_mcp", ConversationMcp.resources)
    get_prompt = PartMethod("_mcp", ConversationMcp.get_prompt)
    complete_argument = PartMethod("_mcp", ConversationMcp.complete)
    attach_resource = PartMethod("_mcp", ConversationMcp.attach)
    slash_commands = PartMethod("_commands", ConversationCommands.listed)
    slash_help = PartMethod("_commands", ConversationCommands.help_text)
    expand_slash = PartMethod("_commands", ConversationCommands.expand)
    skills = PartMethod("_commands", ConversationCommands.skills)
    skill_listing = PartMethod("_commands", ConversationCommands.skill_listing)
    custom_commands = PartMethod("_commands", ConversationCommands.custom_commands)
    server_questions = PartMethod("_questions", ServerQuestions.pending)
    answer_sampling = PartMethod("_questions", ServerQuestions.answer_sampling)
    answer_elicitation = PartMethod("_questions", ServerQuestions.answer_elicitation)

    def stop(self) -> None:
        """Stop the running turn (the partial reply is kept and marked interrupted).

        A command preview waiting in it is discarded first (its call then ends).
        """
        self._previews.withdraw("the turn was stopped")
        self._runner.stop()

    async def interrupt(self) -> bool:
        """Stop the running turn, keeping what streamed so far; False if none runs."""
        self._previews.withdraw("the turn was stopped")
        return await self._runner.interrupt()

    async def close(self) -> None:
        """Deny pending approvals, cancel the turn, discard previews, release the client."""
        await self._runner.close()
        await self._previews.close()

    # -- files (files/working_folder.py, files/folder_undo.py) ---------------------------
    @property
    def checkpoints(self) -> ConversationCheckpoints:
        """Its working folder's checkpoints (undo, restore, files changed), made on first use."""
        return self._folder.checkpoints

    preview_change = PartMethod("_folder", WorkingFolder.preview_change)
    project_instructions = PartMethod("_folder", WorkingFolder.project_instructions)
    has_file_changes = PartMethod("_undo", FolderUndo.has_file_changes)
    undo_turn = PartMethod("_undo", FolderUndo.undo_turn)
    restore_files = PartMethod("_undo", FolderUndo.restore_files)
    restore_plan = PartMethod("_undo", FolderUndo.restore_plan)
    restore_checkpoint = PartMethod("_undo", FolderUndo.restore_checkpoint)
    command_checkpoint = PartMethod("_undo", FolderUndo.command_checkpoint)

    # -- command previews (files/command_previews.py) ------------------------------------
    @property
    def pending_previews(self) -> list[PreviewCard]:
        """Command previews waiting for Apply or Discard, oldest first."""
        return self._previews.pending

    preview_command = PartMethod("_previews", CommandPreviewDesk.preview_command)
    apply_preview = PartMethod("_previews", CommandPreviewDesk.apply)
    discard_preview = PartMethod("_previews", CommandPreviewDesk.discard)
