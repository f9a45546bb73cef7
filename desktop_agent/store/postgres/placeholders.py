"""psycopg's connection in the shape the store's parts use: ``?`` placeholders.

The parts write each statement once, with SQLite's ``?``; psycopg takes ``%s``
(and reads a literal ``%`` as ``%%``). The rewrite is cached per statement text,
so a statement run a thousand times is rewritten once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg


@lru_cache(maxsize=512)
def to_pyformat(sql: str) -> str:
    """``?`` to ``%s`` and ``%`` to ``%%`` (the store's SQL has no ``?`` inside literals)."""
    return sql.replace("%", "%%").replace("?", "%s")


class PlaceholderConnection:
    """A psycopg connection taking ``?`` placeholders; see :mod:`..sql_connection`."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> psycopg.Cursor[Any]:
        """Run one statement (without parameters it is sent as written)."""
        if not parameters:
            return self._conn.execute(sql.encode())
        return self._conn.execute(to_pyformat(sql).encode(), parameters)

    def executemany(
        self, sql: str, parameters: Iterable[Sequence[Any]], /
    ) -> psycopg.Cursor[Any]:
        """Run one statement per parameter row, pipelined."""
        cursor = self._conn.cursor()
        cursor.executemany(to_pyformat(sql).encode(), parameters)
        return cursor
