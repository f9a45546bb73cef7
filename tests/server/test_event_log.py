"""The event log on its own: memory tail plus SQLite, read back seamlessly across both."""

from __future__ import annotations

import asyncio
import sqlite3

from desktop_agent.server import event_log
from desktop_agent.server.event_log import EventLog
from desktop_agent.store import Store


async def _flushed(log: EventLog, conversation_id: str) -> None:
    for _ in range(500):
        if log._writer.flushed.get(conversation_id, 0) >= log.last_id(conversation_id):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the writer did not catch up")


async def test_pages_span_disk_and_memory_without_gaps(tmp_path, monkeypatch):
    monkeypatch.setattr(event_log, "MEMORY_TAIL", 10)
    Store.open(tmp_path / "db.sqlite3").close()
    log = EventLog(tmp_path / "db.sqlite3")
    try:
        for n in range(100):
            log.append("c1", "text", {"text": str(n)})
        await _flushed(log, "c1")
        for n in range(100, 130):
            log.append("c1", "text", {"text": str(n)})
        assert log._tails["c1"].base > 1, "old events must have left memory for this test"
        seen, after = [], 0
        while True:
            page, after, more = await log.page("c1", after, 7)
            seen += page
            if not more:
                break
        assert [e.data["text"] for e in seen] == [str(n) for n in range(130)]
        assert [e.id for e in seen] == list(range(1, 131))
        filtered, _, _ = await log.page("c1", 0, 1000, frozenset({"state"}))
        assert filtered == []
    finally:
        log.close()
    # everything reached the table, in the same file as the store's tables
    with sqlite3.connect(tmp_path / "db.sqlite3") as conn:
        assert conn.execute("SELECT count(*) FROM server_events").fetchone()[0] == 130
        assert conn.execute("SELECT count(*) FROM conversations").fetchone()[0] == 0


async def test_waiters_wake_on_append_and_forget_removes_the_log(tmp_path):
    Store.open(tmp_path / "db.sqlite3").close()
    log = EventLog(tmp_path / "db.sqlite3")
    try:
        waiter = asyncio.ensure_future(log.wait_beyond("c2", 0, 10))
        await asyncio.sleep(0)
        log.append("c2", "state", {"state": "running"})
        assert await asyncio.wait_for(waiter, 5) is True
        assert await log.wait_beyond("c2", 1, 0.01) is False
        log.forget("c2")
        assert (await log.page("c2"))[0] == []
    finally:
        log.close()
    reopened = EventLog(tmp_path / "db.sqlite3")
    try:
        assert reopened.last_id("c2") == 0
    finally:
        reopened.close()
