"""The PostgreSQL :class:`~desktop_agent.store.engine.Engine`: a few connections per store.

Each ``serve`` replica opens one :class:`~desktop_agent.store.store.Store`, whose
threads share a small pool of connections (:mod:`.connection_pool`), each held by
one thread at a time; a thread that nests calls keeps the connection it holds.
Statements run in autocommit; :meth:`PostgresDatabase.writing` opens a
transaction that first takes :data:`WRITE_LOCK`, a transaction-scoped advisory
lock, so writes from every replica are serialised as SQLite serialises writes to
its file: read-then-write rules (the lease check, a message's depth) hold across
replicas without being rewritten per engine. It is held for the few statements of
one write, never across a model's reply.

Appending events and checkpointing a streaming reply are most of a busy server's
writes, and neither needs every other write out of the way: events need only
their conversation's log to themselves (its next id), a checkpoint is one
``UPDATE`` of one row. :meth:`PostgresDatabase.writing_beside` takes
:data:`WRITE_LOCK` shared plus one lock per conversation named, so replicas
append to different conversations at once, while a :meth:`~PostgresDatabase.writing`
still runs alone. Measured with ``bench/server_load.py --database`` (3 replicas,
50 streams each), waiting for the one exclusive lock was the largest part of an
event's time on the write side.

A connection lost (the server stopped or restarted, a network cut), or one that
cannot be made, makes the call that met it fail with
:class:`~desktop_agent.store.errors.DatabaseUnavailableError` (a
``DatabaseAccessError``: the REST server answers 503 with ``Retry-After``); the
pool drops it, with the idle ones beside it (a restart ended them too), and the
next call connects again.
"""

from __future__ import annotations

import logging
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from desktop_agent.store.dialects import (
    APPROVALS_CHANNEL,
    EVENTS_CHANNEL,
    Dialect,
    EventsCommitted,
    PostgresDialect,
)
from desktop_agent.store.errors import (
    DatabaseAccessError,
    DatabaseUnavailableError,
    DatabaseUnusableError,
)
from desktop_agent.store.postgres import postgres_schema
from desktop_agent.store.postgres.advisory_locks import KEY_LOCKS, WRITE_LOCK
from desktop_agent.store.postgres.connection_pool import ConnectionPool
from desktop_agent.store.postgres.event_listener import events_handler, read_notification
from desktop_agent.store.postgres.notify_hub import NotifyHub
from desktop_agent.store.postgres.placeholders import PlaceholderConnection
from desktop_agent.store.sql_connection import SqlConnection

logger = logging.getLogger("desktop_agent.store.postgres")

CONNECT_TIMEOUT_SECONDS = 15


def redacted_location(url: str) -> str:
    """``postgresql://user@host:port/db``: the URL without its password, for messages."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "the PostgreSQL database (its URL could not be read)"
    user = f"{parts['user']}@" if parts.get("user") else ""
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{parts.get('host', '')}{port}/{parts.get('dbname', '')}"


class PostgresDatabase:
    """A pool of PostgreSQL connections shared by every thread of a process.

    Attributes:
        dialect: PostgreSQL's statements.
        location: The database's URL without the password.
        local_writes: Transactions committed through this store's connections.
    """

    dialect: Dialect = PostgresDialect()

    def __init__(self, url: str) -> None:
        self._url = url
        self.location = redacted_location(url)
        self.local_writes = 0
        # nextval() calls of our own writes, taken off the sequence's value so that
        # only other processes' writes change the token; and those sent and done, so
        # a token read while one of ours was on its way is never taken as exact.
        self._own_bumps = 0
        self._bumps_sent = 0
        self._bumps_done = 0
        self._uncertain = 0
        self._counts = threading.Lock()
        self._held = threading.local()  # .conn: the connection this thread holds
        self._pool = ConnectionPool(self._connect)
        # One LISTEN connection for every channel this process follows (see .notify_hub).
        self._notify_hub = NotifyHub(url, self.location)
        first = self._pool.take()
        try:
            postgres_schema.migrate(first, self.location)
        except psycopg.Error as exc:
            self._pool.close()
            first.close()
            raise DatabaseUnusableError(
                f"The conversation database {self.location} could not be prepared ({exc})."
            ) from exc
        except BaseException:
            self._pool.close()
            first.close()
            raise
        self._pool.give_back(first)

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(
                self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS,
                application_name="desktop-agent",
            )
        except psycopg.Error as exc:
            raise DatabaseUnavailableError(
                f"Cannot connect to the conversation database {self.location}: "
                f"{str(exc).strip() or type(exc).__name__}."
            ) from exc

    def close(self) -> None:
        """Close the connections; later calls raise :class:`StoreClosedError`. Idempotent."""
        self._notify_hub.close()
        self._pool.close()

    @contextmanager
    def reading(self) -> Iterator[SqlConnection]:
        """This thread's connection; driver errors become DatabaseAccessError.

        The first call of a thread takes a connection from the pool and gives it
        back at its end; calls nested in it use the same one (so a read inside a
        write sees the write).
        """
        held: psycopg.Connection[Any] | None = getattr(self._held, "conn", None)
        if held is not None:
            yield PlaceholderConnection(held, getattr(self._held, "pipeline", None))
            return
        conn = self._pool.take()
        self._held.conn = conn
        try:
            yield PlaceholderConnection(conn)
        except psycopg.Error as exc:
            if conn.broken or conn.closed:
                logger.warning("the connection to %s was lost; the next call connects again",
                               self.location)
                raise DatabaseUnavailableError(
                    f"The conversation database {self.location} could not be used: the "
                    f"connection to it was lost ({str(exc).strip() or type(exc).__name__}). "
                    "Nothing was changed by this action."
                ) from exc
            raise DatabaseAccessError(
                f"The conversation database {self.location} could not be used "
                f"({str(exc).strip() or type(exc).__name__}). "
                "Nothing was changed by this action."
            ) from exc
        finally:
            self._held.conn = None
            self._pool.give_back(conn)

    @contextmanager
    def writing(self) -> Iterator[SqlConnection]:
        """One write transaction, after every other replica's current one (WRITE_LOCK)."""
        with self._transaction([("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK,))]) as conn:
            yield conn

    @contextmanager
    def writing_beside(self, keys: Iterable[str] = ()) -> Iterator[SqlConnection]:
        """A write transaction that runs beside others that name none of ``keys``.

        It waits for every :meth:`writing` (WRITE_LOCK shared) and for every other
        :meth:`writing_beside` naming one of ``keys`` (an advisory lock per key,
        taken in one order so two writers never wait for each other).
        """
        locks: list[tuple[str, tuple[Any, ...]]] = [
            ("SELECT pg_advisory_xact_lock_shared(?)", (WRITE_LOCK,))]
        codes = sorted({key_code(key) for key in keys})
        if codes:
            locks.append(("SELECT pg_advisory_xact_lock(?::int4, code)"
                          " FROM unnest(?::int4[]) AS code", (KEY_LOCKS, codes)))
        with self._transaction(locks) as conn:
            yield conn

    @contextmanager
    def _transaction(self, locks: list[tuple[str, tuple[Any, ...]]]) -> Iterator[SqlConnection]:
        """A transaction taking ``locks`` first, pipelined: it waits only for what it reads.

        BEGIN, the locks and the statements up to the first one whose result is
        read go to the server in one round trip, and the COMMIT with the write
        sequence's bump in one more: a write costs a round trip per result it
        reads plus one, not one per statement. Round trips are what a busy
        replica's writes waited on (each a wake-up of the server's process and
        of this thread), while the locks they held kept other writers waiting.
        """
        with self.reading():
            raw: psycopg.Connection[Any] = self._held.conn
            outer = getattr(self._held, "pipeline", None)
            with raw.pipeline() as pipeline:
                self._held.pipeline = pipeline
                try:
                    conn = PlaceholderConnection(raw, pipeline)
                    with raw.transaction():
                        for statement, parameters in locks:
                            conn.execute(statement, parameters)
                        yield conn
                    # After the COMMIT, in its round trip: the token moves once the
                    # write can be read.
                    with self._counts:
                        self._bumps_sent += 1
                    bumped = False
                    try:
                        conn.execute("SELECT nextval('store_writes')")
                        pipeline.sync()
                        bumped = True
                    finally:
                        with self._counts:
                            self._bumps_done += 1
                            self._own_bumps += bumped
                            self.local_writes += 1
                finally:
                    self._held.pipeline = outer

    def watch_events(self, on_commit: EventsCommitted) -> Callable[[], None] | None:
        """Hear other processes' commits of events (see :mod:`.event_listener`).

        It reports other processes' commits only: this one's own are in its
        memory already, and reading them back cost a query per commit.
        """
        pool = self._pool
        return self._notify_hub.subscribe(
            EVENTS_CHANNEL, events_handler(on_commit, own=lambda: pool.backend_pids))

    def watch_approvals(self, on_answer: Callable[[str], None]) -> Callable[[], None] | None:
        """Hear answers on :data:`~desktop_agent.store.dialects.APPROVALS_CHANNEL`."""
        def answered(payload: str, _pid: int) -> None:
            for conversation_id in read_notification(payload)[0]:
                on_answer(conversation_id)

        return self._notify_hub.subscribe(APPROVALS_CHANNEL, answered)

    def watch_channel(self, channel: str,
                      on_note: Callable[[str], None]) -> Callable[[], None] | None:
        """Hand ``channel``'s payloads as text to ``on_note``.

        Also ``""`` each time listening (re)starts: a notification may have been
        missed meanwhile, so the caller reloads everything then.
        """
        return self._notify_hub.subscribe(channel, lambda payload, _pid: on_note(payload),
                                          lambda: on_note(""))

    def external_version(self, conn: SqlConnection) -> int:
        """The write sequence's value less our own writes: moves when another replica writes.

        Read while one of this process's own writes was bumping the sequence, the
        value cannot tell whose bump it saw: then it is a new negative number
        each time, which reads as "changed" (a needless re-read, never a missed
        change).
        """
        with self._counts:
            sent, done, own = self._bumps_sent, self._bumps_done, self._own_bumps
        row = conn.execute(
            "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM store_writes"
        ).fetchone()
        with self._counts:
            if sent == done == self._bumps_sent:
                return int(row[0]) - own
            self._uncertain -= 1
            return self._uncertain


def key_code(key: str) -> int:
    """A stable signed 32-bit code for ``key`` (an advisory lock's second half).

    Two keys that share a code only wait for each other when they need not.
    """
    code = zlib.crc32(key.encode())
    return code - (1 << 32) if code >= 1 << 31 else code
