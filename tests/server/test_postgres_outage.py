"""The database stopped mid-run: 503 with Retry-After, a readiness route that says so, recovery.

A private PostgreSQL cluster of this module's own (stopping the session's
would stop every other test's database) serves the app on real uvicorn; the
test stops the server (``pg_ctl stop``: its sessions end, as in a restart or a
crash), asks every kind of route over one kept-alive connection, starts the
server again on the same port and waits for the app to be ready again.
Before, every route answered a generic 500 "see its log" and ``/ready`` did
not exist, so a load balancer kept sending requests to a replica that could
not serve them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres.postgres_cluster import PostgresCluster, PostgresUnavailable, start_cluster
from server_harness import OneConnection, RunningApi, start_api
from tier_policy import part_missing, require_module

from desktop_agent.store import Store

#: Seconds the app may take to be ready once the database is back (its pool reconnects
#: on the next call; the bound only stops a broken build from hanging the run).
RECOVERY = 120.0


@pytest.fixture
def cluster() -> Iterator[PostgresCluster]:
    require_module("psycopg", "pip install -e '.[test]'")
    try:
        started = start_cluster()
    except PostgresUnavailable as exc:
        part_missing(str(exc))
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def on_postgres(cluster: PostgresCluster, tmp_path: Path,
                data_dir: Path) -> Iterator[RunningApi]:
    running = start_api(tmp_path, Store.open(cluster.create_database()))
    try:
        yield running
    finally:
        running.stop()
        running.store.close()


def test_a_stopped_database_is_a_503_with_retry_after_until_it_is_back(
        cluster: PostgresCluster, on_postgres: RunningApi) -> None:
    one = OneConnection(on_postgres.base_url)
    try:
        status, _headers, made = one.ask("POST", "/conversations", {"title": "before"})
        assert status == 201, made
        cid = made["id"]

        cluster.pause()
        try:
            for method, path, body in (("GET", "/conversations", None),
                                       ("GET", f"/conversations/{cid}", None),
                                       ("GET", f"/conversations/{cid}/messages", None),
                                       ("POST", "/conversations", {"title": "during"}),
                                       ("GET", "/conversations", None)):
                status, headers, answer = one.ask(method, path, body)
                assert status == 503, (method, path, status, answer)
                assert answer == {"error": "The database is unavailable; try again in a few "
                                           "seconds.", "code": "database_unavailable"}
                assert int(headers["retry-after"]) > 0
            status, headers, answer = one.ask("GET", "/ready")
            assert status == 503 and int(headers["retry-after"]) > 0
            assert answer["status"] == "unavailable" and answer["database"] == "unavailable"
            assert "database is unavailable" in answer["error"]
            status, headers, _empty = one.ask("HEAD", "/ready")  # as some load balancers ask
            assert status == 503 and int(headers["retry-after"]) > 0
            # the process itself is alive: a liveness probe must not restart it
            assert one.ask("GET", "/alive")[:1] == (200,)
        finally:
            cluster.resume()

        deadline = time.monotonic() + RECOVERY
        while one.ask("GET", "/ready")[0] != 200:
            assert time.monotonic() < deadline, "not ready again after the database came back"
            time.sleep(0.2)
        status, _headers, listed = one.ask("GET", "/conversations")
        assert status == 200 and [c["title"] for c in listed["conversations"]] == ["before"]
        status, _headers, made = one.ask("POST", "/conversations", {"title": "after"})
        assert status == 201, made
    finally:
        one.close()
