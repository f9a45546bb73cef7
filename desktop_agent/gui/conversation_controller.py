"""One conversation's brain: its Client, its running turn, its autosave.

The controller is the only thing a conversation's widgets talk to. It owns
the core :class:`~desktop_agent.core.client.Client` and the task running the
current turn (kept referenced, cancelled on close), turns the core's blocks
into Qt signals, writes every message to the store as it happens (a streaming
reply is checkpointed while it grows), and answers the core's approval
callback by queueing a request for the approval dock and awaiting it.

The core is imported lazily (inside the first turn) so the window paints
before the openai SDK loads.

Split by job: :mod:`.turn_blocks` turns each streamed block into a store write
and a signal, :mod:`desktop_agent.session.options` maps settings to agent options,
:mod:`desktop_agent.session.history` says what the model and the transcript see of
the active branch. This module keeps the conversation's lifecycle: settings,
send / retry / regenerate / edit (each a branch in the store), stop and close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal

from desktop_agent.session import config as session_config
from desktop_agent.session.approvals import ApprovalBroker
from desktop_agent.session.history import (
    DEFAULT_TITLE,
    TITLE_LENGTH,
    last_user_index,
    model_history,
    title_from,
    view_dict,
)
from desktop_agent.session.options import SessionEnvironment, build_options
from desktop_agent.session.recorder import TurnRecorder
from desktop_agent.session.tools import ToolCatalog
from desktop_agent.store.errors import ConversationBusyError, StaleParentError

from .approval_gate import DockAsker
from .approval_queue import ApprovalQueue
from .error_messages import describe_error
from .turn_blocks import TurnBlocksMixin
from .turn_figures import TurnFigures

if TYPE_CHECKING:
    from desktop_agent.core.client import Client
    from desktop_agent.store import ConversationRecord, MessageRecord, Store

log = logging.getLogger("desktop_agent.gui.conversation")

CHECKPOINT_INTERVAL_MS = 500

# Other modules import these names from here.
__all__ = ["CHECKPOINT_INTERVAL_MS", "DEFAULT_TITLE", "TITLE_LENGTH", "ConversationController",
           "TurnFigures"]


class ConversationController(TurnBlocksMixin, QObject):
    """Runs one conversation and keeps its store record up to date.

    Signals:
        title_changed(str): The conversation's title changed.
        settings_changed(dict): Its settings changed (server, model, sampling...).
        busy_changed(bool): A turn started (True) or ended (False).
        transcript_reset(list): Show these stored messages instead of what is shown
            (each a dict: ``id``, ``role``, ``message``, ``metadata``, ``status``).
        user_message(str, str): A user message was sent (text, message id).
        assistant_started(str): An assistant reply begins (message id).
        text_delta(str): A piece of the answer.
        thinking_delta(str): A piece of reasoning.
        tool_call(str, str, object, object): id, name, input dict, source.
        tool_result(str, str, bool): id, content, is_error.
        tool_input_changed(str, object): id, the input the call ran with (edited
            in the approval dock); the card shows it instead of the model's.
        tool_error(str, object): text, tool use id or None.
        assistant_finished(bool): The reply ended (True: it was interrupted).
        error(str, bool): A turn failed: sentence, whether Retry makes sense.
        figures_changed(object): New :class:`TurnFigures`.
        pending_approvals_changed(int): Requests of this conversation waiting.
        approval_requested(object): A new :class:`ApprovalRequest` (for notifications).
        notice(str): Something the person should know that is not part of the
            transcript (e.g. a remembered approval could not be saved).
    """

    title_changed = Signal(str)
    settings_changed = Signal(dict)
    busy_changed = Signal(bool)
    transcript_reset = Signal(list)
    user_message = Signal(str, str)
    assistant_started = Signal(str)
    text_delta = Signal(str)
    thinking_delta = Signal(str)
    tool_call = Signal(str, str, object, object)
    tool_result = Signal(str, str, bool)
    tool_input_changed = Signal(str, object)
    tool_error = Signal(str, object)
    assistant_finished = Signal(bool)
    error = Signal(str, bool)
    figures_changed = Signal(object)
    pending_approvals_changed = Signal(int)
    approval_requested = Signal(object)
    notice = Signal(str)

    def __init__(self, store: Store, record: ConversationRecord, approvals: ApprovalQueue,
                 tools: ToolCatalog | None = None, *, approval_timeout: float | None = 300.0,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._store = store
        self._record = record
        self._approvals = approvals
        self._tools = tools or ToolCatalog()
        self._approval_timeout = approval_timeout
        self._env = SessionEnvironment(tools=self._tools, approval_timeout=approval_timeout)
        self._client: Client | None = None
        self._client_stack: contextlib.AsyncExitStack | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop_task: asyncio.Future[None] | None = None
        self._closed = False
        self._path: list[MessageRecord] = store.active_path(record.id)
        self._recorder: TurnRecorder | None = None
        self._transcript_open = False
        self._reported_tool_problems: list[str] = []
        self._asker = DockAsker(approvals, lambda: self._record.title,
                                self.approval_requested.emit)
        self.approval_gate = ApprovalBroker(
            record.id, self._asker, settings=lambda: self._record.settings,
            timeout=approval_timeout, config=self._env.config,
            allow_in_conversation=self._allow_in_conversation,
            on_settled=self._asker.settled, on_problem=self.notice.emit)
        self._figures = TurnFigures(model=str(record.settings.get("model") or ""),
                                    context_length=record.settings.get("context_length"))
        self._checkpoint_timer = QTimer(self)
        self._checkpoint_timer.setInterval(CHECKPOINT_INTERVAL_MS)
        self._checkpoint_timer.timeout.connect(self._checkpoint)
        approvals.pending_count_changed.connect(self._on_pending_count)

    # -- properties ----------------------------------------------------------

    @property
    def conversation_id(self) -> str:
        """The store id of this conversation."""
        return self._record.id

    @property
    def title(self) -> str:
        """The conversation's title."""
        return self._record.title

    @property
    def settings(self) -> dict[str, Any]:
        """A copy of the conversation's settings."""
        return dict(self._record.settings)

    @property
    def busy(self) -> bool:
        """Whether a turn is running."""
        return self._task is not None and not self._task.done()

    @property
    def task(self) -> asyncio.Task[None] | None:
        """The task running the current turn, if any."""
        return self._task

    @property
    def figures(self) -> TurnFigures:
        """The latest status-line figures."""
        return self._figures

    @property
    def has_server(self) -> bool:
        """Whether a server and a model are chosen."""
        s = self._record.settings
        return bool(s.get("base_url") and s.get("model"))

    @property
    def can_regenerate(self) -> bool:
        """Whether there is a user message to answer again."""
        return not self.busy and any(r.role == "user" for r in self._path)

    def stored_messages(self) -> list[dict[str, Any]]:
        """The active branch as shown in the transcript."""
        return [view_dict(r) for r in self._path]

    def session_allowed_tools(self) -> list[str]:
        """Tools allowed for this conversation without asking."""
        return session_config.conversation_allowed_tools(self._record.settings)

    # -- settings ------------------------------------------------------------

    def rename(self, title: str) -> None:
        """Give the conversation a new title (blank titles are ignored)."""
        title = " ".join(title.split())
        if not title or title == self._record.title:
            return
        self._record = self._store.update_conversation(self._record.id, title=title)
        self.title_changed.emit(title)

    def update_settings(self, **changes: Any) -> None:
        """Change settings (None removes a key); takes effect from the next turn.

        Saved by key (the store's patch), so keys another process wrote since
        this window read the conversation (the REST server's ``confirm_tools``,
        say) are kept.
        """
        current = self._record.settings
        changes = {k: v for k, v in changes.items()
                   if (v is None and k in current) or (v is not None and current.get(k) != v)}
        if not changes:
            return
        self._store.patch_settings(self._record.id, changes)
        self._reload_record()

    def _reload_record(self) -> None:
        """Re-read title and settings from the store (another process may have written)."""
        fresh = self._store.get_conversation(self._record.id)
        if fresh is None:
            return
        old = self._record
        self._record = fresh
        if fresh.title != old.title:
            self.title_changed.emit(fresh.title)
        if fresh.settings != old.settings:
            settings = fresh.settings
            self._figures.model = str(settings.get("model") or "")
            self._figures.context_length = settings.get("context_length")
            self.settings_changed.emit(dict(settings))
            self.figures_changed.emit(self._figures)

    def refresh_from_store(self) -> bool:
        """Catch up with writes of another process (REST server, import) when idle.

        Re-reads the settings and the active branch; returns True when the
        branch changed (the transcript is reset to it).
        """
        if self.busy or self._closed:
            return False
        self._reload_record()
        path = self._store.active_path(self._record.id)
        if [r.id for r in path] == [r.id for r in self._path] and \
                [r.status for r in path] == [r.status for r in self._path]:
            return False
        self._path = path
        self.transcript_reset.emit(self.stored_messages())
        return True

    def _busy_elsewhere(self) -> bool:
        """True (and the person told) when another process runs a turn here."""
        if self._store.turn_lease_holder(self._record.id) is None:
            return False
        self.error.emit("This conversation is busy in another window or server. Wait for its "
                        "reply, then send again.", False)
        return True

    def set_server(self, base_url: str, model: str, *, api_key_name: str | None = None,
                   context_length: int | None = None) -> None:
        """Use this server and model from the next turn (mid-conversation too)."""
        self.update_settings(base_url=base_url, model=model, api_key_name=api_key_name,
                             context_length=context_length)

    def revoke_conversation_approval(self, tool_name: str) -> None:
        """Stop allowing a tool without asking in this conversation."""
        self.update_settings(permission_rules=session_config.revoke_in_conversation(
            self._record.settings, tool_name))

    # -- user actions --------------------------------------------------------

    def send(self, text: str) -> bool:
        """Send a user message and stream the reply (False when busy or empty)."""
        text = text.strip()
        if not text or self.busy or self._closed:
            return False
        # Each turn starts from what is on disk: another process may have
        # answered, appended or changed settings since this window last looked.
        self.refresh_from_store()
        if not self.has_server:
            self.error.emit("Pick a server and a model first (toolbar: Server).", False)
            return False
        if self._busy_elsewhere():
            return False
        base = model_history(self._path)
        try:
            record = self._store.add_message(
                self._record.id, {"role": "user", "content": text},
                parent_id=self._leaf_id(), expected_parent=self._leaf_id())
        except StaleParentError:
            self.refresh_from_store()
            self.error.emit("This conversation changed in another window or server; it was "
                            "reloaded. Send your message again.", False)
            return False
        self._path.append(record)
        self.user_message.emit(text, record.id)
        if self._record.title == DEFAULT_TITLE:
            self.rename(title_from(text))
        self._start_turn(text, base)
        return True

    def retry(self) -> bool:
        """Run the last user message again (after an error); a new branch in the store."""
        return self._rerun_last_user()

    def regenerate(self) -> bool:
        """Answer the last user message again; the old answer stays as a sibling branch."""
        return self._rerun_last_user()

    def edit_and_resend(self, message_id: str, text: str) -> bool:
        """Replace a user message with ``text`` (a sibling branch) and answer it."""
        text = text.strip()
        if not text or self.busy or self._closed:
            return False
        if self._busy_elsewhere():
            return False
        index = next((i for i, r in enumerate(self._path) if r.id == message_id), None)
        if index is None or self._path[index].role != "user":
            return False
        old = self._path[index]
        prefix = self._path[:index]
        record = self._store.add_message(self._record.id, {"role": "user", "content": text},
                                         parent_id=old.parent_id,
                                         new_root=old.parent_id is None)
        self._path = [*prefix, record]
        self.transcript_reset.emit(self.stored_messages())
        self._start_turn(text, model_history(prefix))
        return True

    def stop(self) -> None:
        """Stop the running turn; the partial reply is kept and marked interrupted."""
        if not self.busy:
            return
        self._approvals.cancel_conversation(self._record.id)
        if self._client is not None and self._client.is_running:
            self._stop_task = asyncio.ensure_future(self._interrupt())
        elif self._task is not None:
            # Not streaming yet (still connecting or loading): nothing to keep.
            self._task.cancel()

    async def _interrupt(self) -> None:
        client, task = self._client, self._task
        if client is None or task is None:
            return
        try:
            await client.interrupt()
        except Exception as exc:  # the turn may have ended meanwhile
            log.debug("interrupt failed: %s", exc)
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), 2.0)
        if not task.done():
            task.cancel()

    async def close(self) -> None:
        """Deny pending approvals, cancel the turn and release the client."""
        if self._closed:
            return
        self._closed = True
        self._approvals.cancel_conversation(self._record.id)
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._stop_task is not None and not self._stop_task.done():
            self._stop_task.cancel()
        self._checkpoint_timer.stop()
        if self._client_stack is not None:
            with contextlib.suppress(Exception):
                await self._client_stack.aclose()
        self._client = None
        self._client_stack = None

    # -- turns -----------------------------------------------------------------

    def _rerun_last_user(self) -> bool:
        if self.busy or self._closed:
            return False
        self.refresh_from_store()
        if self._busy_elsewhere():
            return False
        index = last_user_index(self._path)
        if index is None:
            return False
        user = self._path[index]
        self._store.set_active_leaf(self._record.id, user.id)
        self._path = self._path[:index + 1]
        self.transcript_reset.emit(self.stored_messages())
        self._start_turn(str(user.message.get("content") or ""), model_history(self._path[:index]))
        return True

    def _start_turn(self, prompt: str, base_history: list[dict[str, Any]]) -> None:
        self._task = asyncio.ensure_future(self._run_turn(prompt, base_history))
        self.busy_changed.emit(True)

    async def _run_turn(self, prompt: str, base_history: list[dict[str, Any]]) -> None:
        try:
            # One turn at a time per conversation, across processes (REST servers too).
            async with self._store.turn_lease(self._record.id, "window"):
                await self._run_leased_turn(prompt, base_history)
        except ConversationBusyError:
            self.error.emit("This conversation is busy in another window or server. Wait for "
                            "its reply, then send again.", False)
        finally:
            # Only now is the lease given back: the next send sees it free.
            self._task = None
            if not self._closed:
                self.busy_changed.emit(False)

    async def _run_leased_turn(self, prompt: str, base_history: list[dict[str, Any]]) -> None:
        self.approval_gate.forget_decisions()
        recorder = TurnRecorder(self._store, self._record.id, self._path, self._figures.model,
                                self.approval_gate.decision_of)
        self._recorder = recorder
        self._checkpoint_timer.start()
        try:
            client = await self._prepare_client()
            client.message_history = base_history
            await client.query(prompt)
            async for item in client.receive_messages():
                self._handle(item, recorder)
            interrupted = bool(client.turn_metadata.get("interrupted"))
            recorder.finish("interrupted" if interrupted else "complete", client.history,
                            len(base_history))
            self._end_transcript_message(interrupted)
        except asyncio.CancelledError:
            recorder.finish("interrupted")
            self._end_transcript_message(True)
            raise
        except Exception as exc:
            description = describe_error(exc)
            log.info("turn failed in %s: %s", self._record.id, type(exc).__name__,
                     exc_info=not _is_core_error(exc))
            recorder.finish("error")
            self._end_transcript_message(True)
            self.error.emit(description.sentence, description.can_retry)
        finally:
            self._checkpoint_timer.stop()
            self._recorder = None

    async def _prepare_client(self) -> Client:
        """The conversation's client with options built from its current settings."""
        options = await build_options(self._record.id, self._record.settings, self._env,
                                      self.approval_gate)
        problems = self._tools.mcp_problems()
        if problems and problems != self._reported_tool_problems:
            self._reported_tool_problems = problems
            self.notice.emit(" ".join(problems))
        if self._client is None:
            from desktop_agent.core.client import Client

            stack = contextlib.AsyncExitStack()
            self._client = await stack.enter_async_context(Client(options))
            self._client_stack = stack
        else:
            self._client.update_options(options)
        return self._client

    # -- approvals -------------------------------------------------------------

    def _allow_in_conversation(self, tool_name: str) -> None:
        if tool_name not in self.session_allowed_tools():
            self.update_settings(permission_rules=session_config.allow_in_conversation(
                self._record.settings, tool_name))

    def _on_pending_count(self, conversation_id: str, count: int) -> None:
        if conversation_id == self._record.id:
            self.pending_approvals_changed.emit(count)

    # -- helpers ---------------------------------------------------------------

    def _leaf_id(self) -> str | None:
        return self._path[-1].id if self._path else None


def _is_core_error(exc: BaseException) -> bool:
    from desktop_agent.core.errors import AgentError

    return isinstance(exc, AgentError)
