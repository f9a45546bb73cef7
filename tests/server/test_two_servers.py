"""Two ``desktop-agent serve`` processes on one data folder, over real HTTP.

Before the event log moved into the store, each process numbered a
conversation's events from its own memory and the two overwrote half of each
other's events. Now ids come from the database: whichever server a client
asks, it reads the same events, none lost, none twice.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from replica_harness import all_events
from server_harness import start_serve, stop_serve

from desktop_agent.testing import ScriptedServer, script

KEY = "two-servers-key-0123456789abcdef"
WAIT = 60.0


@pytest.fixture
def two_servers(data_dir: Path) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    started = [start_serve(data_dir, KEY, WAIT) for _ in range(2)]
    try:
        yield started[0][1], started[1][1]
    finally:
        for process, client in started:
            stop_serve(process, client)


@pytest.mark.slow
def test_two_servers_on_one_folder_lose_no_event(two_servers, model_server: ScriptedServer):
    a, b = two_servers
    model_server.enqueue(script.text(" ".join(f"w{n}" for n in range(60)), delay=0.01))
    made = a.post("/conversations", json={"title": "shared", "settings": {
        "base_url": model_server.base_url, "model": "test-model"}})
    assert made.status_code == 201, made.text
    cid = made.json()["id"]

    assert a.post(f"/conversations/{cid}/run", json={"message": "hi"}).status_code == 202
    # While server A streams the turn's events, server B writes events of its own.
    for n in range(20):
        changed = b.patch(f"/conversations/{cid}", json={"title": f"renamed {n}"})
        assert changed.status_code == 200, changed.text
    deadline = time.monotonic() + WAIT
    while not any(e["type"] == "state" and e["data"].get("state") == "idle"
                  for e in all_events(b, cid)):
        assert time.monotonic() < deadline, all_events(b, cid)[-5:]
        time.sleep(0.05)

    seen_by_a, seen_by_b = all_events(a, cid), all_events(b, cid)
    assert seen_by_a == seen_by_b
    assert [e["id"] for e in seen_by_a] == list(range(1, len(seen_by_a) + 1))
    assert sum(e["type"] == "settings" for e in seen_by_a) == 20
    text = "".join(e["data"]["text"] for e in seen_by_a if e["type"] == "text")
    assert text == " ".join(f"w{n}" for n in range(60))
