"""Copying one store's rows into another, ids kept: a SQLite data folder into PostgreSQL.

A team that outgrows one ``serve`` moves its conversations to the PostgreSQL
database its replicas will share (``desktop-agent copy-store --to URL``). Unlike
an export and import, which give every conversation a fresh id, this keeps
every id (conversations, messages, event ids), so links, API clients and
``Last-Event-ID`` resume points still name the same things afterwards.

The copy is one write transaction on the target: all of it, or (on any error)
nothing. The target must hold no conversations yet.
"""

from __future__ import annotations

from dataclasses import dataclass

from desktop_agent.store.engine import Engine
from desktop_agent.store.errors import StoreError
from desktop_agent.store.event_table import event_data

# Parents before children: a message's parent was always written first (lower seq).
_TABLES: tuple[tuple[str, str, str], ...] = (
    ("conversations", "id, title, created_at, updated_at, settings, active_leaf_id",
     "created_at, id"),
    ("messages", "seq, id, conversation_id, parent_id, role, message, metadata, status,"
     " created_at, depth, writer", "seq"),
    ("message_search", "rowid, body", "rowid"),
    ("events", "conversation_id, event_id, type, data, created_at",
     "conversation_id, event_id"),
    ("app_settings", "key, value", "key"),
)


class TargetNotEmptyError(StoreError):
    """The store to copy into already holds conversations."""


@dataclass(frozen=True)
class CopyCounts:
    """What was copied.

    Attributes:
        conversations: Conversations.
        messages: Messages, every branch.
        events: Events of the REST server's logs.
        settings: App-level settings.
    """

    conversations: int
    messages: int
    events: int
    settings: int


def copy_rows(source: Engine, target: Engine) -> CopyCounts:
    """Copy every row of ``source`` into the empty ``target`` in one transaction.

    Raises:
        TargetNotEmptyError: ``target`` already holds conversations.
    """
    counts: dict[str, int] = {}
    with target.writing() as out:
        if out.execute("SELECT count(*) FROM conversations").fetchone()[0]:
            raise TargetNotEmptyError(
                f"{target.location} already holds conversations; copy into an empty "
                "database so that no conversation is mixed with or overwrites another."
            )
        for table, columns, order in _TABLES:
            with source.reading() as conn:
                rows = conn.execute(f"SELECT {columns} FROM {table} ORDER BY {order}").fetchall()
            marks = ", ".join("?" for _ in columns.split(","))
            keep = target.dialect.keep_identity if table == "messages" else ""
            copied = [tuple(row) for row in rows]
            if table == "events":  # SQLite keeps large payloads compressed; the target, text
                copied = [(*row[:3], event_data(row[3]), *row[4:]) for row in copied]
            if copied:
                out.executemany(
                    f"INSERT INTO {table}({columns}){keep} VALUES ({marks})", copied)
            counts[table] = len(rows)
        target.dialect.rows_copied(out)
    return CopyCounts(counts["conversations"], counts["messages"], counts["events"],
                      counts["app_settings"])
