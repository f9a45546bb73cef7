"""psycopg's connection in the shape the store's parts use: ``?`` placeholders.

The parts write each statement once, with SQLite's ``?``; psycopg takes ``%s``
(and reads a literal ``%`` as ``%%``). The rewrite is cached per statement text,
so a statement run a thousand times is rewritten once.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from desktop_agent.store.sql_connection import SqlCursor

if TYPE_CHECKING:
    import psycopg


@lru_cache(maxsize=512)
def to_pyformat(sql: str) -> str:
    """``?`` to ``%s`` and ``%`` to ``%%`` (the store's SQL has no ``?`` inside literals)."""
    return sql.replace("%", "%%").replace("?", "%s")


_PREPARED: weakref.WeakKeyDictionary[Any, set[bytes]] = weakref.WeakKeyDictionary()
"""Per connection: the statements :meth:`PlaceholderConnection.prepared_rows` prepared on it."""
_PREPARED_LOCK = threading.Lock()


class PlaceholderConnection:
    """A psycopg connection taking ``?`` placeholders; see :mod:`..sql_connection`.

    In a pipeline (a write transaction, see
    :meth:`~.postgres_database.PostgresDatabase.writing`) statements are sent
    without waiting for their results: a result is waited for when it is read.
    """

    def __init__(self, conn: psycopg.Connection[Any],
                 pipeline: psycopg.Pipeline | None = None) -> None:
        self._conn = conn
        self._pipeline = pipeline

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> SqlCursor:
        """Run one statement (without parameters it is sent as written)."""
        if not parameters:
            cursor = self._conn.execute(sql.encode())
        else:
            cursor = self._conn.execute(to_pyformat(sql).encode(), parameters)
        return cursor if self._pipeline is None else PipelinedCursor(cursor, self._pipeline)

    def prepared_rows(self, name: bytes, sql: bytes,
                      parameters: Sequence[str]) -> list[list[bytes | None]]:
        """Run ``sql`` (``$1`` placeholders, text parameters) prepared once per connection.

        Straight on libpq (psycopg's ``pgconn``), rows as text: for the statement a
        busy replica runs most (a batch of events, hundreds a second), psycopg's
        cursor path (query conversion, dumpers, its prepared-statement bookkeeping,
        the result's rows) cost about 70 µs of the calling thread's CPU per call, this
        about 22 (measured on this repository's test cluster). libpq waits for the
        answer without the GIL, as psycopg does. Autocommit only, not in a pipeline.

        Raises:
            psycopg.Error: The statement failed, or the connection did.
        """
        # Imported here, as at the top only for type checking: the store's SQLite
        # users never load psycopg.
        import psycopg
        from psycopg import pq

        if self._pipeline is not None:
            raise RuntimeError("prepared_rows runs outside a pipeline")
        conn = self._conn
        with conn.lock:
            with _PREPARED_LOCK:
                names = _PREPARED.setdefault(conn, set())
            pgconn = conn.pgconn
            encoding = conn.info.encoding
            if name not in names:
                result = pgconn.prepare(name, sql)
                if result.status != pq.ExecStatus.COMMAND_OK:
                    raise psycopg.errors.error_from_result(result, encoding=encoding)
                names.add(name)
            result = pgconn.exec_prepared(name, [p.encode() for p in parameters])
            if result.status != pq.ExecStatus.TUPLES_OK:
                raise psycopg.errors.error_from_result(result, encoding=encoding)
            columns = range(result.nfields)
            return [[result.get_value(row, column) for column in columns]
                    for row in range(result.ntuples)]

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> SqlCursor:
        """Run one statement per parameter row, pipelined."""
        cursor = self._conn.cursor()
        cursor.executemany(to_pyformat(sql).encode(), parameters)
        return cursor if self._pipeline is None else PipelinedCursor(cursor, self._pipeline)


class PipelinedCursor:
    """A statement sent in a pipeline: reading its row count waits for its result.

    (psycopg fetches rows by itself; the row count would read -1 until then.)
    """

    def __init__(self, cursor: psycopg.Cursor[Any], pipeline: psycopg.Pipeline) -> None:
        self._cursor = cursor
        self._pipeline = pipeline

    @property
    def rowcount(self) -> int:
        """Rows changed by the statement (after its result came)."""
        if self._cursor.rowcount < 0:
            self._pipeline.sync()
        return self._cursor.rowcount

    def fetchone(self) -> Any:
        """The next row, or None."""
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        """The remaining rows."""
        return self._cursor.fetchall()
