"""Harness: several real ``desktop-agent serve`` replicas on one real PostgreSQL database.

Each replica is its own process with ``DESKTOP_AGENT_DATABASE_URL`` pointing at the
test's fresh database (the ``postgres_url`` fixture) and the one key that seals
secrets (``DESKTOP_AGENT_SECRET_KEY``), on one data folder, and all are given the
same folder for working folders (``--workdirs``), as a deployment mounts one shared
volume on every replica. The tests in
``test_postgres_replica*.py`` drive them over real HTTP.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from server_harness import start_serve, stop_serve, wait_ready

from desktop_agent.appdata.secret_cipher import SECRET_KEY_VARIABLE, new_secret_key
from desktop_agent.testing import ScriptedServer

KEY = "replicas-key-0123456789abcdef0123"
SECRET_KEY = new_secret_key()
"""The key that seals secrets in the database, given to every replica."""
WAIT = 60.0

Replica = tuple[Any, httpx.Client]
"""A replica's process (``subprocess.Popen``) and a client carrying the key."""


def shared_workdirs(data_dir: Path) -> Path:
    """The folder the replicas share for working folders (outside the data folder)."""
    return data_dir.parent / "shared-workdirs"


@contextmanager
def running_replicas(data_dir: Path, postgres_url: str,
                     count: int = 3) -> Iterator[list[Replica]]:
    """``count`` ``serve`` processes on one database and one :func:`shared_workdirs`."""
    env = {"DESKTOP_AGENT_DATABASE_URL": postgres_url, SECRET_KEY_VARIABLE: SECRET_KEY}
    folder = str(shared_workdirs(data_dir))
    started: list[Replica] = []
    try:
        for _ in range(count):  # launched together: they build their APIs at once
            started.append(start_serve(data_dir, KEY, WAIT, extra_env=env,
                                       extra_args=("--workdirs", folder), until="/alive"))
        for process, client in started:
            wait_ready(process, client, WAIT)
        yield started
    finally:
        for process, client in started:
            stop_serve(process, client)  # also the one a test killed: closes its pipe


def create_conversation(client: httpx.Client, model_server: ScriptedServer,
                        **settings: Any) -> str:
    """A conversation on the scripted model, made through ``client``; its id."""
    made = client.post("/conversations", json={"title": "shared", "settings": {
        "base_url": model_server.base_url, "model": "test-model", **settings}})
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def all_events(client: httpx.Client, cid: str, after: int = 0) -> list[dict[str, Any]]:
    """Every event of the conversation after ``after``, paged through ``client``."""
    collected: list[dict[str, Any]] = []
    while True:
        page = client.get(f"/conversations/{cid}/events",
                          params={"after": after, "limit": 1000}).json()
        collected += page["events"]
        after = page["next_after"]
        if not page["has_more"]:
            return collected


def wait_idle(client: httpx.Client, cid: str, turns: int = 1) -> list[dict[str, Any]]:
    """The events once ``turns`` turns have ended (``state: idle``)."""
    deadline = time.monotonic() + WAIT
    while True:
        events = all_events(client, cid)
        if sum(e["type"] == "state" and e["data"].get("state") == "idle"
               for e in events) >= turns:
            return events
        assert time.monotonic() < deadline, events[-5:]
        time.sleep(0.05)


class Follower(threading.Thread):
    """Reads a replica's SSE stream, noting when each event arrived, until ``until``.

    Without ``until`` it stops at the first ``state: idle`` event.
    """

    def __init__(self, client: httpx.Client, cid: str, headers: dict[str, str] | None = None,
                 until: int | None = None) -> None:
        super().__init__(daemon=True)
        self.client, self.cid, self.headers, self.until = client, cid, headers or {}, until
        self.connected = threading.Event()
        self.arrivals: list[tuple[float, dict[str, Any]]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.client.stream("GET", f"/conversations/{self.cid}/events/stream",
                                    headers=self.headers, timeout=WAIT) as response:
                assert response.status_code == 200
                self.connected.set()
                for line in response.iter_lines():
                    if not line.startswith("data: "):
                        continue
                    event = json.loads(line[len("data: "):])
                    self.arrivals.append((time.monotonic(), event))
                    if self.until is not None and event["id"] >= self.until:
                        return
                    if self.until is None and event["type"] == "state" \
                            and event["data"].get("state") == "idle":
                        return
        except BaseException as exc:  # reported by the test, not lost in the thread
            self.error = exc
            self.connected.set()

    def seen(self) -> list[dict[str, Any]]:
        """The events read so far."""
        return [event for _, event in list(self.arrivals)]

    def wait_for(self, event_type: str) -> dict[str, Any]:
        """The first event of ``event_type`` this stream delivered (waits for it)."""
        deadline = time.monotonic() + WAIT
        while True:
            found = next((e for e in self.seen() if e["type"] == event_type), None)
            if found is not None:
                return found
            assert self.error is None, self.error
            assert time.monotonic() < deadline, self.seen()[-5:]
            time.sleep(0.02)
