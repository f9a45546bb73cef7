"""A turn whose reply streams is not held behind a burst of turns starting.

The start pacer makes turns asked for together take turns (see
``desktop_agent.server.start_pacer``). A turn whose request is already sent
is no longer starting: its reply's steps (its first write, its end) must not
queue behind the starts, or its pieces wait unread until every start before
them ran. Here the pacer's spacing is made so long that a queued start waits
for many seconds: the running turn must end while the burst still waits.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_harness import MASTER_KEY, WAIT, start_api

from desktop_agent.server import start_pacer
from desktop_agent.testing import script


def _ask_without_waiting(base_url: str, conversation_id: str) -> threading.Thread:
    """``POST /run`` from a thread of its own; its answer comes whenever the pacer lets it."""

    def ask() -> None:
        # HTTPError: the server stopped at the test's end with the start still queued.
        with contextlib.suppress(httpx.HTTPError):
            httpx.post(f"{base_url}/conversations/{conversation_id}/run",
                       json={"message": "start"}, timeout=WAIT * 4,
                       headers={"Authorization": f"Bearer {MASTER_KEY}"})

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    return thread


def test_a_streaming_reply_ends_while_a_burst_of_starts_still_waits(
        tmp_path: Path, model_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(start_pacer, "STREAM_SHARE", 100_000.0)  # a queued start: minutes
    api = start_api(tmp_path)
    try:
        services = api.server.config.app.state.services
        running = api.create(base_url=model_server.base_url, model="test-model")["id"]
        burst = [api.create(base_url=model_server.base_url, model="test-model")["id"]
                 for _ in range(3)]
        gate = threading.Event()
        reply = script.text("the running answer", pieces=3)
        reply.steps.insert(1, script.Gate(gate, timeout=WAIT * 4))  # after the reply's head
        model_server.enqueue(reply)

        assert api.client.post(f"/conversations/{running}/run",
                               json={"message": "hello"}).status_code == 202
        deadline = time.monotonic() + WAIT
        while not model_server.requests:  # its request is sent: the turn no longer starts
            assert time.monotonic() < deadline, "the running turn never asked the model"
            time.sleep(0.01)

        for conversation_id in burst:
            _ask_without_waiting(api.base_url, conversation_id)
        deadline = time.monotonic() + WAIT
        while services.pacer.waiting < 2:  # the burst queues at the pacer
            assert time.monotonic() < deadline, "the burst never queued"
            time.sleep(0.01)

        gate.set()  # the running turn's reply comes: its first write, its pieces, its end
        api.wait_idle(running)

        texts = [e["data"]["text"] for e in api.events(running, types="text")]
        assert "".join(texts) == "the running answer"
        assert services.pacer.waiting >= 1  # ...while starts asked for before it still wait
    finally:
        gate.set()
        api.stop()
        api.store.close()
