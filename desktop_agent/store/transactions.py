"""The store's connection: locking, short transactions, closing.

Every part of :class:`~desktop_agent.store.store.Store` (conversations,
message writes, the tree, search, app settings, events, leases) is handed the
one engine (this :class:`Database` on SQLite) and talks to it only through
:meth:`Database.reading` and :meth:`Database.writing`, so the thread lock, the
closed check and the "nothing was changed" error message are written once.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from desktop_agent.store.dialects import Dialect, EventsCommitted
from desktop_agent.store.errors import DatabaseAccessError, StoreClosedError
from desktop_agent.store.sql_connection import SqlConnection
from desktop_agent.store.wal_checkpointer import SAFETY_NET_PAGES, WalCheckpointer

# The name the store has always logged under, so log filters keep working.
logger = logging.getLogger("desktop_agent.store")


class Database:
    """One SQLite connection shared by every thread, plus its WAL checkpointer.

    The SQLite :class:`~desktop_agent.store.engine.Engine`.

    Attributes:
        dialect: SQLite's statements.
        path: The SQLite file.
        location: The file, for messages.
        local_writes: Transactions committed through this connection.
    """

    dialect = Dialect()

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn: sqlite3.Connection | None = conn
        self._lock = threading.RLock()
        self.path = path
        self.location = str(path)
        # Commits made through this connection: with ``PRAGMA data_version``
        # (which counts only other connections' commits) it makes the change token.
        self.local_writes = 0
        conn.execute(f"PRAGMA wal_autocheckpoint = {SAFETY_NET_PAGES}")
        self._checkpointer = WalCheckpointer(path)
        self._checkpointer.start()
        # A store dropped without close() must not leave its thread running.
        weakref.finalize(self, self._checkpointer.stop_soon)

    def close(self) -> None:
        """Close the file; later calls raise :class:`StoreClosedError`. Idempotent."""
        self._checkpointer.stop()
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.execute("PRAGMA optimize")
                except sqlite3.Error as exc:  # e.g. a read-only file: nothing to tidy
                    logger.debug("PRAGMA optimize skipped: %s", exc)
                finally:
                    self._conn.close()
                    self._conn = None

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """The connection, under the lock; SQLite errors become DatabaseAccessError."""
        with self._lock:
            if self._conn is None:
                raise StoreClosedError("the conversation store is closed")
            try:
                yield self._conn
            except sqlite3.Error as exc:  # disk full, read-only, locked for too long...
                raise DatabaseAccessError(
                    f"The conversation database {self.path} could not be used ({exc}). "
                    "Nothing was changed by this action."
                ) from exc

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction, taking the write lock up front."""
        with self.reading() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
                self.local_writes += 1
            except BaseException:
                # SQLite rolls some failures back by itself (disk full, I/O errors).
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def writing_beside(
        self, keys: Iterable[str] = ()
    ) -> AbstractContextManager[sqlite3.Connection]:
        """:meth:`writing`: SQLite has one write lock for the whole file."""
        return self.writing()

    def watch_events(self, on_commit: EventsCommitted) -> Callable[[], None] | None:
        """None: SQLite cannot push commits to other processes; their readers poll."""
        return None

    def watch_approvals(self, on_answer: Callable[[str], None]) -> Callable[[], None] | None:
        """None: on SQLite the process running a turn keeps its questions in memory."""
        return None

    def watch_channel(self, channel: str,
                      on_note: Callable[[str], None]) -> Callable[[], None] | None:
        """None: one process on a SQLite file has no other replicas to hear from."""
        return None

    def external_version(self, conn: SqlConnection) -> int:
        """``PRAGMA data_version``: changes when another connection commits to the file."""
        return int(conn.execute("PRAGMA data_version").fetchone()[0])
