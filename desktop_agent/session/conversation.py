"""ConversationSession: one conversation's life, the same for the window and the REST server.

The session owns the conversation's core :class:`~desktop_agent.core.client.Client`
and the task running its turn (kept referenced, cancelled on close). Each
turn takes the store's turn lease (one turn at a time per conversation,
across processes), re-reads the settings and the active branch, builds its
options in :mod:`.options`, decides tool calls through the
:class:`~.approvals.ApprovalBroker`, writes every message through the
:class:`~.recorder.TurnRecorder` and reports :mod:`.events` to its
listeners. Front ends are adapters: the window maps events to Qt signals,
the REST server to its event log; neither runs a turn itself.

User actions raise typed errors (:class:`SessionError`, the store's
``ConversationBusyError`` and ``StaleParentError``) that each front end maps
to a sentence or an HTTP status; nothing here knows either.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_agent.core.context.content_parts import has_images, prompt_text
from desktop_agent.session.branch_reading import (
    DEFAULT_TITLE,
    REFUSED_PICTURE,
    last_user_index,
    model_history,
    title_from,
)
from desktop_agent.store.errors import ConversationBusyError, NotFoundError

from . import config as session_config
from . import defaults
from .approvals import ApprovalAnswer, ApprovalBroker, Asker, ToolCallQuestion
from .errors import NotConfiguredError, NothingToAnswerError, SessionError, TurnRunningError
from .events import (
    ApprovalAsked,
    ApprovalSettled,
    MessageStored,
    Notice,
    Outcome,
    PathReset,
    ReplyEnded,
    RunState,
    SessionEvent,
    SettingsChanged,
    StateChanged,
    TitleChanged,
    TurnFailed,
    UserMessageAdded,
)
from .file_changes import ChangePreview, FileChangeWatch, preview_change
from .folder_undo import FolderUndo
from .model_doctor import ModelDoctor
from .options import OptionsRead, SessionEnvironment, build_options, read_for_options
from .plan import Plan, plan_of
from .project_instructions import ProjectInstructions, project_instructions_for
from .recorder import TurnRecorder, stored_compaction
from .setting_values import has_server
from .store_calls import StoreCalls, finish_now, in_a_thread, on_the_spot
from .turn import TurnBlocks

if TYPE_CHECKING:
    from desktop_agent.core.client import Client
    from desktop_agent.core.tooling.probe_result import ProbeResult
    from desktop_agent.core.types import ToolUseBlock
    from desktop_agent.store import ConversationRecord, MessageRecord, Store, TurnLease

    from .file_checkpoints import ConversationCheckpoints, TurnMark

log = logging.getLogger("desktop_agent.session.conversation")

Listener = Callable[[SessionEvent], None]
_OptionsRead = tuple[Mapping[str, Any], OptionsRead | Exception]
"""Settings, and what :func:`~.options.read_for_options` read (or raised) for them."""
Content = str | list[dict[str, Any]]
"""A user message: text, or OpenAI content parts (text and pictures)."""



class ConversationSession(FolderUndo):
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
        state: ``idle``, ``running``, ``waiting_approval`` or ``interrupting``.
        broker: The conversation's approval broker.
        checkpoints: Its working folder's checkpoints (undo, restore, files changed).
        last_used: ``time.monotonic()`` of the last action (for idle eviction).
    """

    def __init__(self, store: Store, conversation_id: str, env: SessionEnvironment,
                 ask: Asker, *, owner: str = "window",
                 record: ConversationRecord | None = None) -> None:
        if record is None or record.id != conversation_id:
            record = store.get_conversation(conversation_id)
            if record is None:
                raise NotFoundError(f"no conversation {conversation_id}")
        self._store = store
        self._record: ConversationRecord = record
        # The whole branch is read only when something needs it (a turn, refresh):
        # opening a long conversation reads just the page the window shows.
        self._loaded_path: list[MessageRecord] | None = None
        self._shown_page: tuple[int, list[tuple[str, str]]] | None = None  # (limit, ids)
        self._env = env
        self._ask = ask
        self._owner = owner
        self._listeners: list[Listener] = []
        self.state: RunState = "idle"
        self._waiting = 0
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop_task: asyncio.Task[bool] | None = None
        # The lease taken by _starting, until the turn's task takes it over.
        self._pending_lease: TurnLease | None = None
        # True while a turn's start waits for the store (off the loop, in serve).
        self._starting_turn = False
        # How the running turn's store calls run (set by each start; see store_calls).
        self._turn_calls: StoreCalls = on_the_spot
        self._stopped_calls: set[str] = set()  # commands ended by Stop on their card
        self._closed = False
        self._reported_problems: list[str] = []
        self.last_used = time.monotonic()
        self._file_changes = FileChangeWatch(self._builtin_workdir)
        self.broker = ApprovalBroker(
            conversation_id, self._asked, settings=lambda: self._record.settings,
            timeout=env.approval_timeout, config=env.config,
            allow_in_conversation=self.allow_in_conversation,
            on_settled=lambda i, r: self._emit(ApprovalSettled(i, r)),
            on_problem=lambda text: self._emit(Notice(text)),
            preview=self.preview_change, before_run=self._file_changes.before_run)
        self._checkpoints: ConversationCheckpoints | None = None
        self.doctor = ModelDoctor(store, self._emit)

    @property
    def checkpoints(self) -> ConversationCheckpoints:
        """Its working folder's checkpoints, made when first needed.

        Why lazy: the checkpoint, folder-scan and diff modules are ~0.5 MB that an
        idle window with restored tabs never uses; a turn, an undo or the files
        panel loads them (the first-input warm-up already has).
        """
        if self._checkpoints is None:
            from .file_checkpoints import ConversationCheckpoints

            conversation_id, env = self._record.id, self._env
            self._checkpoints = ConversationCheckpoints(
                conversation_id, lambda: env.tools.workdir(conversation_id, self._record.settings),
                lambda: self._record.settings)
        return self._checkpoints

    # -- listening ---------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> None:
        """Report every event to ``listener`` (called on the loop, in order)."""
        self._listeners.append(listener)

    def _emit(self, event: SessionEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a front end's bug must not end the turn
                log.exception("a session listener failed on %s", type(event).__name__)

    def _set_state(self, state: RunState, outcome: Outcome | None = None) -> None:
        if state == self.state and outcome is None:
            return
        self.state = state
        self._emit(StateChanged(state, outcome))

    # -- reading -----------------------------------------------------------------------
    @property
    def conversation_id(self) -> str:
        """The store id of the conversation."""
        return self._record.id

    @property
    def record(self) -> ConversationRecord:
        """The conversation's record as last read."""
        return self._record

    @property
    def settings(self) -> dict[str, Any]:
        """A copy of the settings as last read."""
        return dict(self._record.settings)

    @property
    def path(self) -> list[MessageRecord]:
        """The active branch as last read (root first); read whole on first use."""
        return list(self._path)

    @property
    def _path(self) -> list[MessageRecord]:
        if self._loaded_path is None:
            self._loaded_path = self._store.active_path(self._record.id)
        return self._loaded_path

    @_path.setter
    def _path(self, path: list[MessageRecord]) -> None:
        self._loaded_path = path

    def latest_page(self, limit: int) -> list[MessageRecord]:
        """The newest messages of the active branch, starting at a user message.

        Why: a transcript shows a long conversation a page at a time, so it
        needs neither the whole branch read nor grouped. The page starts at a
        user message (when it holds one) so a turn is never cut from its tool
        results; the ones before come with :meth:`page_before`.
        """
        if self._loaded_path is not None:
            page = self._loaded_path[-limit:]
        else:
            page = self._store.active_path(self._record.id, limit)
        page = _from_turn_start(page, limit)
        self._shown_page = (limit, [(r.id, r.status) for r in page])
        return page

    def last_message(self) -> MessageRecord | None:
        """The newest message of the active branch (one row read, not the branch)."""
        if self._loaded_path is not None:
            return self._loaded_path[-1] if self._loaded_path else None
        page = self._store.active_path(self._record.id, 1)
        return page[-1] if page else None

    def read_branch(self) -> list[MessageRecord]:
        """The whole active branch without keeping it (safe from a worker thread)."""
        loaded = self._loaded_path
        return list(loaded) if loaded is not None else self._store.active_path(self._record.id)

    def page_before(self, message_id: str, limit: int) -> list[MessageRecord]:
        """Up to ``limit`` messages before ``message_id`` on its branch, root first."""
        if self._loaded_path is not None:
            index = next((i for i, r in enumerate(self._loaded_path) if r.id == message_id), 0)
            page = self._loaded_path[max(0, index - limit):index]
        else:
            page = self._store.active_path(self._record.id, limit, before=message_id)
        return _from_turn_start(page, limit)

    @property
    def busy(self) -> bool:
        """Whether a turn runs (or is starting) in this process."""
        return self._starting_turn or (self._task is not None and not self._task.done())

    @property
    def task(self) -> asyncio.Task[None] | None:
        """The task running the current turn, if any."""
        return self._task

    @property
    def client(self) -> Client | None:
        """The conversation's client once a turn ran."""
        return self._client

    def refresh(self) -> bool:
        """Catch up with other processes' writes when idle; True when the branch changed."""
        if self.busy or self._closed:
            return False
        return finish_now(self._refreshed(on_the_spot))

    async def _refreshed(self, call: StoreCalls, read: ConversationRecord | None = None,
                         path: list[MessageRecord] | None = None) -> bool:
        await self._reloaded(call, read)
        conversation_id = self._record.id
        if path is not None and read is not None and read.id == conversation_id:
            return self._took_path(path)
        if self._loaded_path is None:
            if self._shown_page is None:
                return False  # nothing was read yet: the next read is fresh anyway
            # Only a page was read: compare the same page, read the whole branch if it moved.
            limit, shown = self._shown_page
            page = _from_turn_start(
                await call(partial(self._store.active_path, conversation_id, limit)), limit)
            if [(r.id, r.status) for r in page] == shown:
                return False
        path = await call(partial(self._store.active_path, conversation_id))
        loaded = self._loaded_path
        if loaded is not None and (
                [(r.id, r.status) for r in path] == [(r.id, r.status) for r in loaded]):
            return False
        self._path = path
        self._emit(PathReset(tuple(path)))
        return True

    def _took_path(self, path: list[MessageRecord]) -> bool:
        """Keep ``path``, read by the caller with the record; True when it moved.

        The same answer as reading it here: the listeners hear of a branch
        that differs from the one read before, or from the page they show.
        """
        loaded, shown = self._loaded_path, self._shown_page
        self._path = path
        if loaded is not None:
            moved = [(r.id, r.status) for r in path] != [(r.id, r.status) for r in loaded]
        elif shown is not None:
            limit, ids = shown
            moved = [(r.id, r.status) for r in _from_turn_start(path[-limit:], limit)] != ids
        else:
            return False  # nothing was read before
        if moved:
            self._emit(PathReset(tuple(path)))
        return moved

    def can_evict(self) -> bool:
        """Whether the session holds nothing the store does not (no turn, no question)."""
        return not self.busy and self.state == "idle"

    def reload_settings(self) -> None:
        """Re-read title and settings now, even mid-turn (a PATCH, confirmation mode)."""
        self._reload_record()

    def _reload_record(self) -> None:
        finish_now(self._reloaded(on_the_spot))

    async def _reloaded(self, call: StoreCalls, read: ConversationRecord | None = None) -> None:
        fresh = read if read is not None and read.id == self._record.id else \
            await call(partial(self._store.get_conversation, self._record.id))
        if fresh is None:
            return
        old, self._record = self._record, fresh
        if fresh.title != old.title:
            self._emit(TitleChanged(fresh.title))
        if fresh.settings != old.settings:
            self._emit(SettingsChanged(dict(fresh.settings)))

    # -- settings ----------------------------------------------------------------------
    def rename(self, title: str) -> None:
        """Give the conversation a new title (blank titles are ignored)."""
        finish_now(self._renamed(title, on_the_spot))

    async def _renamed(self, title: str, call: StoreCalls) -> None:
        title = " ".join(title.split())
        if title and title != self._record.title:
            await call(partial(self._store.update_conversation, self._record.id, title=title))
            await self._reloaded(call)

    def update_settings(self, **changes: Any) -> None:
        """Change settings by key (None removes one); keys others wrote are kept.

        Raises:
            SettingsError: A value breaks the schema (nothing is saved).
        """
        from .settings import checked_changes  # pydantic: loaded when settings are saved

        checked_changes(changes)
        current = self._record.settings
        changes = {k: v for k, v in changes.items()
                   if (v is None and k in current) or (v is not None and current.get(k) != v)}
        if changes:
            self._store.patch_settings(self._record.id, changes)
            self._reload_record()

    def allow_in_conversation(self, tool_name: str) -> None:
        """Stop asking about ``tool_name`` in this conversation."""
        if tool_name not in session_config.conversation_allowed_tools(self._record.settings):
            self.update_settings(permission_rules=session_config.allow_in_conversation(
                self._record.settings, tool_name))

    def revoke_in_conversation(self, tool_name: str) -> None:
        """Ask about ``tool_name`` again in this conversation."""
        self.update_settings(permission_rules=session_config.revoke_in_conversation(
            self._record.settings, tool_name))

    # -- user actions --------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def _starting(self, call: StoreCalls,
                        vet: Callable[[dict[str, Any]], None] | None = None,
                        read: ConversationRecord | None = None,
                        path: list[MessageRecord] | None = None, *,
                        with_first_write: bool = False,
                        ) -> AsyncIterator[TurnLease]:
        """Check a turn may start and take its lease now, before anything is written.

        Taken here, not when the turn's task first runs, so two processes (two
        ``serve`` replicas, a window and a server) asked at the same moment cannot
        both store a message and start: the second is refused at once with
        :class:`ConversationBusyError`. Given back if starting fails. While the
        store calls run (in a worker thread, for ``serve``) the session counts
        as busy, so a second start here is refused too.

        Args:
            call: Runs each store call (see :mod:`.store_calls`).
            vet: Checks the settings just read, before anything is written.
            read: The conversation as the caller read it just now (not read again).
            path: Its active branch, read by the caller with ``read`` (not read again).
            with_first_write: The lease is not taken here but by the block's first
                store write, in its transaction (a prompt stored with
                ``add_message(lease=...)``); the block gets the lease.
        """
        if self._closed:
            raise SessionError("The conversation was closed.")
        if self.busy:
            raise TurnRunningError("A turn is already running in this conversation.")
        self._starting_turn = True
        try:
            await self._check_can_start(call, read, path)
            if vet is not None:
                vet(self._record.settings)
            lease = self._store.turn_lease(self._record.id, self._owner)
            if not with_first_write:
                await call(lease.acquire)
            self._pending_lease = lease
            try:
                if self._closed:  # closed while the store was asked
                    raise SessionError("The conversation was closed.")
                self._turn_calls = call
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

    async def _check_can_start(self, call: StoreCalls,
                               read: ConversationRecord | None = None,
                               path: list[MessageRecord] | None = None) -> None:
        await self._refreshed(call, read, path)  # each turn starts from what is on disk
        if not has_server(self._record.settings):
            raise NotConfiguredError("Pick a server and a model first.")
        conversation_id = self._record.id
        # Whether another process runs a turn here is not read first: taking the
        # lease (in _starting) refuses then, naming the holder, in the same calls.
        if self._loaded_path is None:  # the turn needs the whole branch: read it here
            self._path = await call(partial(self._store.active_path, conversation_id))

    def add_user_message(self, content: Content) -> MessageRecord:
        """Store a user message (text, or content parts with pictures) without answering it.

        Raises:
            StaleParentError: Another process appended meanwhile (refresh, retry).
        """
        return finish_now(self._added_user_message(content, on_the_spot))

    async def _added_user_message(self, content: Content, call: StoreCalls,
                                  lease: TurnLease | None = None,
                                  options: list[_OptionsRead] | None = None) -> MessageRecord:
        """Store the prompt; with ``options``, read the turn's options in the same call.

        ``options`` receives what :func:`~.options.read_for_options` read or raised,
        read in the worker thread that stores the prompt (``serve``): one hand-over
        to a thread per turn started instead of two. Only off the loop: on the spot
        (the window) the keyring and the folder must not block the loop.
        """
        leaf = self._path[-1].id if self._path else None
        store_prompt = partial(
            self._store.add_message, self._record.id, {"role": "user", "content": content},
            parent_id=leaf, expected_parent=leaf, lease=lease)
        if options is None or call is on_the_spot:
            record = await call(store_prompt)
        else:
            settings, env, conversation_id = self._record.settings, self._env, self._record.id

            def stored_and_read() -> tuple[MessageRecord, _OptionsRead]:
                stored = store_prompt()
                try:
                    return stored, (settings, read_for_options(conversation_id, settings, env))
                except Exception as exc:  # noqa: BLE001 - the turn reports it, as when read there
                    return stored, (settings, exc)

            record, read = await call(stored_and_read)
            options.append(read)
        self._path.append(record)
        self._emit(UserMessageAdded(record))
        if self._record.title == DEFAULT_TITLE:
            await self._renamed(title_from(prompt_text(content) or "Attachment"), call)
        return record

    def send(self, content: Content) -> MessageRecord:
        """Store a user message and answer it in the background.

        Raises:
            SessionError: Closed, a turn runs, or no server/model.
            ConversationBusyError: Another process runs a turn here.
            StaleParentError: Another process appended meanwhile.
        """
        return finish_now(self._send(content, on_the_spot))

    async def send_off_loop(self, content: Content,
                            vet: Callable[[dict[str, Any]], None] | None = None,
                            call: StoreCalls = in_a_thread,
                            read: ConversationRecord | None = None,
                            path: list[MessageRecord] | None = None) -> MessageRecord:
        """:meth:`send` with its store calls in a worker thread (``serve``).

        See :mod:`.store_calls` for why. ``vet`` checks the settings just read,
        before anything is stored; ``call`` runs this turn's store calls, from
        its start to its last write; ``read`` is the conversation as the caller
        read it just now (``serve`` does, to answer 404), so it is not read again,
        and ``path`` its active branch, read with it (one store call, not two).
        """
        return await self._send(content, call, vet, read, path)

    async def _send(self, content: Content, call: StoreCalls,
                    vet: Callable[[dict[str, Any]], None] | None = None,
                    read: ConversationRecord | None = None,
                    path: list[MessageRecord] | None = None) -> MessageRecord:
        # The lease is taken in the prompt's transaction: one write per start, not two.
        async with self._starting(call, vet, read, path, with_first_write=True) as lease:
            base = model_history(self._path, self._vision())
            options: list[_OptionsRead] = []
            record = await self._added_user_message(content, call, lease, options)
            self._start(content, base, len(base), options[0] if options else None)
            return record

    def run(self) -> None:
        """Answer the waiting user message (or tool results) in the background.

        Raises:
            NothingToAnswerError: The branch ends with an answer already.
        """
        finish_now(self._run(on_the_spot))

    async def run_off_loop(self, call: StoreCalls = in_a_thread,
                           read: ConversationRecord | None = None,
                           path: list[MessageRecord] | None = None) -> None:
        """:meth:`run` with its store calls in a worker thread (``serve``).

        ``call``, ``read`` and ``path`` as in :meth:`send_off_loop`.
        """
        await self._run(call, read, path)

    async def _run(self, call: StoreCalls, read: ConversationRecord | None = None,
                   path: list[MessageRecord] | None = None) -> None:
        async with self._starting(call, read=read, path=path):
            if not self._path or self._path[-1].role not in ("user", "tool"):
                raise NothingToAnswerError(
                    "The conversation has no new user message to answer; send one first.")
            last = self._path[-1]
            if last.role == "user":
                base = model_history(self._path[:-1], self._vision())
                self._start(last.message.get("content") or "", base, len(base))
            else:
                base = model_history(self._path, self._vision())
                self._start("", base, len(base) - 1)

    def regenerate(self) -> None:
        """Answer the last user message again; the old answer stays as a sibling branch."""
        finish_now(self._regenerate(on_the_spot))

    async def _regenerate(self, call: StoreCalls) -> None:
        async with self._starting(call):
            index = last_user_index(self._path)
            if index is None:
                raise NothingToAnswerError("There is no user message to answer again.")
            user = self._path[index]
            await call(partial(self._store.set_active_leaf, self._record.id, user.id))
            self._path = self._path[:index + 1]
            self._emit(PathReset(tuple(self._path)))
            base = model_history(self._path[:index], self._vision())
            self._start(user.message.get("content") or "", base, len(base))

    retry = regenerate

    def edit(self, message_id: str, text: str) -> None:
        """Replace a user message with ``text`` (a sibling branch) and answer it."""
        finish_now(self._edit(message_id, text, on_the_spot))

    async def _edit(self, message_id: str, text: str, call: StoreCalls) -> None:
        async with self._starting(call):
            index = next((i for i, r in enumerate(self._path) if r.id == message_id), None)
            if index is None or self._path[index].role != "user":
                raise NothingToAnswerError("That message is not a user message on this branch.")
            old = self._path[index]
            prefix = self._path[:index]
            record = await call(partial(
                self._store.add_message, self._record.id, {"role": "user", "content": text},
                parent_id=old.parent_id, new_root=old.parent_id is None))
            self._path = [*prefix, record]
            self._emit(PathReset(tuple(self._path)))
            base = model_history(prefix, self._vision())
            self._start(text, base, len(base))

    def stop(self) -> None:
        """Stop the running turn (the partial reply is kept and marked interrupted)."""
        if self.busy and (self._stop_task is None or self._stop_task.done()):
            self._stop_task = asyncio.ensure_future(self.interrupt())

    def stop_tool_call(self, tool_use_id: str) -> bool:
        """End just one running command (Stop on its card); the turn goes on.

        Returns:
            False when no such call runs or it cannot be stopped.
        """
        client = self._client
        if client is None or not client.stop_tool_call(tool_use_id):
            return False
        self._stopped_calls.add(tool_use_id)  # its stored result says who ended it
        return True

    async def interrupt(self) -> bool:
        """Stop the running turn, keeping what streamed so far; False if none runs."""
        task = self._task
        if task is None or task.done():
            return False
        self._set_state("interrupting")
        client = self._client
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
        """Deny pending approvals, cancel the turn and release the client."""
        if self._closed:
            return
        self._closed = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._drop_pending_lease()
        await self.doctor.aclose()
        if self._stop_task is not None and not self._stop_task.done():
            self._stop_task.cancel()
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

    def _drop_pending_lease(self) -> None:
        """Give back a lease whose turn was cancelled before its task ever ran."""
        lease, self._pending_lease = self._pending_lease, None
        if lease is not None:
            with contextlib.suppress(Exception):  # the store may be closed already
                lease.release()

    # -- the turn ---------------------------------------------------------------------
    def _start(self, prompt: Content, base: list[dict[str, Any]], base_length: int,
               options: _OptionsRead | None = None) -> None:
        if self._closed:  # closed while a start waited for the store
            raise SessionError("The conversation was closed.")
        self.last_used = time.monotonic()
        # The task first, so listeners told "running" already see the session busy.
        self._task = asyncio.ensure_future(self._turn(prompt, base, base_length, options))
        self._set_state("running")

    async def _turn(self, prompt: Content, base: list[dict[str, Any]], base_length: int,
                    options: _OptionsRead | None = None) -> None:
        outcome: Outcome = "error"
        try:
            lease, self._pending_lease = self._pending_lease, None
            async with lease or self._store.turn_lease(self._record.id, self._owner):
                outcome = await self._leased_turn(prompt, base, base_length, options)
        except ConversationBusyError as exc:
            self._emit(TurnFailed(exc))
        finally:
            self._task = None
            self._waiting = 0
            self.last_used = time.monotonic()
            if not self._closed:
                self._set_state("idle", outcome)

    async def _leased_turn(self, prompt: Content, base: list[dict[str, Any]],
                           base_length: int, options: _OptionsRead | None = None) -> Outcome:
        self.broker.forget_decisions()
        self._file_changes.forget()
        from .file_checkpoints import TurnMark

        answered = last_user_index(self._path)
        mark = TurnMark(message=self._path[answered].id if answered is not None else None)
        try:
            return await self._recorded_turn(prompt, base, base_length, mark, options)
        finally:
            # Shielded: a cancelled turn still records what its tools changed.
            await asyncio.shield(self._close_checkpoints(mark))

    async def _recorded_turn(self, prompt: Content, base: list[dict[str, Any]],
                             base_length: int, mark: TurnMark,
                             options: _OptionsRead | None = None) -> Outcome:
        recorder = TurnRecorder(self._store, self._record.id, self._path,
                                str(self._record.settings.get("model") or ""),
                                self.broker.decision_of,
                                on_stored=self._on_stored,
                                change_of=self._file_changes.change_of,
                                stopped_by_person=self._stopped_calls.__contains__)
        started = False
        prompt_record = self._path[-1] if self._path and self._path[-1].role == "user" else None
        try:
            client = await self._ready_client(mark, options)
            client.message_history = base
            if client.context_keeper.covered == 0:  # a new client: continue the stored view
                stored = stored_compaction(self._path)
                if stored is not None:
                    client.context_keeper.restore(stored, base)
            self.doctor.before_turn(client.options)
            await client.query(prompt)
            blocks = TurnBlocks(recorder, client, self._emit)
            started = True
            call = self._turn_calls
            async for item in client.receive_messages():
                await blocks.handle(item, call)
            interrupted = bool(client.turn_metadata.get("interrupted"))
            await recorder.finish_reply("interrupted" if interrupted else "complete", call)
            recorder.finish("interrupted" if interrupted else "complete", client.history,
                            base_length)
            self._emit(ReplyEnded(interrupted))
            self.doctor.after_turn(client.options)
            return "interrupted" if interrupted else "complete"
        except asyncio.CancelledError:
            recorder.finish("interrupted")
            self._emit(ReplyEnded(True))
            raise
        except Exception as exc:
            log.info("turn failed in %s: %s", self._record.id, type(exc).__name__,
                     exc_info=not _is_expected(exc))
            recorder.finish("error")
            if started:
                self._emit(ReplyEnded(True))
            if prompt_record is not None and _refused_picture(exc, prompt_record):
                self._set_aside(prompt_record)
            self._emit(TurnFailed(exc))
            return "error"

    def _set_aside(self, record: MessageRecord) -> None:
        """Keep a prompt whose picture was refused out of every later request."""
        updated = self._store.update_message_metadata(record.id, {REFUSED_PICTURE: True})
        self._path = [updated if r.id == record.id else r for r in self._path]

    def _vision(self) -> bool | None:
        """Whether the conversation's model reads pictures (None: unknown)."""
        vision = self._record.settings.get("vision")
        return vision if isinstance(vision, bool) else None

    def _on_stored(self, record: MessageRecord) -> None:
        self._emit(MessageStored(record))

    async def _ready_client(self, mark: TurnMark, read: _OptionsRead | None = None) -> Client:
        """The conversation's client with options built from its current settings.

        ``read``: what the start read for them (settings, then the read or its error),
        used while the settings are still those.
        """
        settings = self._record.settings
        options = await build_options(
            self._record.id, settings, self._env, self.broker,
            self._file_changes.hooks(self._env.hooks),
            read=read[1] if read is not None and read[0] is settings else None)
        tool_named = options.tool_named

        async def before_round(calls: Sequence[ToolUseBlock]) -> None:
            await self.checkpoints.before_round(mark, calls, tool_named)

        options.before_tool_round = before_round
        problems = self._env.tools.mcp_problems()
        if problems and problems != self._reported_problems:
            self._reported_problems = problems
            self._emit(Notice(" ".join(problems)))
        if self._client is None:
            from desktop_agent.core.client import Client

            self._client = Client(options)
        else:
            self._client.update_options(options)
        return self._client

    async def test_model(self) -> ProbeResult:
        """Run the tool-call probe on the conversation's server and model (*Test this model*).

        Raises:
            MissingApiKeyError: The conversation names a key that is not stored.
            ConfigurationError: No server or model is chosen.
        """
        options = await build_options(self._record.id, self._record.settings, self._env,
                                      None)
        return await self.doctor.test_model(options)

    async def preview_change(self, tool_name: str,
                             tool_input: dict[str, Any]) -> ChangePreview | None:
        """What a built-in ``write_file``/``edit_file`` call would change, as a diff.

        Against the file on disk now, so a front end that lets a person edit the
        arguments shows the diff of the edited call. None for other tools and when
        the conversation has no built-in tools (so no working folder).
        """
        from .file_changes import FILE_CHANGING_TOOLS

        if tool_name not in FILE_CHANGING_TOOLS:
            return None
        return await asyncio.to_thread(
            lambda: preview_change(tool_name, tool_input, self._builtin_workdir()))

    def plan(self) -> Plan | None:
        """The model's checklist now: its last ``update_plan`` on the active branch.

        Reads the whole branch when it was not read yet (a worker thread may call it).
        """
        return plan_of(self.read_branch())

    def project_instructions(self) -> ProjectInstructions | None:
        """The working folder's ``AGENTS.md`` (or ``CLAUDE.md``) as the next turn sends it.

        Blocking (reads the disk): front ends call it in a worker thread. Its
        ``included`` is false when the conversation's switch leaves it out.
        """
        return project_instructions_for(self._record.id, self._record.settings,
                                self._env.tools.workdirs_root)

    def _builtin_workdir(self) -> Path | None:
        """The built-in tools' folder (blocking: it may make the folder); None if none."""
        from .tools import WorkdirError

        try:
            return self._env.tools.builtin_workdir(self._record.id, self._record.settings)
        except WorkdirError:  # the turn itself reports it, in words
            return None

    async def _asked(self, question: ToolCallQuestion) -> ApprovalAnswer:
        """The broker's asker: report the question and the state, then ask the front end."""
        self._emit(ApprovalAsked(question))
        self._waiting += 1
        self._set_state("waiting_approval")
        try:
            return await self._ask(question)
        finally:
            self._waiting -= 1
            if self._waiting <= 0 and self.state == "waiting_approval":
                self._set_state("running")


def _refused_picture(exc: BaseException, prompt: MessageRecord) -> bool:
    """The server refused the picture of the prompt this turn sent."""
    from desktop_agent.core.errors import VisionNotSupportedError

    return isinstance(exc, VisionNotSupportedError) and has_images(prompt.message.get("content"))


def _is_expected(exc: BaseException) -> bool:
    from desktop_agent.core.errors import AgentError

    from .tools import WorkdirError

    return isinstance(exc, AgentError | WorkdirError | ConversationBusyError)


def _from_turn_start(page: list[MessageRecord], limit: int) -> list[MessageRecord]:
    """A full page without its leading non-user messages (they belong to the page before)."""
    if len(page) < limit:
        return page  # it reaches the root
    start = next((i for i, r in enumerate(page) if r.role == "user"), 0)
    return page[start:]
