"""Inserting whole conversations in one transaction (imports, benchmarks).

Every conversation and message gets a fresh id, so an import never overwrites
or collides with what is already there; parent links and the active leaf are
remapped to the new ids.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from desktop_agent.store.dialects import Dialect
from desktop_agent.store.message_text import searchable_text
from desktop_agent.store.records import MESSAGE_STATUSES, ConversationRecord, NewConversation
from desktop_agent.store.secret_scrub import find_secret, scrub
from desktop_agent.store.sql_connection import SqlConnection


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def insert_all(
    conn: SqlConnection, items: list[NewConversation], dialect: Dialect
) -> list[ConversationRecord]:
    """Insert ``items`` on ``conn`` (inside the caller's transaction).

    Raises:
        ValueError: A message's parent is unknown or comes after it, a key is
            duplicated, or settings hold a key value.
    """
    records = []
    now = time.time()
    for index, item in enumerate(items):
        if find_secret(item.settings):
            raise ValueError(f"conversation {index + 1}: settings hold a key-like value")
        conversation_id = uuid.uuid4().hex
        created = item.created_at if item.created_at is not None else now
        updated = item.updated_at if item.updated_at is not None else now
        conn.execute(
            "INSERT INTO conversations(id, title, created_at, updated_at, settings)"
            " VALUES (?, ?, ?, ?, ?)",
            (conversation_id, item.title, created, updated, _dumps(item.settings)),
        )
        new_ids: dict[str, tuple[str, int]] = {}
        last_id = None
        for message in item.messages:
            if message.key in new_ids:
                raise ValueError(f"conversation {index + 1}: message id {message.key!r} repeats")
            parent_id, depth = None, 0
            if message.parent_key is not None:
                if message.parent_key not in new_ids:
                    raise ValueError(
                        f"conversation {index + 1}: message {message.key!r} refers to parent "
                        f"{message.parent_key!r}, which is not an earlier message"
                    )
                parent_id, parent_depth = new_ids[message.parent_key]
                depth = parent_depth + 1
            status = message.status if message.status in MESSAGE_STATUSES else "complete"
            if status == "streaming":
                status = "interrupted"
            metadata = scrub(message.metadata)
            message_id = uuid.uuid4().hex
            seq = dialect.insert_message(
                conn,
                "INSERT INTO messages(id, conversation_id, parent_id, role, message, metadata,"
                " status, created_at, depth) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    message_id,
                    conversation_id,
                    parent_id,
                    message.message["role"],
                    _dumps(message.message),
                    _dumps(metadata),
                    status,
                    message.created_at if message.created_at is not None else created,
                    depth,
                ),
            )
            conn.execute(
                "INSERT INTO message_search(rowid, body) VALUES (?, ?)",
                (seq, searchable_text(message.message, metadata)),
            )
            new_ids[message.key] = (message_id, depth)
            last_id = message_id
        if item.active_leaf_key is not None:
            if item.active_leaf_key not in new_ids:
                raise ValueError(
                    f"conversation {index + 1}: the active message {item.active_leaf_key!r} "
                    "is not one of its messages"
                )
            leaf: str | None = new_ids[item.active_leaf_key][0]
        else:
            leaf = last_id
        conn.execute(
            "UPDATE conversations SET active_leaf_id = ? WHERE id = ?", (leaf, conversation_id)
        )
        records.append(
            ConversationRecord(
                conversation_id, item.title, created, updated, dict(item.settings), leaf
            )
        )
    return records
