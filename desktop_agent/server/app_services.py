"""What the routes share: the store, the event log, callbacks, runners and limits.

One :class:`AppServices` lives on ``app.state.services``; routes reach it
through :func:`services`. Keeping it in one object (rather than module
globals) lets a test or a script run several apps in one process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from fastapi import Request

from desktop_agent.session import ExecutorCalls

from .api_errors import ApiError, not_found
from .callbacks import CallbackDispatcher
from .conversation_runner import ConversationRunner
from .event_log import EventLog
from .start_pacer import PacedCalls, StartPacer
from .thread_scheduling import turn_store_executor

if TYPE_CHECKING:
    from desktop_agent.core.wire.connection_pool import ConnectionPool
    from desktop_agent.session import LocalEngine, SessionEnvironment, SessionRegistry
    from desktop_agent.store import ConversationRecord, MessageRecord, Store

    from .shared_callbacks import SharedCallback


class TurnStartRead(NamedTuple):
    """What ``POST /run`` reads before starting a turn, in one worker-thread call.

    Attributes:
        record: The conversation (the session does not read it again).
        path: Its active branch back to what a turn needs (nor this; see
            :func:`~desktop_agent.session.tail_enough`).
        callbacks: Its stored callbacks, shared between replicas (None on one server):
            see :meth:`~.callbacks.CallbackDispatcher.took_for_turn`.
    """

    record: ConversationRecord
    path: list[MessageRecord]
    callbacks: Sequence[SharedCallback] | None


@dataclass
class AppServices:
    """Shared state of one server app.

    Attributes:
        store: The same Store the window uses.
        events: Every conversation's event log.
        callbacks: The HTTP callback dispatcher.
        runners: One runner per conversation that has been driven.
        session: What every conversation shares with the window's: the one tool
            catalog (built-ins, MCP servers of config.json, extra tools), the
            config file's rules, hooks and the approval timeout.
        workdirs_root: Parent of the default per-conversation workdirs.
        upload_limit: Largest accepted upload, in bytes.
        approval_timeout: Seconds a tool call waits for approve/reject; then deny.
        connection_pool: HTTP connections to model servers, shared by every
            conversation (one pool per base URL), so sockets do not grow with
            the number of conversations driven.
        idle_seconds: A conversation untouched this long has its runner and
            in-memory event tail dropped (both come back on next use).
        shared_approvals: Tool-call questions go through the database, so that any
            replica lists and answers them (PostgreSQL); False keeps them in this
            process (SQLite, see :mod:`~desktop_agent.server.pending_approvals`).
        pacer: Lets turns that start together take turns, spaced so that the
            streams keep most of the loop (see :mod:`~desktop_agent.server.start_pacer`).
        local_engine: The models on this computer (library, downloads, the running
            engine), shared with every conversation set to ``server: "local"``.
        turn_calls: Runs the store calls that start and end turns, off the event
            loop (see :func:`~desktop_agent.server.thread_scheduling.turn_store_executor`),
            each step after one resuming when the pacer lets it.
    """

    store: Store
    events: EventLog
    callbacks: CallbackDispatcher
    session: SessionEnvironment
    workdirs_root: Path
    upload_limit: int
    approval_timeout: float
    connection_pool: ConnectionPool
    idle_seconds: float
    shared_approvals: bool = False
    local_engine: LocalEngine = field(default=None)  # type: ignore[assignment]  # set by create_app
    pacer: StartPacer = field(init=False)
    turn_calls: PacedCalls = field(init=False)
    runners: SessionRegistry[ConversationRunner] = field(init=False)

    def __post_init__(self) -> None:
        self.pacer = StartPacer()
        self.turn_calls = PacedCalls(ExecutorCalls(turn_store_executor()), self.pacer)

    def conversation(self, conversation_id: str) -> ConversationRecord:
        """The record, or a 404 ApiError."""
        record = self.store.get_conversation(conversation_id)
        if record is None:
            raise not_found("conversation", conversation_id)
        return record

    def turn_start_read(self, conversation_id: str) -> TurnStartRead:
        """What a turn's start reads, in one call (blocking): see :class:`TurnStartRead`.

        Why together: each store call the route and the session make off the loop
        is a hand-over to a worker thread and back, and on PostgreSQL the
        callbacks' reread was a task of its own per turn started.

        Raises:
            ApiError: 404 when the conversation does not exist.
        """
        from desktop_agent.session import tail_enough

        # the branch back to its newest compaction's end: what the turn's request needs
        found = self.store.conversation_with_path(conversation_id, enough=tail_enough)
        if found is None:
            raise not_found("conversation", conversation_id)
        return TurnStartRead(*found, self.callbacks.stored_for_turn(conversation_id))

    def runner(self, record: ConversationRecord) -> ConversationRunner:
        """The conversation's runner, made from ``record`` when none is held.

        Why from the record: the routes read the conversation off the event loop
        (to answer 404); a runner made from that read does not read it again on
        the loop, and a turn started through it takes that read as its fresh one.
        """
        return self.runners.get(record.id, make=lambda: ConversationRunner(record.id, self, record))

    def workdir_of(self, record: ConversationRecord) -> Path:
        """The conversation's workdir: its ``workdir`` setting or a folder of its own.

        Raises:
            ApiError: 409 when the folder breaks the working-folder rule.
        """
        from desktop_agent.session import WorkdirError, workdir_path

        try:
            return workdir_path(record.id, record.settings or {}, self.workdirs_root)
        except WorkdirError as exc:
            raise ApiError(409, "workdir_refused", str(exc)) from exc

    def is_managed_workdir(self, path: Path) -> bool:
        """True for workdirs the server made itself (the only ones it will delete)."""
        try:
            return path.resolve().parent == self.workdirs_root.resolve()
        except OSError:
            return False


async def services(request: Request) -> AppServices:
    """FastAPI dependency: the app's shared services.

    ``async`` although it never waits: FastAPI runs a plain ``def`` dependency in
    its thread pool, which cost every request a round trip through a worker
    thread (two loop wake-ups and a GIL hand-over) to read one attribute.
    """
    value: AppServices = request.app.state.services
    return value
