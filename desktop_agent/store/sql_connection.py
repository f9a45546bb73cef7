"""The part of a DB-API connection the store's parts use, on either engine.

``sqlite3.Connection`` has this shape as it is; PostgreSQL's connection is wrapped
(:mod:`~desktop_agent.store.postgres.placeholders`) to take the same ``?``
placeholders, so a statement is written once for both engines.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol


class SqlCursor(Protocol):
    """The part of a DB-API cursor the store reads (``sqlite3`` and psycopg alike)."""

    @property
    def rowcount(self) -> int:
        """Rows changed by the statement."""
        ...

    def fetchone(self) -> Any:
        """The next row, or None."""
        ...

    def fetchall(self) -> list[Any]:
        """The remaining rows."""
        ...


class SqlConnection(Protocol):
    """A connection taking ``?`` placeholders (PostgreSQL's is wrapped to take them)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> SqlCursor:
        """Run one statement."""
        ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> SqlCursor:
        """Run one statement once per parameter row."""
        ...
