"""The event log on its own: memory tail plus the store's table, read back seamlessly."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from desktop_agent.server import event_log, event_tail
from desktop_agent.server.event_log import EventLog
from desktop_agent.server.event_outbox import EventOutbox
from desktop_agent.server.event_writer import Pending
from desktop_agent.store import NewEvent, Store


async def test_pages_span_disk_and_memory_without_gaps(tmp_path, monkeypatch):
    monkeypatch.setattr(event_tail, "MEMORY_TAIL", 10)
    store = Store.open(tmp_path / "db.sqlite3")
    log = EventLog(store)
    try:
        for n in range(100):
            log.append("c1", "message", {"text": str(n)})
        await log.page("c1", 0, 1)  # waits for what was queued
        for n in range(100, 130):
            log.append("c1", "message", {"text": str(n)})
        seen, after = [], 0
        while True:
            page, after, more = await log.page("c1", after, 7)
            seen += page
            if not more:
                break
        assert log._tails["c1"].base > 1, "old events must have left memory for this test"
        assert [e.data["text"] for e in seen] == [str(n) for n in range(130)]
        assert [e.id for e in seen] == list(range(1, 131))
        filtered, _, _ = await log.page("c1", 0, 1000, frozenset({"state"}))
        assert filtered == []
    finally:
        log.close()
        store.close()
    # everything reached the store's events table
    with sqlite3.connect(tmp_path / "db.sqlite3") as conn:
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 130


async def test_waiters_wake_on_append_and_forget_removes_the_log(tmp_path):
    store = Store.open(tmp_path / "db.sqlite3")
    log = EventLog(store)
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
    reopened = EventLog(store)
    try:
        assert (await reopened.page("c2"))[0] == []
        assert list(reopened.stored_conversations()) == []
    finally:
        reopened.close()
        store.close()


async def test_a_wait_that_ends_without_an_event_leaves_no_waiter_behind(tmp_path):
    """Every open stream waits once per event; a timed-out or cancelled wait must not
    stay registered (a stream that reconnects all day would otherwise grow a list)."""
    store = Store.open(tmp_path / "db.sqlite3")
    log = EventLog(store)
    try:
        assert await log.wait_beyond("c3", 0, 0.02) is False
        cancelled = asyncio.ensure_future(log.wait_beyond("c3", 0, 10))
        await asyncio.sleep(0.01)
        assert "c3" in log._waiters
        cancelled.cancel()
        await asyncio.gather(cancelled, return_exceptions=True)
        assert log._waiters == {}
        # a wait outliving several poll periods still wakes at once on an event
        waiter = asyncio.ensure_future(log.wait_beyond("c3", 0, 10))
        await asyncio.sleep(event_log.POLL_SECONDS * 2.5)
        assert len(log._waiters["c3"]) == 1
        log.append("c3", "state", {"state": "running"})
        assert await asyncio.wait_for(waiter, 5) is True
        assert log._waiters == {}
    finally:
        log.close()
        store.close()


async def test_events_another_process_writes_are_read_and_followed(tmp_path):
    store = Store.open(tmp_path / "db.sqlite3")
    other = Store.open(tmp_path / "db.sqlite3")  # the other server's connection
    log = EventLog(store)
    try:
        log.append("c3", "message", {"text": "mine 1"})
        await log.page("c3")
        follower = asyncio.ensure_future(log.wait_beyond("c3", 1, 10))
        await asyncio.sleep(0.05)
        other.append_events([NewEvent("c3", "message", '{"text": "theirs 2"}', 1.0)])
        assert await asyncio.wait_for(follower, 5) is True
        log.append("c3", "message", {"text": "mine 3"})
        events, next_after, more = await log.page("c3", 0, 100)
        assert [(e.id, e.data["text"]) for e in events] == [
            (1, "mine 1"), (2, "theirs 2"), (3, "mine 3")]
        assert (next_after, more) == (3, False)
        assert log.evict_idle(0) == 1 and log.memory_conversations == 0
        again, _, _ = await log.page("c3", 1, 100)
        assert [e.id for e in again] == [2, 3]
    finally:
        log.close()
        other.close()
        store.close()


def _second_server(db_path: Path, conversation_id: str, count: int) -> subprocess.Popen[str]:
    here = Path(__file__).parent
    env = dict(os.environ)
    env["PYTHONPATH"] = str(here.parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen(
        [sys.executable, str(here / "event_log_process.py"), str(db_path), conversation_id,
         str(count), "other"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


async def test_two_server_processes_on_one_folder_lose_no_event(tmp_path):
    store = Store.open(tmp_path / "db.sqlite3")
    log = EventLog(store)
    count = 300
    other = _second_server(tmp_path / "db.sqlite3", "c9", count)
    try:
        line = await asyncio.to_thread(other.stdout.readline)
        assert line.strip() == "ready"
        other.stdin.write("go\n")
        other.stdin.flush()
        follower = asyncio.ensure_future(_follow(log, "c9", 2 * count))
        for n in range(count):
            log.append("c9", "message", {"text": f"this {n}"})
            if n % 5 == 0:
                await asyncio.sleep(0)
        out, err = await asyncio.to_thread(other.communicate, timeout=60)
        assert other.returncode == 0 and out.strip() == "done", err
        followed = await asyncio.wait_for(follower, 30)
        events, _, more = await log.page("c9", 0, 1000)
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
        log.close()
        store.close()
    assert not more
    assert [e.id for e in events] == list(range(1, 2 * count + 1))
    assert [e.id for e in followed] == [e.id for e in events]
    texts = [e.data["text"] for e in events]
    for tag in ("this", "other"):
        assert [t for t in texts if t.startswith(tag)] == [f"{tag} {n}" for n in range(count)]


async def _follow(log: EventLog, conversation_id: str, total: int) -> list:
    """What an SSE stream of this process reads: its own events and the other's."""
    seen: list = []
    cursor = 0
    while len(seen) < total:
        page, cursor, _ = await log.page(conversation_id, cursor, 500, refresh=False)
        seen += page
        if len(seen) < total and not page:
            await log.wait_beyond(conversation_id, cursor, 5)
    return seen


async def test_deltas_ready_together_become_one_event_and_keep_the_text(tmp_path):
    store = Store.open(tmp_path / "db.sqlite3")
    log = EventLog(store)
    try:
        # One loop turn: what a busy server reads from one socket read.
        for piece in ("Hel", "lo, ", "world"):
            log.append("c5", "text", {"text": piece})
        log.append("c5", "thinking", {"text": "hm"})  # another type: its own event
        log.append("c5", "thinking", {"text": "m."})
        log.append("c5", "tool_call", {"id": "t1", "name": "x", "input": {}})
        log.append("c5", "text", {"text": "after"})  # nothing to join: the call came between
        log.append("c6", "text", {"text": "other conversation"})
        await log.page("c5", 0, 1)  # written: a delta that arrives later stays apart
        log.append("c5", "text", {"text": " later"})
        events, _, _ = await log.page("c5", 0, 100)
        assert [(e.type, e.data) for e in events] == [
            ("text", {"text": "Hello, world"}),
            ("thinking", {"text": "hmm."}),
            ("tool_call", {"id": "t1", "name": "x", "input": {}}),
            ("text", {"text": "after"}),
            ("text", {"text": " later"}),
        ]
        assert [e.id for e in events] == [1, 2, 3, 4, 5]  # ids stay gapless
        assert [e.data for e in (await log.page("c6"))[0]] == [{"text": "other conversation"}]
        log.append("c5", "text", {"text": "unsaved "})
        log.append("c5", "text", {"text": "at close"})
    finally:
        await asyncio.to_thread(log.close)  # writes the joined delta too
    reopened = EventLog(store)
    try:
        events, _, _ = await reopened.page("c5", 5, 100)
        assert [e.data for e in events] == [{"text": "unsaved at close"}]
    finally:
        reopened.close()
        store.close()


async def test_deltas_appended_while_a_commit_is_under_way_join_and_count_from_the_first(
        tmp_path):
    """A loop that falls behind the writer sends fewer, longer deltas: pieces appended
    in later loop turns, while the writer is still committing, become one event whose
    ``created_at`` is its first piece's (a piece that waited for the others is never
    counted as younger than it is); once the writer waits again, a lone piece goes alone."""
    store = Store.open(tmp_path / "db.sqlite3")
    log = EventLog(store)
    other = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    try:
        log.append("c7", "message", {"text": "asked"})
        await log.page("c7", 0, 100)  # committed: the writer waits for work
        other.execute("BEGIN IMMEDIATE")  # the next commit cannot finish yet
        log.append("c7", "state", {"state": "running"})
        await asyncio.sleep(0.02)  # handed over: the writer is inside its commit
        appended_by: list[float] = []
        for piece in ("The ", "reply ", "streams ", "on."):
            log.append("c7", "text", {"text": piece})
            appended_by.append(time.time())
            await asyncio.sleep(0.01)  # each piece in a loop turn of its own
        log.append("c8", "text", {"text": "another conversation"})
        other.execute("COMMIT")
        events, _, _ = await asyncio.wait_for(log.page("c7", 0, 100), 30)
        assert [(e.type, e.data) for e in events] == [
            ("message", {"text": "asked"}),
            ("state", {"state": "running"}),
            ("text", {"text": "The reply streams on."}),
        ]
        assert events[2].created_at <= appended_by[0]
        assert [e.data for e in (await log.page("c8"))[0]] == [{"text": "another conversation"}]

        log.append("c7", "text", {"text": " Alone"})
        await log.page("c7", 3, 1)  # written on its own: no later piece was waited for
        log.append("c7", "text", {"text": " and apart."})
        events, _, _ = await log.page("c7", 3, 100)
        assert [e.data["text"] for e in events] == [" Alone", " and apart."]
    finally:
        other.close()
        log.close()
        store.close()


def test_a_writer_takes_what_finished_loop_turns_appended_and_their_deltas_join():
    """The outbox on its own, turn by turn: the writer takes what loop turns that ended
    appended, all of it in one go however late it comes, never a loop turn still under
    way, and deltas join an entry until the writer takes it."""
    outbox = EventOutbox()

    def delta(cid: str, text: str, kind: str = "text") -> None:
        if not outbox.join(cid, kind, text):
            outbox.add(Pending(NewEvent(cid, kind, json.dumps({"text": text}), 1.0),
                               {"text": text}), cid, text)

    def other(cid: str, kind: str) -> None:
        outbox.add(Pending(NewEvent(cid, kind, "{}", 1.0), {}), cid, None)

    def texts(items: list) -> list:
        return [(item.new.conversation_id, item.new.type, item.data.get("text"))
                for item in items]

    delta("c1", "a")
    assert outbox.take_for_writer() == []  # the loop turn goes on: the writer waits
    assert outbox.iteration_ended() is True  # it ended: wake the writer
    assert texts(outbox.take_for_writer()) == [("c1", "text", "a")]  # a lone piece, alone
    delta("c1", "b")  # the writer commits "a" meanwhile
    delta("c1", "c")
    assert outbox.iteration_ended() is False  # a busy writer needs no wake-up...
    delta("c1", "d")  # ...and what it will take still joins
    other("c2", "state")  # a loop turn under way: not the writer's yet
    assert texts(outbox.take_for_writer()) == [("c1", "text", "bcd")]
    delta("c2", "e")
    delta("c1", "f")  # "bcd" is gone: a delta of its own
    assert outbox.take_for_writer() == []  # no loop turn ended since: the writer waits
    assert outbox.iteration_ended() is True
    delta("c1", "g")  # the writer has not woken yet: one more loop turn ends
    assert outbox.iteration_ended() is False
    assert texts(outbox.take_for_writer()) == [
        ("c2", "state", None), ("c2", "text", "e"), ("c1", "text", "fg")]
    delta("c1", "h", "thinking")
    assert texts(outbox.take_all()) == [("c1", "thinking", "h")]


async def test_a_database_locked_by_another_process_never_stalls_the_loop(tmp_path):
    """While another process holds the database's write lock, appended events wait
    in the writer thread, in order, and the loop (every other stream) keeps running."""
    store = Store.open(tmp_path / "db.sqlite3")
    log = EventLog(store)
    other = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    try:
        log.append("c5", "message", {"text": "free 1"})
        events, _, _ = await log.page("c5", 0, 100)
        assert [e.data["text"] for e in events] == ["free 1"]

        other.execute("BEGIN IMMEDIATE")  # another process starts writing
        ticks = 0
        for n in range(5):
            log.append("c5", "message", {"text": f"locked {n}"})
            began = asyncio.get_running_loop().time()
            await asyncio.sleep(0.02)
            ticks += asyncio.get_running_loop().time() - began < 0.5
        assert ticks == 5, "the loop waited for the other process's lock"
        assert log.last_id("c5") == 1  # nothing could be committed yet
        other.execute("COMMIT")
        events, _, _ = await asyncio.wait_for(log.page("c5", 0, 100), 30)
        assert [(e.id, e.data["text"]) for e in events] == [
            (1, "free 1"), *((n + 2, f"locked {n}") for n in range(5))]
        log.append("c5", "message", {"text": "free again"})
        events, _, _ = await log.page("c5", 6, 100)
        assert [(e.id, e.data["text"]) for e in events] == [(7, "free again")]
    finally:
        other.close()
        log.close()
        store.close()


async def test_on_postgresql_small_events_arrive_with_the_news_and_large_ones_are_read(
        postgres_url):
    """A replica streaming another replica's turn is given its small events whole.

    The text deltas of a turn are small: they come inside the NOTIFY, so the
    replica streaming them does not read each commit back from the table (that
    read, per commit and replica, was most of the cost of streaming across
    replicas). A large event (a long tool result) is only named, and read.
    """
    store = Store.open(postgres_url)
    other = Store.open(postgres_url)  # another replica's store
    log = EventLog(store)
    reads: list[dict[str, int]] = []
    read_events_after = store.read_events_after

    def counted(positions, limit=5000):
        reads.append(dict(positions))
        return read_events_after(positions, limit)

    store.read_events_after = counted  # type: ignore[method-assign]
    cid = store.create_conversation().id
    try:
        await log.watch_other_processes()
        log.append(cid, "message", {"text": "mine 1"})
        await log.page(cid)
        # The listener's LISTEN starts on its own thread: wait until it hears a commit.
        while log.last_id(cid) < 2:
            follower = asyncio.ensure_future(log.wait_beyond(cid, log.last_id(cid), 0.5))
            other.append_events([NewEvent(cid, "text", '{"text": "warm-up"}', 1.0)])
            await follower
        reads.clear()
        start = log.last_id(cid)
        follower = asyncio.ensure_future(log.wait_beyond(cid, start, 30))
        other.append_events([NewEvent(cid, "text", f'{{"text": "piece {n}"}}', 2.0)
                             for n in range(3)])
        assert await follower is True
        while log.last_id(cid) < start + 3:
            await log.wait_beyond(cid, log.last_id(cid), 30)
        assert reads == []
        events, _, _ = await log.page(cid, start, 100)
        assert [e.data["text"] for e in events] == ["piece 0", "piece 1", "piece 2"]

        large = "x" * 5000
        follower = asyncio.ensure_future(log.wait_beyond(cid, start + 3, 30))
        other.append_events([NewEvent(cid, "tool_result", json.dumps({"text": large}), 3.0),
                             NewEvent(cid, "text", '{"text": "after"}', 3.0)])
        assert await follower is True
        assert reads  # named only: read from the table
        events, _, _ = await log.page(cid, start + 3, 100)
        assert [e.data["text"] for e in events] == [large, "after"]
    finally:
        log.close()
        other.close()
        store.close()


async def _tail_capped_in_bytes(store: Store, monkeypatch) -> None:
    """Long events leave memory by size; every event still pages back, from disk or tail."""
    monkeypatch.setattr(event_tail, "MEMORY_TAIL_BYTES", 20_000)
    log = EventLog(store)
    cid = store.create_conversation().id
    big = "line of bash output\n" * 250  # ~5 KB per event, like a long tool result
    try:
        follower = asyncio.ensure_future(_follow(log, cid, 60))
        for n in range(60):
            log.append(cid, "tool_result", {"n": n, "text": big})
            if n % 7 == 0:
                await asyncio.sleep(0)  # several commits, as a turn makes them
        live = await asyncio.wait_for(follower, 60)
        tail = log._tails[cid]
        assert tail.size <= 2 * 20_000 + len(big) + 100
        assert len(tail.events) < 20, "large events must leave memory by size, not by count"
        assert tail.base > 1
        assert [e.data["n"] for e in live] == list(range(60))
        # A follower that starts late (Last-Event-ID 0) reads the older events from the store.
        seen, after = [], 0
        while True:
            page, after, more = await log.page(cid, after, 9)
            seen += page
            if not more:
                break
        assert [e.data["n"] for e in seen] == list(range(60))
        assert all(e.data["text"] == big for e in seen)
    finally:
        log.close()


async def test_the_memory_tail_is_capped_in_bytes_on_sqlite(tmp_path, monkeypatch):
    store = Store.open(tmp_path / "db.sqlite3")
    try:
        await _tail_capped_in_bytes(store, monkeypatch)
    finally:
        store.close()


async def test_the_memory_tail_is_capped_in_bytes_on_postgresql(postgres_url, monkeypatch):
    store = Store.open(postgres_url)
    try:
        await _tail_capped_in_bytes(store, monkeypatch)
    finally:
        store.close()
