"""``serve`` answers ``/alive`` at once and the rest of the API once it is built.

The real StartingApp on real uvicorn over real HTTP, around the real app: its
build is held back (as a slow machine would hold it) to see what a client
meets meanwhile; then the real ``serve`` command, whose path to ``/alive``
must not load FastAPI, the openai SDK or the routes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from server_harness import MASTER_KEY, WAIT, free_socket, start_serve, stop_serve

from desktop_agent.server import create_app
from desktop_agent.server.starting_app import StartingApp
from desktop_agent.store import Store


class Served:
    """A StartingApp on uvicorn in a thread, and a client for it."""

    def __init__(self, app: StartingApp) -> None:
        sock = free_socket()
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.app = app
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning",
                                                    timeout_graceful_shutdown=1))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]},
                                       daemon=True)
        self.thread.start()
        deadline = time.monotonic() + WAIT
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "uvicorn did not start"
            time.sleep(0.01)
        self.client = httpx.Client(base_url=self.url, timeout=WAIT,
                                   headers={"Authorization": f"Bearer {MASTER_KEY}"})

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(WAIT)
        self.client.close()


@pytest.fixture
def serve_held(tmp_path: Path) -> Iterator[tuple[Served, threading.Event, Store]]:
    """The real app behind a StartingApp whose build waits for the test to release it."""
    store = Store.open(tmp_path / "conversations.sqlite3")
    release = threading.Event()

    def build() -> Any:
        assert release.wait(WAIT), "the test never released the build"
        return create_app(store, master_key=MASTER_KEY, workdirs_root=tmp_path / "workdirs")

    served = Served(StartingApp(build, master_key=MASTER_KEY))
    try:
        yield served, release, store
    finally:
        release.set()
        served.stop()
        store.close()


def _in_thread(call: Callable[[], httpx.Response]) -> tuple[threading.Thread, list[Any]]:
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.append(call()), daemon=True)
    thread.start()
    return thread, answers


def test_alive_answers_while_the_app_is_built_and_other_routes_wait_for_it(
        serve_held: tuple[Served, threading.Event, Store]) -> None:
    served, release, store = serve_held
    early = served.client.get("/alive")
    assert early.status_code == 200
    assert not served.app.ready
    # a load balancer's readiness probe is told at once, without a key, that it is not yet
    with httpx.Client(base_url=served.url, timeout=WAIT) as anonymous:
        starting = anonymous.get("/ready")
        assert anonymous.head("/ready").status_code == 503  # a probe may ask with HEAD
        assert anonymous.head("/alive").status_code == 200
    assert starting.status_code == 503 and int(starting.headers["retry-after"]) > 0
    assert starting.json() == {"status": "starting", "database": None,
                               "error": "The server is still starting."}

    store.create_conversation(title="Made before the API was ready")
    waiting, answers = _in_thread(lambda: served.client.get("/conversations"))
    waiting.join(0.5)
    assert waiting.is_alive() and not answers  # held, not refused nor answered 404

    release.set()
    waiting.join(WAIT)
    assert answers and answers[0].status_code == 200
    assert [c["title"] for c in answers[0].json()["conversations"]] == [
        "Made before the API was ready"]
    assert served.app.ready
    assert served.client.get("/conversations", headers={"Authorization": "Bearer wrong"}
                             ).status_code == 401  # the real app's own guard from now on
    # The early answer is the real app's, word for word (discovery reads its "service").
    later = served.client.get("/alive")
    assert early.json() == later.json() == {"status": "ok", "service": "desktop-agent"}
    assert early.headers["content-type"] == later.headers["content-type"]
    ready = served.client.get("/ready")
    assert ready.status_code == 200 and ready.json() == {"status": "ready", "database": "ok",
                                                         "error": None}
    # HEAD answers as before the build, now from the real app (not 405)
    assert served.client.head("/ready").status_code == 200
    assert served.client.head("/alive").status_code == 200


def test_reads_answer_before_the_warm_up_and_requests_that_may_start_a_turn_wait_for_it(
        tmp_path: Path) -> None:
    store = Store.open(tmp_path / "conversations.sqlite3")
    warmed = threading.Event()

    def build() -> Any:
        return create_app(store, master_key=MASTER_KEY, workdirs_root=tmp_path / "workdirs")

    served = Served(StartingApp(build, master_key=MASTER_KEY,
                                warm_up=lambda: warmed.wait(WAIT) and None))
    try:
        store.create_conversation(title="Listed before the warm-up")
        listed = served.client.get("/conversations")  # a read: the API answers it already
        assert listed.status_code == 200
        assert [c["title"] for c in listed.json()["conversations"]] == [
            "Listed before the warm-up"]
        creating, answers = _in_thread(lambda: served.client.post(
            "/conversations", json={"title": "Made after the warm-up"}))
        creating.join(0.5)
        assert creating.is_alive() and not answers  # held until the turn's modules are loaded
        warmed.set()
        creating.join(WAIT)
        assert answers and answers[0].status_code == 201
        assert answers[0].json()["title"] == "Made after the warm-up"
    finally:
        warmed.set()
        served.stop()
        store.close()


def test_a_failed_warm_up_only_costs_time(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "conversations.sqlite3")

    def build() -> Any:
        return create_app(store, master_key=MASTER_KEY, workdirs_root=tmp_path / "workdirs")

    def warm_up() -> None:
        raise ImportError("a module of the turn is missing")

    served = Served(StartingApp(build, master_key=MASTER_KEY, warm_up=warm_up))
    try:
        made = served.client.post("/conversations", json={"title": "Still served"})
        assert made.status_code == 201 and made.json()["title"] == "Still served"
        assert not served.app.failed
    finally:
        served.stop()
        store.close()


def test_the_early_alive_keeps_the_host_check_of_a_server_without_a_key(
        tmp_path: Path) -> None:
    release = threading.Event()
    store = Store.open(tmp_path / "conversations.sqlite3")

    def build() -> Any:
        release.wait(WAIT)
        return create_app(store, master_key=None, workdirs_root=tmp_path / "workdirs")

    served = Served(StartingApp(build, master_key=None))
    try:
        assert served.client.get("/alive").status_code == 200  # 127.0.0.1: this machine
        foreign = served.client.get("/alive", headers={"Host": "attacker.example"})
        assert foreign.status_code == 400 and foreign.json()["code"] == "bad_host"
    finally:
        release.set()
        served.stop()
        store.close()


def test_a_failed_build_is_a_503_sentence_and_stops_the_server(tmp_path: Path) -> None:
    stopped = threading.Event()

    def build() -> Any:
        raise OSError("the data folder is read-only")

    served = Served(StartingApp(build, master_key=MASTER_KEY, on_failure=stopped.set))
    try:
        assert stopped.wait(WAIT)
        answer = served.client.get("/conversations")
        assert answer.status_code == 503
        assert answer.json() == {"error": "The server could not start: the data folder is "
                                          "read-only", "code": "not_started"}
        assert served.app.failed
    finally:
        served.stop()


def test_the_serve_command_loads_no_fastapi_openai_or_routes_before_alive() -> None:
    # What run_serve imports before uvicorn opens the port: the command, its checks,
    # the store it opens and the app that answers /alive.
    probe = (
        "import sys, json\n"
        "import uvicorn\n"
        "from desktop_agent.server import cli_command, startup_checks, starting_app\n"
        "from desktop_agent.store import Store\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('fastapi', 'openai', 'aiohttp', 'pydantic', 'mcp', 'tiktoken') "
        "or m.startswith('desktop_agent.server.routes') or m == 'desktop_agent.server.app')))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert json.loads(result.stdout) == []


def test_the_serve_command_answers_alive_then_the_api(data_dir: Path) -> None:
    process, client = start_serve(data_dir, MASTER_KEY)
    try:
        assert client.get("/alive").json() == {"status": "ok", "service": "desktop-agent"}
        assert client.get("/conversations").status_code == 200
    finally:
        stop_serve(process, client)
