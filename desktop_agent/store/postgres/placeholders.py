"""psycopg's connection in the shape the store's parts use: ``?`` placeholders.

The parts write each statement once, with SQLite's ``?``; psycopg takes ``%s``
(and reads a literal ``%`` as ``%%``). The rewrite is cached per statement text,
so a statement run a thousand times is rewritten once.
"""

from __future__ import annotations

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
