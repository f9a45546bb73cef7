"""A turn whose reply streams is not held behind a burst of turns starting.

The start pacer makes turns asked for together take turns (see
``desktop_agent.server.start_pacer``). A turn whose request is already sent
is no longer starting: its reply's steps (its first write, its end) must not
queue behind the starts, or its pieces wait unread until every start before
them ran. Here the pacer is held busy for minutes (a start step it let through,
and one waiting behind it) before a burst of starts is asked for: the running
turn must end while the burst still waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from server_harness import MASTER_KEY, WAIT, start_api

from desktop_agent.server import start_pacer
from desktop_agent.testing import script


def _spin(seconds: float) -> None:
    """Hold the loop for ``seconds``, as a start step's Python work does."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def _add_hold_route(app: FastAPI) -> None:
    """``POST /test/hold-starts``: a start step through the pacer and one queued behind it.

    With the pacer's spacing made long, every start asked for afterwards waits.
    ``DELETE`` lets the two go (cancelled) at the test's end.
    """
    held: list[asyncio.Task[None]] = []

    async def step(work: float) -> None:
        await app.state.services.pacer.step()
        _spin(work)

    @app.post("/test/hold-starts")
    async def hold() -> dict[str, int]:
        held.extend([asyncio.ensure_future(step(0.002)), asyncio.ensure_future(step(0.0))])
        await asyncio.sleep(0)  # the first ran its step; the second waits behind it
        return {"waiting": app.state.services.pacer.waiting}

    @app.delete("/test/hold-starts")
    async def release() -> None:
        for task in held:
            task.cancel()


def _ask_without_waiting(base_url: str, conversation_id: str) -> None:
    """``POST /run`` from a thread of its own; its answer comes whenever the pacer lets it."""

    def ask() -> None:
        # HTTPError: the server stopped at the test's end with the start still queued.
        with contextlib.suppress(httpx.HTTPError):
            httpx.post(f"{base_url}/conversations/{conversation_id}/run",
                       json={"message": "start"}, timeout=WAIT * 4,
                       headers={"Authorization": f"Bearer {MASTER_KEY}"})

    threading.Thread(target=ask, daemon=True).start()


def test_a_streaming_reply_ends_while_a_burst_of_starts_still_waits(
        tmp_path: Path, model_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(start_pacer, "STREAM_SHARE", 100_000.0)  # a queued start: minutes
    api = start_api(tmp_path, add_routes=_add_hold_route)
    gate = threading.Event()
    try:
        pacer = api.server.config.app.state.services.pacer
        running = api.create(base_url=model_server.base_url, model="test-model")["id"]
        burst = [api.create(base_url=model_server.base_url, model="test-model")["id"]
                 for _ in range(3)]
        reply = script.text("the running answer", pieces=3)
        reply.steps.insert(1, script.Gate(gate, timeout=WAIT * 4))  # after the reply's head
        model_server.enqueue(reply)

        assert api.client.post(f"/conversations/{running}/run",
                               json={"message": "hello"}).status_code == 202
        deadline = time.monotonic() + WAIT
        while not model_server.requests:  # its request is sent: the turn no longer starts
            assert time.monotonic() < deadline, "the running turn never asked the model"
            time.sleep(0.01)

        assert api.client.post("/test/hold-starts").json() == {"waiting": 1}
        for conversation_id in burst:
            _ask_without_waiting(api.base_url, conversation_id)
        deadline = time.monotonic() + WAIT
        while pacer.waiting < 1 + len(burst):  # the burst queues at the pacer
            assert time.monotonic() < deadline, "the burst never queued"
            time.sleep(0.01)

        gate.set()  # the running turn's reply comes: its first write, its pieces, its end
        api.wait_idle(running)

        texts = [e["data"]["text"] for e in api.events(running, types="text")]
        assert "".join(texts) == "the running answer"
        assert pacer.waiting == 1 + len(burst)  # ...while every start still waits
        for conversation_id in burst:
            assert not [e for e in api.events(conversation_id, types="state")
                        if e["data"]["state"] == "running"]
        api.client.delete("/test/hold-starts")
    finally:
        gate.set()
        api.stop()
        api.store.close()
