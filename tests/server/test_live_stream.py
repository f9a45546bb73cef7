"""SSE streams the event log's commits write to: every event once, in order, ids as truth."""

from __future__ import annotations

import asyncio
import re

from desktop_agent.server.event_log import EventLog
from desktop_agent.server.live_stream import LiveFollower
from desktop_agent.store import Store


class _Client:
    """An ASGI ``send`` whose writes wait while the client reads nothing (flow control)."""

    def __init__(self) -> None:
        self.reading = asyncio.Event()
        self.reading.set()
        self.body = b""

    async def send(self, message: dict[str, object]) -> None:
        if not self.reading.is_set():
            await self.reading.wait()
        body = message["body"]
        assert isinstance(body, bytes)
        self.body += body

    def ids(self) -> list[int]:
        return [int(found) for found in re.findall(rb"^id: (\d+)$", self.body, re.MULTILINE)]

    def types(self) -> list[str]:
        return [t.decode() for t in re.findall(rb"^event: (\w+)$", self.body, re.MULTILINE)]


async def _follow(log: EventLog, follower: LiveFollower) -> None:
    """What the stream route does with its follower (routes/events.py)."""
    log.live.add(follower)
    try:
        while True:
            events, _, _ = await log.page(follower.conversation_id, follower.cursor, 500,
                                          refresh=False)
            await follower.send(follower.frames(events))
            await log.wait_live(follower, 10)
    finally:
        log.live.remove(follower)


async def _until(condition, what: str) -> None:
    for _ in range(2000):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never happened: {what}")


async def test_a_stream_gets_every_event_once_in_order_even_while_its_client_stalls(tmp_path):
    store = Store.open(tmp_path / "db.sqlite3")
    log = EventLog(store)
    client = _Client()
    log.append("c", "state", {"state": "running"})
    follower = LiveFollower("c", 0, None, client.send)
    task = asyncio.ensure_future(_follow(log, follower))
    try:
        await _until(lambda: client.ids() == [1] and follower.waiting, "the first event sent")
        for n in range(5):  # written by the commits themselves, the stream's task waiting
            log.append("c", "message", {"text": str(n)})
            await _until(lambda n=n: client.ids()[-1] == n + 2, f"event {n + 2} sent")
        client.reading.clear()  # the client stops reading: the next writes wait
        for n in range(5, 40):
            log.append("c", "message", {"text": str(n)})
            if n % 7 == 0:
                await asyncio.sleep(0.01)
        await _until(lambda: log.last_id("c") == 41, "every event committed")
        await asyncio.sleep(0.05)
        client.reading.set()
        await _until(lambda: client.ids()[-1:] == [41], "every event sent")
        assert client.ids() == list(range(1, 42))
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        log.close()
        store.close()


async def test_a_filtered_stream_resumes_after_its_last_id_and_skips_other_types(tmp_path):
    store = Store.open(tmp_path / "db.sqlite3")
    log = EventLog(store)
    client = _Client()
    try:
        log.append("c", "text", {"text": "old"})
        log.append("c", "message", {"text": "between"})
        log.append("c", "text", {"text": "old too"})
        await log.page("c", 0, 1)  # committed
        follower = LiveFollower("c", 2, frozenset({"text"}), client.send)  # Last-Event-ID: 2
        task = asyncio.ensure_future(_follow(log, follower))
        await _until(lambda: client.ids() == [3], "the catch-up")
        log.append("c", "state", {"state": "running"})
        log.append("c", "usage", {"input_tokens": 1})
        log.append("c", "text", {"text": "new"})
        await _until(lambda: client.ids()[-1:] == [6], "the new text")
        assert client.ids() == [3, 6]
        assert client.types() == ["text", "text"]
        assert follower.cursor == 6
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    finally:
        log.close()
        store.close()
