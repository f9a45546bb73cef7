"""One turn at a time: the gate a start passes, the task that runs the turn, and its end.

One part of :class:`~desktop_agent.session.conversation.ConversationSession`.
A turn goes through it in three steps, each with one job:

1. :meth:`TurnRunner.starting`: the gate. A turn may start (not closed, none
   running, a server and a model set), the record and the branch are read
   fresh, and the store's turn lease is taken before anything is written. The
   user action (:mod:`~desktop_agent.session.turn.turn_starts`) stores its
   prompt inside it and then calls :meth:`TurnRunner.start`, which hands the
   lease to a task that is kept referenced and cancelled on close.
2. ``_run``: the task. It holds the lease for the whole turn, marks the
   turn's files (closed, and what changed reported, even when the turn is
   cancelled) and reports the state: running, then idle with the outcome.
3. ``_stream``: the reply. Each block the core yields is written through the
   :class:`~desktop_agent.session.turn.recorder.TurnRecorder` first, then
   reported; a failure ends the turn with :class:`TurnFailed`, not an exception.

Stop, interrupt and close end a turn from outside.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from desktop_agent.core.context.content_parts import has_images
from desktop_agent.session.branch.branch_reading import (
    REFUSED_PICTURE,
    RESOURCE_CHANGES,
    last_user_index,
    with_resource_changes,
)
from desktop_agent.session.errors import NotConfiguredError, SessionError, TurnRunningError
from desktop_agent.session.events import (
    MessageStored,
    Outcome,
    ReplyEnded,
    ResourcesChanged,
    SessionEvent,
    TurnFailed,
)
from desktop_agent.session.settings import defaults
from desktop_agent.session.settings.setting_values import has_server
from desktop_agent.session.store_calls import StoreCalls, on_the_spot, reply_calls
from desktop_agent.session.turn.context_check import ContextChecker
from desktop_agent.session.turn.conversation_client import OptionsReadFor
from desktop_agent.session.turn.recorder import TurnRecorder
from desktop_agent.session.turn.turn_blocks import TurnBlocks
from desktop_agent.store.errors import ConversationBusyError

if TYPE_CHECKING:
    from desktop_agent.session.approvals.approval_broker import ApprovalBroker
    from desktop_agent.session.branch.branch_pages import BranchPages
    from desktop_agent.session.branch.turn_tail import TurnHistory
    from desktop_agent.session.files.file_checkpoints import TurnMark
    from desktop_agent.session.files.working_folder import WorkingFolder
    from desktop_agent.session.settings.settings_record import SettingsRecord
    from desktop_agent.session.turn.conversation_client import ConversationClient
    from desktop_agent.session.turn.turn_status import TurnStatus
    from desktop_agent.store import ConversationRecord, MessageRecord, Store, TurnLease

log = logging.getLogger("desktop_agent.session.conversation")

Content = str | list[dict[str, Any]]
"""A user message: text, or OpenAI content parts (text and pictures)."""
Vet = Callable[[dict[str, Any]], None]
"""Checks the settings just read, before anything is written (raises to refuse)."""


@dataclass(frozen=True)
class TurnRequest:
    """What a turn sends.

    Attributes:
        prompt: The user message answered ("" when the turn answers tool results).
        history: The history before it, whose each entry is, and the compaction
            the client continues from.
        base_length: Where the turn's own messages start in the client's history.
        options: What the start read for the turn's options, if it read them.
    """

    prompt: Content
    history: TurnHistory
    base_length: int
    options: OptionsReadFor | None = None

    @property
    def base(self) -> list[dict[str, Any]]:
        """The history sent before the prompt."""
        return self.history.base


class TurnRunner:
    """Runs the conversation's turns, one at a time.

    Args:
        store: The conversation store.
        owner: Who runs turns, as other processes are told (``window``, ``server``).
        settings: The conversation's record.
        branch: Its active branch.
        folder: Its working folder.
        broker: Decides the turn's tool calls.
        client: Holds the conversation's core client.
        status: The session's run state.
        emit: Reports session events.

    Attributes:
        closed: The session was closed: no turn starts any more.
    """

    def __init__(self, store: Store, owner: str, settings: SettingsRecord,
                 branch: BranchPages, folder: WorkingFolder, broker: ApprovalBroker,
                 client: ConversationClient, status: TurnStatus,
                 emit: Callable[[SessionEvent], None]) -> None:
        self._store = store
        self._owner = owner
        self._settings = settings
        self._branch = branch
        self._folder = folder
        self._broker = broker
        self._client = client
        self._status = status
        self._emit = emit
        self.closed = False
        self._checker = ContextChecker()
        self._task: asyncio.Task[None] | None = None
        self._stop_task: asyncio.Task[bool] | None = None
        # The lease taken by starting(), until the turn's task takes it over.
        self._pending_lease: TurnLease | None = None
        # True while a turn's start waits for the store (off the loop, in serve).
        self._starting_turn = False
        # How the running turn's store calls run (set by each start; see store_calls).
        self._calls: StoreCalls = on_the_spot

    @property
    def busy(self) -> bool:
        """Whether a turn runs (or is starting) in this process."""
        return self._starting_turn or (self._task is not None and not self._task.done())

    @property
    def task(self) -> asyncio.Task[None] | None:
        """The task running the current turn, if any."""
        return self._task

    def release_history(self) -> bool:
        """Hold no copy of the history until the next turn; False while one runs.

        The branch and the client's history are read again at the next turn's
        start (as every turn does, to start from what is on disk).
        """
        if self.busy or self.closed:
            return False
        self._branch.release()
        self._client.release_history()
        return True

    # -- the gate -------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def starting(self, call: StoreCalls, vet: Vet | None = None,
                       read: ConversationRecord | None = None,
                       path: list[MessageRecord] | None = None, *,
                       with_first_write: bool = False,
                       whole: bool = False) -> AsyncIterator[TurnLease]:
        """Check a turn may start and take its lease now, before anything is written.

        Taken here, not when the turn's task first runs, so two processes (two
        ``serve`` replicas, a window and a server) asked at the same moment cannot
        both store a message and start: the second is refused at once with
        :class:`ConversationBusyError`. Given back if starting fails. While the
        store calls run (in a worker thread, for ``serve``) the session counts
        as busy, so a second start here is refused too.

        Args:
            call: Runs each store call, from here to the turn's last write.
            vet: Checks the settings just read, before anything is written.
            read: The conversation as the caller read it just now (not read again).
            path: Its active branch, read by the caller with ``read`` (not read again).
            with_first_write: The lease is not taken here but by the block's first
                store write, in its transaction (a prompt stored with
                ``add_message(lease=...)``); the block gets the lease.
            whole: The block needs the whole branch (an edit, a regenerate, a
                compaction), not only what the next request sends.
        """
        if self.closed:
            raise SessionError("The conversation was closed.")
        if self.busy:
            raise TurnRunningError("A turn is already running in this conversation.")
        self._starting_turn = True
        try:
            await self._branch.catch_up(call, read, path)  # each turn starts from what is on disk
            if not has_server(self._settings.current):
                raise NotConfiguredError("Pick a server and a model first.")
            # Whether another process runs a turn here is not read first: taking the
            # lease refuses then, naming the holder, in the same calls.
            await self._branch.read_for_turn(call, whole)
            if vet is not None:
                vet(self._settings.record.settings)
            lease = self._store.turn_lease(self._settings.conversation_id, self._owner)
            if not with_first_write:
                await call(lease.acquire)
            self._pending_lease = lease
            try:
                if self.closed:  # closed while the store was asked
                    raise SessionError("The conversation was closed.")
                self._calls = call
                yield lease
            except BaseException:
                self._pending_lease = None
                lease.release()
                raise
            if self._task is None and self._pending_lease is lease:  # nothing was started
                self._pending_lease = None
                lease.release()
        finally:
            self._starting_turn = False

    def start(self, request: TurnRequest) -> None:
        """Run the turn in a task of its own, which takes over the lease ``starting`` took."""
        if self.closed:  # closed while a start waited for the store
            raise SessionError("The conversation was closed.")
        self._status.touch()
        # The task first, so listeners told "running" already see the session busy.
        self._task = asyncio.ensure_future(self._run(request))
        self._status.set("running")

    # -- the task -------------------------------------------------------------------------
    async def _run(self, request: TurnRequest) -> None:
        outcome: Outcome = "error"
        try:
            lease, self._pending_lease = self._pending_lease, None
            async with lease or self._store.turn_lease(self._settings.conversation_id,
                                                       self._owner):
                self._broker.forget_decisions()
                self._folder.changes.forget()
                from desktop_agent.session.files.file_checkpoints import TurnMark

                path = self._branch.turn_path
                answered = last_user_index(path)
                mark = TurnMark(message=path[answered].id if answered is not None else None)
                try:
                    outcome = await self._stream(request, mark)
                finally:
                    # Shielded: a cancelled turn still records what its tools changed.
                    await asyncio.shield(self._folder.close_checkpoints(mark))
        except ConversationBusyError as exc:
            self._emit(TurnFailed(exc))
        finally:
            self._task = None
            self._status.ended(outcome, report=not self.closed)

    async def _stream(self, request: TurnRequest, mark: TurnMark) -> Outcome:
        path = self._branch.turn_path
        prompt_record = path[-1] if path and path[-1].role == "user" else None
        recorder = TurnRecorder(self._store, self._settings.conversation_id, path,
                                str(self._settings.current.get("model") or ""),
                                self._broker.decision_of,
                                on_stored=lambda record: self._emit(MessageStored(record)),
                                change_of=self._folder.changes.change_of,
                                stopped_by_person=self._client.stopped_by_person,
                                history_ids=[*request.history.ids, *(
                                    [prompt_record.id] if prompt_record is not None else [])])
        started = False
        try:
            async with self._client.local_server() as local:  # None: not on this computer
                client = await self._client.ready(mark, request.options, local)
                prompt = await self._with_resource_changes(request.prompt, prompt_record)
                client.message_history = request.base
                keeper, history = client.context_keeper, request.history
                if history.compaction is not None:  # continue the stored view
                    keeper.restore(history.compaction, request.base)
                # before sending: does it fit the window the server applies? (the keeper
                # then sizes the requests by the window asked here)
                if history.stand_ins:  # not read: what the compaction covers
                    check = await self._checker.check(client.options, request.base[keeper.covered:],
                                                      prompt, keeper.covered_tokens)
                else:
                    check = await self._checker.check(client.options, request.base, prompt)
                self._emit(check.event())
                await client.query(prompt)
                blocks = TurnBlocks(recorder, client, self._emit)
                started = True
                call = reply_calls(self._calls)  # the reply's steps: not held like a start
                streamed_piece, handle = blocks.streamed_piece, blocks.handle
                async for item in client.receive_messages():
                    if not streamed_piece(item):  # the usual piece: no coroutine
                        await handle(item, call)
            interrupted = bool(client.turn_metadata.get("interrupted"))
            await recorder.finish_reply("interrupted" if interrupted else "complete", call)
            recorder.finish("interrupted" if interrupted else "complete", client.history,
                            request.base_length)
            self._emit(ReplyEnded(interrupted))
            self._client.after_turn()
            return "interrupted" if interrupted else "complete"
        except asyncio.CancelledError:
            recorder.finish("interrupted")
            self._emit(ReplyEnded(True))
            raise
        except Exception as exc:
            log.info("turn failed in %s: %s", self._settings.conversation_id,
                     type(exc).__name__, exc_info=not _is_expected(exc))
            recorder.finish("error")
            if started:
                self._emit(ReplyEnded(True))
            if prompt_record is not None and _refused_picture(exc, prompt_record):
                self._set_aside(prompt_record)
            self._emit(TurnFailed(exc))
            return "error"
        finally:
            self._client.mcp.questions.withdraw_all()  # a server must not wait on a gone turn

    async def _with_resource_changes(self, prompt: Any, record: MessageRecord | None) -> Any:
        """The prompt, followed by attached resources that changed (kept in its metadata)."""
        changes = await self._client.mcp.resource_changes()
        if not changes or record is None or record.role != "user":
            return prompt
        updated = await self._calls(partial(self._store.update_message_metadata, record.id,
                                            {RESOURCE_CHANGES: changes}))
        self._branch.replace_record(updated)
        self._emit(ResourcesChanged(
            tuple((str(c["server"]), str(c["uri"])) for c in changes),
            "Read again for this turn, as they changed since they were attached: "
            + ", ".join(f'{c["uri"]} ({c["server"]})' for c in changes) + "."))
        return with_resource_changes(prompt, changes)

    def _set_aside(self, record: MessageRecord) -> None:
        """Keep a prompt whose picture was refused out of every later request."""
        updated = self._store.update_message_metadata(record.id, {REFUSED_PICTURE: True})
        self._branch.replace_record(updated)

    # -- ending from outside --------------------------------------------------------------
    def stop(self) -> None:
        """Stop the running turn (the partial reply is kept and marked interrupted)."""
        if self.busy and (self._stop_task is None or self._stop_task.done()):
            self._stop_task = asyncio.ensure_future(self.interrupt())

    async def interrupt(self) -> bool:
        """Stop the running turn, keeping what streamed so far; False if none runs."""
        task = self._task
        if task is None or task.done():
            return False
        self._status.set("interrupting")
        client = self._client.client
        if client is not None and client.is_running:
            with contextlib.suppress(Exception):  # the turn may have ended meanwhile
                await client.interrupt()
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(task), defaults.STOP_GRACE_SECONDS)
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._drop_pending_lease()
        return True

    async def close(self) -> None:
        """Deny pending approvals, cancel the turn and release the client; idempotent."""
        if self.closed:
            return
        self.closed = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._drop_pending_lease()
        if self._stop_task is not None and not self._stop_task.done():
            self._stop_task.cancel()
        await self._client.close()

    def _drop_pending_lease(self) -> None:
        """Give back a lease whose turn was cancelled before its task ever ran."""
        lease, self._pending_lease = self._pending_lease, None
        if lease is not None:
            with contextlib.suppress(Exception):  # the store may be closed already
                lease.release()


def _refused_picture(exc: BaseException, prompt: MessageRecord) -> bool:
    """The server refused the picture of the prompt this turn sent."""
    from desktop_agent.core.errors import VisionNotSupportedError

    return isinstance(exc, VisionNotSupportedError) and has_images(prompt.message.get("content"))


def _is_expected(exc: BaseException) -> bool:
    from desktop_agent.core.errors import AgentError
    from desktop_agent.session.tools.tool_catalog import WorkdirError

    return isinstance(exc, AgentError | WorkdirError | ConversationBusyError)
