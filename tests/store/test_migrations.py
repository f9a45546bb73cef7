"""Opening databases written by earlier (and later, and other) programs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from desktop_agent.store import DatabaseUnusableError, Store
from desktop_agent.store.schema import SCHEMA_VERSION

# The schema of the first release, frozen here on purpose: the migration code may
# change, but databases people already have will always look like this.
V1_SCHEMA = """
CREATE TABLE conversations (
    id TEXT PRIMARY KEY, title TEXT NOT NULL, created_at REAL NOT NULL,
    updated_at REAL NOT NULL, settings TEXT NOT NULL DEFAULT '{}', active_leaf_id TEXT);
CREATE INDEX conversations_by_update ON conversations(updated_at DESC);
CREATE TABLE messages (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    parent_id TEXT REFERENCES messages(id) ON DELETE CASCADE,
    role TEXT NOT NULL, message TEXT NOT NULL, metadata TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL DEFAULT 'complete', created_at REAL NOT NULL);
CREATE INDEX messages_by_conversation ON messages(conversation_id, seq);
CREATE INDEX messages_by_parent ON messages(parent_id, seq);
CREATE TABLE app_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
PRAGMA user_version = 1;
"""


def _write_v1_database(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(V1_SCHEMA)
    conn.execute(
        "INSERT INTO conversations VALUES ('c1', 'Old chat', 1.0, 5.0, ?, 'm4')",
        (json.dumps({"model": "llama", "api_key_name": "api:old"}),),
    )
    rows = [
        ("m1", None, "user", "What is a heron?"),
        ("m2", "m1", "assistant", "A wading bird."),
        ("m3", "m1", "assistant", "A long-legged bird (regenerated)."),
        ("m4", "m3", "user", "Where do herons live?"),
    ]
    for seq, (mid, parent, role, content) in enumerate(rows, start=1):
        conn.execute(
            "INSERT INTO messages VALUES (?, ?, 'c1', ?, ?, ?, ?, 'complete', ?)",
            (
                seq,
                mid,
                parent,
                role,
                json.dumps({"role": role, "content": content}),
                json.dumps({"thinking": "hmm"} if role == "assistant" else {}),
                float(seq),
            ),
        )
    conn.execute("INSERT INTO app_settings VALUES ('open_tabs', '[\"c1\"]')")
    conn.commit()
    conn.close()


def test_a_v1_database_is_migrated_keeping_everything(tmp_path: Path) -> None:
    path = tmp_path / "conversations.sqlite3"
    _write_v1_database(path)

    with Store.open(path) as store:
        conv = store.get_conversation("c1")
        assert conv is not None
        assert conv.settings == {"model": "llama", "api_key_name": "api:old"}
        active = store.active_path("c1")
        assert [m.id for m in active] == ["m1", "m3", "m4"]
        assert [m.depth for m in active] == [0, 1, 2]
        assert store.active_path("c1", limit=1)[0].depth == 2
        assert [m.id for m in store.siblings("m2")] == ["m2", "m3"]
        assert {h.message_id for h in store.search("bird")} == {"m2", "m3"}
        assert [h.message_id for h in store.search("hmm")] != []  # thinking indexed too
        assert store.get_setting("open_tabs") == ["c1"]
        # New writes work on the migrated file.
        added = store.add_message("c1", {"role": "assistant", "content": "Near water."})
        assert added.parent_id == "m4" and added.depth == 3

    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()
    backup = tmp_path / "conversations.sqlite3.v1.bak"
    assert backup.is_file()
    conn = sqlite3.connect(backup)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 4
    conn.close()


def test_a_database_from_a_newer_app_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite3"
    with Store.open(path):
        pass
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 3}")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(DatabaseUnusableError, match="newer version of Desktop Agent"):
        Store.open(path)
    assert path.read_bytes() == before


def test_a_file_that_is_not_a_database_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite3"
    path.write_bytes(b"these are my notes, not a database" * 100)
    before = path.read_bytes()
    with pytest.raises(DatabaseUnusableError, match="not a Desktop Agent conversation database"):
        Store.open(path)
    assert path.read_bytes() == before


def test_another_programs_sqlite_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE contacts (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(DatabaseUnusableError, match="another program"):
        Store.open(path)
    conn = sqlite3.connect(path)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    conn.close()
    assert tables == ["contacts"]


# The schema of today's file (v2) plus the REST server's event table, which
# ``server/event_log.py`` created outside the migrations; frozen like V1_SCHEMA.
V2_WITH_SERVER_EVENTS = """
CREATE TABLE conversations (
    id TEXT PRIMARY KEY, title TEXT NOT NULL, created_at REAL NOT NULL,
    updated_at REAL NOT NULL, settings TEXT NOT NULL DEFAULT '{}', active_leaf_id TEXT);
CREATE INDEX conversations_by_update ON conversations(updated_at DESC);
CREATE TABLE messages (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    parent_id TEXT REFERENCES messages(id) ON DELETE CASCADE,
    role TEXT NOT NULL, message TEXT NOT NULL, metadata TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL DEFAULT 'complete', created_at REAL NOT NULL
, depth INTEGER NOT NULL DEFAULT 0, writer TEXT);
CREATE INDEX messages_by_conversation ON messages(conversation_id, seq);
CREATE INDEX messages_by_parent ON messages(parent_id, seq);
CREATE TABLE app_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE INDEX messages_streaming ON messages(status) WHERE status = 'streaming';
CREATE VIRTUAL TABLE message_search USING fts5(body, tokenize = 'unicode61 remove_diacritics 2');
CREATE TABLE server_events (
    conversation_id TEXT NOT NULL, event_id INTEGER NOT NULL, type TEXT NOT NULL,
    data TEXT NOT NULL, created_at REAL NOT NULL,
    PRIMARY KEY (conversation_id, event_id)) WITHOUT ROWID;
PRAGMA user_version = 2;
"""


def test_todays_server_events_move_into_the_store_event_log(tmp_path: Path) -> None:
    path = tmp_path / "conversations.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript(V2_WITH_SERVER_EVENTS)
    conn.execute("INSERT INTO conversations VALUES ('c1', 'API chat', 1.0, 2.0, '{}', 'm1')")
    conn.execute(
        "INSERT INTO messages VALUES (1, 'm1', 'c1', NULL, 'user', ?, '{}', 'complete', 1.0, 0,"
        " NULL)",
        (json.dumps({"role": "user", "content": "hello heron"}),),
    )
    conn.execute("INSERT INTO message_search(rowid, body) VALUES (1, 'hello heron')")
    conn.executemany(
        "INSERT INTO server_events VALUES ('c1', ?, ?, ?, ?)",
        [(n, "text", json.dumps({"text": f"piece {n}"}), 10.0 + n) for n in range(1, 6)],
    )
    conn.commit()
    conn.close()

    with Store.open(path) as store:
        events = store.read_events("c1", 0, limit=100)
        assert [(e.id, json.loads(e.data_json)["text"]) for e in events] == [
            (n, f"piece {n}") for n in range(1, 6)]
        assert events[0].created_at == 11.0
        # New events continue after the migrated ones.
        from desktop_agent.store import NewEvent

        (added,) = store.append_events([NewEvent("c1", "state", '{"state": "idle"}', 20.0)])
        assert added.id == 6
        assert [m.message["content"] for m in store.active_path("c1")] == ["hello heron"]
        assert [h.message_id for h in store.search("heron")] == ["m1"]

    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert "server_events" not in tables
    assert (tmp_path / "conversations.sqlite3.v2.bak").is_file()
