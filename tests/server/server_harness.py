"""Harness: the REST app on real uvicorn (127.0.0.1, free port) over a real SQLite store.

The model is the scripted OpenAI-compatible server from ``desktop_agent.testing``;
the API is driven with httpx over real HTTP.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import uvicorn

from desktop_agent import RetryPolicy, tool
from desktop_agent.server import create_app
from desktop_agent.store import Store

MASTER_KEY = "test-master-key-0123456789abcdef"
WAIT = 15.0


@tool("get_weather", "The weather in a city.", {"city": str})
def get_weather(args: dict[str, Any]) -> str:
    return f"Sunny in {args['city']}"


def free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def start_serve(data_dir: Path, key: str, wait: float = 60.0,
                extra_env: dict[str, str] | None = None, extra_args: Sequence[str] = (),
                until: str = "/ready") -> tuple[subprocess.Popen[str], httpx.Client]:
    """A real ``desktop-agent serve`` process on ``data_dir`` and a client with ``key``.

    Returned once ``/ready`` answers 200, as a load balancer waits: ``/alive``
    answers before the API is built, and a replica whose first request waited
    for its build (seconds on a busy machine) let the other replica run a whole
    turn first, so a test of two replicas asked at once asked them one after
    the other. ``until="/alive"`` returns as soon as the port answers (several
    replicas then build at once; :func:`wait_ready` waits for each). ``extra_args``
    are added to its command line. The caller stops it with :func:`stop_serve`.
    """
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    env = {**os.environ, "DESKTOP_AGENT_DATA_DIR": str(data_dir),
           "DESKTOP_AGENT_MASTER_KEY": key, **(extra_env or {})}
    process = subprocess.Popen(
        [sys.executable, "-m", "desktop_agent", "serve", "--port", str(port),
         "--log-level", "warning", *extra_args],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=wait,
                          headers={"Authorization": f"Bearer {key}"})
    wait_ready(process, client, wait, until)
    return process, client


def wait_ready(process: subprocess.Popen[str], client: httpx.Client, wait: float = 60.0,
               until: str = "/ready") -> None:
    """Wait until the ``serve`` process answers 200 on ``until``; kill it if it never does."""
    deadline = time.monotonic() + wait
    while True:
        try:
            if client.get(until).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"serve did not start: {process.communicate()[1][-2000:]}")
        time.sleep(0.1)


def stop_serve(process: subprocess.Popen[str], client: httpx.Client) -> None:
    """Stop a process from :func:`start_serve` (SIGTERM, then SIGKILL if it lingers)."""
    client.close()
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(30)
    if process.stderr is not None:
        process.stderr.close()


@dataclass
class RunningApi:
    """A served app and a client that carries the key."""

    base_url: str
    client: httpx.Client
    store: Store
    database: Path
    workdirs: Path
    server: uvicorn.Server
    thread: threading.Thread
    responses: list[httpx.Response] = field(default_factory=list)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(20)
        self.client.close()

    # -- helpers used by many tests ------------------------------------------------
    def create(self, **settings: Any) -> dict[str, Any]:
        response = self.client.post("/conversations", json={"title": "API chat",
                                                             "settings": settings})
        assert response.status_code == 201, response.text
        return response.json()

    def workdir(self, conversation_id: str) -> Path:
        """The conversation's working folder, as the API reports it."""
        response = self.client.get(f"/conversations/{conversation_id}")
        assert response.status_code == 200, response.text
        return Path(response.json()["workdir"])

    def events(self, conversation_id: str, after: int = 0, **params: Any) -> list[dict[str, Any]]:
        collected: list[dict[str, Any]] = []
        while True:
            page = self.client.get(f"/conversations/{conversation_id}/events",
                                   params={"after": after, "limit": 1000, **params}).json()
            collected += page["events"]
            after = page["next_after"]
            if not page["has_more"]:
                return collected

    def wait_for_event(self, conversation_id: str,
                       predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            for event in self.events(conversation_id):
                if predicate(event):
                    return event
            time.sleep(0.02)
        raise AssertionError(f"no matching event in {WAIT} s: "
                             f"{json.dumps(self.events(conversation_id))[:2000]}")

    def wait_idle(self, conversation_id: str, after: int = 0) -> dict[str, Any]:
        return self.wait_for_event(conversation_id, lambda e: e["id"] > after
                                   and e["type"] == "state" and e["data"]["state"] == "idle")


@contextlib.contextmanager
def api_on_engine(engine: str, request: Any, tmp_path: Path,
                  add_routes: Callable[[Any], None] | None = None) -> Iterator[RunningApi]:
    """The app on SQLite (``"sqlite"``) or on a fresh PostgreSQL database.

    ``request`` is the fixture's ``pytest.FixtureRequest``: its ``postgres_url``
    fixture gives the database, asked for only when PostgreSQL is wanted.
    """
    store = None
    if engine == "postgresql":
        store = Store.open(request.getfixturevalue("postgres_url"))
    running = start_api(tmp_path, store, add_routes=add_routes)
    try:
        yield running
    finally:
        running.stop()
        running.store.close()


def start_api(tmp_path: Path, store: Store | None = None,
              add_routes: Callable[[Any], None] | None = None,
              **app_options: Any) -> RunningApi:
    """The app on real uvicorn; ``add_routes(app)`` may add routes a test needs first."""
    database = tmp_path / "conversations.sqlite3"
    store = store or Store.open(database)
    workdirs = tmp_path / "workdirs"
    app_options.setdefault("extra_tools", [get_weather])
    app_options.setdefault("callback_policy", RetryPolicy(max_retries=4, initial_delay=0.05,
                                                          max_delay=0.5, jitter=False))
    app_options.setdefault("callback_timeout", 5.0)
    app_options.setdefault("master_key", MASTER_KEY)
    app = create_app(store, workdirs_root=workdirs, **app_options)
    if add_routes is not None:
        add_routes(app)
    sock = free_socket()
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1,
                            lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    base_url = f"http://127.0.0.1:{port}"
    running = RunningApi(base_url, httpx.Client(base_url=base_url, timeout=WAIT), store,
                         database, workdirs, server, thread)
    headers = {"Authorization": f"Bearer {MASTER_KEY}"} if app_options["master_key"] else {}
    running.client = httpx.Client(
        base_url=base_url, timeout=WAIT, headers=headers,
        event_hooks={"response": [lambda r: (r.read(), running.responses.append(r))
                                  if not r.headers.get("content-type", "").startswith(
                                      "text/event-stream") else None]},
    )
    return running


class SseReader:
    """Reads Server-Sent Events from a streaming httpx response, one event at a time."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.iter_lines()

    def next_event(self) -> dict[str, Any]:
        fields: dict[str, str] = {}
        for line in self._lines:
            if line == "":
                if "data" in fields:
                    return {"id": int(fields["id"]), "event": fields.get("event"),
                            **json.loads(fields["data"])}
                fields = {}
                continue
            if line.startswith(":"):
                continue  # keep-alive comment
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value
        raise AssertionError("the event stream ended")

    def read_until(self, predicate: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        events = []
        while True:
            event = self.next_event()
            events.append(event)
            if predicate(event):
                return events


class OneConnection:
    """Requests over one socket; each answer's socket must be the first one."""

    def __init__(self, base_url: str) -> None:
        address = urlsplit(base_url)
        self._conn = http.client.HTTPConnection(address.hostname or "", address.port,
                                                timeout=30)
        self._sock: Any = None

    def ask(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, str], Any]:
        headers = {"Authorization": f"Bearer {MASTER_KEY}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        self._conn.request(method, path, body=data, headers=headers)
        answer = self._conn.getresponse()
        payload = answer.read()
        if self._sock is None:
            self._sock = self._conn.sock
        assert self._conn.sock is self._sock, f"{method} {path}: the connection was replaced"
        assert answer.getheader("connection") != "close", f"{method} {path} closed it"
        return answer.status, dict(answer.getheaders()), json.loads(payload) if payload else None

    def close(self) -> None:
        self._conn.close()
