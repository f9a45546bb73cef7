"""The PostgreSQL :class:`~desktop_agent.store.engine.Engine`: one connection per store.

Each ``serve`` replica opens one :class:`~desktop_agent.store.store.Store`, so one
connection, shared by its threads under a lock as the SQLite engine shares its
file. Statements run in autocommit; :meth:`PostgresDatabase.writing` opens a
transaction that first takes :data:`WRITE_LOCK`, a transaction-scoped advisory
lock, so writes from every replica are serialised as SQLite serialises writes to
its file: read-then-write rules (the next event id, the lease check) hold across
replicas without being rewritten per engine. It is held for the few statements of
one write, never across a model's reply.

A connection lost (the server restarted, a network cut) makes the call that met
it fail with :class:`~desktop_agent.store.errors.DatabaseAccessError`, and the
next call connects again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from desktop_agent.store.dialects import APPROVALS_CHANNEL, Dialect, PostgresDialect
from desktop_agent.store.errors import DatabaseAccessError, DatabaseUnusableError, StoreClosedError
from desktop_agent.store.postgres import postgres_schema
from desktop_agent.store.postgres.channel_listener import ChannelListener
from desktop_agent.store.postgres.event_listener import EventListener
from desktop_agent.store.postgres.placeholders import PlaceholderConnection
from desktop_agent.store.sql_connection import SqlConnection

logger = logging.getLogger("desktop_agent.store.postgres")

WRITE_LOCK = 0x64_61_67_02
"""The advisory lock every write transaction takes first (one writer at a time)."""

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
    """One PostgreSQL connection shared by every thread of a process.

    Attributes:
        dialect: PostgreSQL's statements.
        location: The database's URL without the password.
        local_writes: Transactions committed through this connection.
    """

    dialect: Dialect = PostgresDialect()

    def __init__(self, url: str) -> None:
        self._url = url
        self.location = redacted_location(url)
        self._lock = threading.RLock()
        self.local_writes = 0
        # nextval() calls of our own write transactions (committed or not), taken off
        # the sequence's value so that only other connections' writes change the token.
        self._own_bumps = 0
        self._closed = False
        self._conn: psycopg.Connection[Any] | None = self._connect()
        try:
            postgres_schema.migrate(self._conn, self.location)
        except psycopg.Error as exc:
            self._conn.close()
            raise DatabaseUnusableError(
                f"The conversation database {self.location} could not be prepared ({exc})."
            ) from exc
        except BaseException:
            self._conn.close()
            raise

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(
                self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS,
                application_name="desktop-agent",
            )
        except psycopg.Error as exc:
            raise DatabaseUnusableError(
                f"Cannot connect to the conversation database {self.location}: "
                f"{str(exc).strip() or type(exc).__name__}."
            ) from exc

    def close(self) -> None:
        """Close the connection; later calls raise :class:`StoreClosedError`. Idempotent."""
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @contextmanager
    def reading(self) -> Iterator[SqlConnection]:
        """The connection, under the lock; driver errors become DatabaseAccessError."""
        with self._lock:
            if self._closed:
                raise StoreClosedError("the conversation store is closed")
            if self._conn is None or self._conn.closed or self._conn.broken:
                if self._conn is not None:
                    logger.warning("the connection to %s was lost; connecting again",
                                   self.location)
                    self._conn.close()
                self._conn = None
                self._conn = self._connect()
            try:
                yield PlaceholderConnection(self._conn)
            except psycopg.Error as exc:
                raise DatabaseAccessError(
                    f"The conversation database {self.location} could not be used "
                    f"({str(exc).strip() or type(exc).__name__}). "
                    "Nothing was changed by this action."
                ) from exc

    @contextmanager
    def writing(self) -> Iterator[SqlConnection]:
        """One write transaction, after every other replica's current one (WRITE_LOCK)."""
        with self.reading() as conn:
            assert self._conn is not None  # reading() connected
            with self._conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(?), nextval('store_writes')",
                             (WRITE_LOCK,))
                self._own_bumps += 1
                yield conn
            self.local_writes += 1

    def watch_events(self, on_commit: Callable[[str, int], None]) -> Callable[[], None] | None:
        """A LISTEN thread on a connection of its own (see :mod:`.event_listener`)."""
        listener = EventListener(self._url, self.location, on_commit)
        listener.start()
        return listener.stop

    def watch_approvals(self, on_answer: Callable[[str], None]) -> Callable[[], None] | None:
        """A LISTEN thread for :data:`~desktop_agent.store.dialects.APPROVALS_CHANNEL`."""
        listener = EventListener(self._url, self.location,
                                 lambda conversation_id, _n: on_answer(conversation_id),
                                 channel=APPROVALS_CHANNEL)
        listener.start()
        return listener.stop

    def watch_channel(self, channel: str,
                      on_note: Callable[[str], None]) -> Callable[[], None] | None:
        """A LISTEN thread on ``channel``, payloads as text (see :mod:`.channel_listener`)."""
        listener = ChannelListener(self._url, self.location, channel, on_note)
        listener.start()
        return listener.stop

    def external_version(self, conn: SqlConnection) -> int:
        """The write sequence's value less our own writes: moves when another replica writes."""
        row = conn.execute(
            "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM store_writes"
        ).fetchone()
        return int(row[0]) - self._own_bumps
