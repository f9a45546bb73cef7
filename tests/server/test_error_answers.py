"""Errors are sentences, and none costs the client its kept-alive connection (issue 47).

Over one real HTTP connection (``http.client`` keeps exactly one socket, so a
connection the server closed shows as a new socket or a reset): an error no
route expected, a NUL character in a title or a search, and a message holding
one, on SQLite and on a real PostgreSQL. Before, PostgreSQL answered the NUL
with a 500 and uvicorn then closed the connection, so the client's next
request on it was reset.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_harness import OneConnection, RunningApi, api_on_engine


def _boom(app: Any) -> None:
    @app.get("/test-only/boom")
    async def boom() -> None:
        raise RuntimeError("a bug no handler expected")


@pytest.fixture(params=["sqlite", "postgresql"])
def engine_api(request: pytest.FixtureRequest, tmp_path: Path,
               data_dir: Path) -> Iterator[RunningApi]:
    """The app on SQLite, then on a fresh PostgreSQL database."""
    with api_on_engine(request.param, request, tmp_path, add_routes=_boom) as running:
        yield running


@pytest.fixture
def one(engine_api: RunningApi) -> Iterator[OneConnection]:
    connection = OneConnection(engine_api.base_url)
    try:
        yield connection
    finally:
        connection.close()


def test_an_unexpected_error_is_a_sentence_and_the_connection_serves_on(
        one: OneConnection) -> None:
    status, _headers, body = one.ask("GET", "/test-only/boom")
    assert status == 500
    assert body == {"error": "The server hit an unexpected error; see its log.",
                    "code": "internal_error"}
    for _ in range(3):  # the same socket, again and again
        assert one.ask("GET", "/conversations")[0] == 200
        assert one.ask("GET", "/test-only/boom")[0] == 500


def test_a_nul_in_a_title_or_a_search_is_a_422_sentence_on_both_engines(
        one: OneConnection) -> None:
    status, _headers, body = one.ask("POST", "/conversations", {"title": "bad\u0000title"})
    assert status == 422 and "NUL character" in body["error"], body
    status, _headers, made = one.ask("POST", "/conversations", {"title": "fine"})
    assert status == 201, made
    cid = made["id"]
    status, _headers, body = one.ask("PATCH", f"/conversations/{cid}",
                                     {"title": "also\u0000bad"})
    assert status == 422 and "NUL character" in body["error"], body
    status, _headers, body = one.ask("GET", "/conversations?query=fi%00ne")
    assert status == 422 and "NUL character" in body["error"], body
    status, _headers, body = one.ask("GET", "/conversations?query=fine")
    assert status == 200 and [c["title"] for c in body["conversations"]] == ["fine"]
    # a message may hold one: kept as it was written, and found by its words
    status, _headers, body = one.ask("POST", f"/conversations/{cid}/messages",
                                     {"content": "binary\u0000output here"})
    assert status == 201, body
    status, _headers, body = one.ask("GET", f"/conversations/{cid}/messages")
    assert status == 200
    assert body["messages"][-1]["message"]["content"] == "binary\u0000output here"
    status, _headers, body = one.ask("GET", "/conversations?query=output")
    assert status == 200 and [c["id"] for c in body["conversations"]] == [cid]
