"""Event payloads on SQLite: large ones kept compressed, every reader gets the same JSON back."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from desktop_agent.store import NewEvent, Store


def test_a_long_output_takes_a_fraction_of_its_size_and_reads_back_unchanged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "conversations.sqlite3"
    output = "\n".join(f"{n:>6}  building module number {n} ... ok" for n in range(2000))
    long = json.dumps({"tool_use_id": "call_1", "output": output})
    short = json.dumps({"state": "idle"})
    with Store.open(path) as store:
        chat = store.create_conversation("Build")
        store.append_events([NewEvent(chat.id, "tool_result", long, time.time()),
                             NewEvent(chat.id, "state", short, time.time())])
        assert [e.data_json for e in store.read_events(chat.id)] == [long, short]
        after = store.read_events_after({chat.id: 0})[chat.id]
        assert [e.data_json for e in after] == [long, short]

    with sqlite3.connect(path) as conn:
        sizes = dict(conn.execute("SELECT type, length(data) FROM events").fetchall())
    assert sizes["tool_result"] < len(long) / 4  # the data folder grows by far less
    assert sizes["state"] == len(short)  # small payloads stay readable text
