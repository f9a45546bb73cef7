"""The events' retention rule: a turn's live output goes when the next turn starts.

Real turns through ``serve`` on SQLite and on PostgreSQL: a reply streamed in many
pieces after a real ``bash`` command that prints thousands of lines. Once the next
turn starts, the first turn's deltas and command output are gone from the database,
and yet the conversation reads the same: its messages, and a follower replaying the
stream from the start, who still gets every message and tool result whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_harness import MASTER_KEY, RunningApi, SseReader, api_on_engine

from desktop_agent.store.event_table import LIVE_OUTPUT_TYPES, event_data
from desktop_agent.testing import ScriptedServer, script

LINE = "Some *markdown* with `code` in it, streamed one small piece at a time. "
REPLY = LINE * 120
COMMAND = "seq 1 3000 | sed 's/^/output line /'"


@pytest.fixture(params=["sqlite", "postgresql"])
def engine_api(request: pytest.FixtureRequest, tmp_path: Path,
               data_dir: Path) -> Iterator[RunningApi]:
    """The app on SQLite, then on a fresh PostgreSQL database."""
    with api_on_engine(request.param, request, tmp_path) as running:
        yield running


def _events_held(api: RunningApi, cid: str) -> tuple[int, int]:
    """Rows and characters of event data the database holds for the conversation."""
    with api.store._reading() as conn:
        rows = conn.execute("SELECT data FROM events WHERE conversation_id = ?",
                            (cid,)).fetchall()
    return len(rows), sum(len(event_data(row[0])) for row in rows)


def _pages_in_use(api: RunningApi) -> int | None:
    """SQLite: pages of the database file holding data (None on PostgreSQL)."""
    if api.store.engine != "sqlite":
        return None
    with api.store._reading() as conn:
        pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
        free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    return pages - free


def _replay(api: RunningApi, cid: str, until_id: int) -> list[dict[str, Any]]:
    """What a follower that connects now reads from the start, up to ``until_id``."""
    with httpx.stream("GET", f"{api.base_url}/conversations/{cid}/events/stream",
                      headers={"Authorization": f"Bearer {MASTER_KEY}"},
                      timeout=30) as response:
        return SseReader(response).read_until(lambda e: e["id"] >= until_id)


def test_a_turns_live_output_goes_when_the_next_starts_and_nothing_reads_differently(
        engine_api: RunningApi, model_server: ScriptedServer) -> None:
    api = engine_api
    cid = api.create(base_url=model_server.base_url, model="test-model", tools=["bash"],
                     confirm_tools=False)["id"]
    model_server.enqueue(script.tool_calls([("bash", {"command": COMMAND})], ids=["c1"]),
                         script.text(REPLY, pieces=400))
    assert api.client.post(f"/conversations/{cid}/run",
                           json={"message": "count"}).status_code == 202
    first_idle = api.wait_idle(cid)
    first = api.events(cid)
    messages = api.client.get(f"/conversations/{cid}/messages").json()["messages"]
    live = [e for e in first if e["type"] in LIVE_OUTPUT_TYPES]
    assert "".join(e["data"]["text"] for e in live if e["type"] == "text") == REPLY
    assert any(e["type"] == "tool_output" for e in live)
    rows_before, chars_before = _events_held(api, cid)
    pages_before = _pages_in_use(api)

    model_server.enqueue(script.text("second answer", pieces=2))
    assert api.client.post(f"/conversations/{cid}/run",
                           json={"message": "again"}).status_code == 202
    second_idle = api.wait_idle(cid, after=first_idle["id"])

    # The first turn's live output went; everything else of it reads as before.
    after = api.events(cid)
    kept_first = [e for e in first if e["type"] not in LIVE_OUTPUT_TYPES]
    assert [e for e in after if e["id"] <= first_idle["id"]] == kept_first
    # The latest turn's live output stays whole until a turn after it starts.
    second = [e for e in after if e["id"] > first_idle["id"]]
    assert "".join(e["data"]["text"] for e in second if e["type"] == "text") == "second answer"
    # What the deltas and the command output said is in the message and result events.
    [reply] = [e for e in kept_first if e["type"] == "message"
               and e["data"]["role"] == "assistant" and e["data"]["message"].get("content")]
    assert reply["data"]["message"]["content"] == REPLY
    [result] = [e["data"] for e in kept_first if e["type"] == "tool_result"]
    assert "stdout:\noutput line 1\noutput line 2\n" in result["content"]
    assert api.client.get(f"/conversations/{cid}/messages").json()["messages"][
        :len(messages)] == messages

    # A follower replaying from 0 reads the same pruned log, in order, to the end.
    replayed = _replay(api, cid, second_idle["id"])
    assert [{k: v for k, v in e.items() if k != "event"} for e in replayed] == after

    # And the database holds less: the rows of the live output, and (SQLite) their pages.
    rows_after, chars_after = _events_held(api, cid)
    second_chars = sum(len(str(e["data"])) for e in second)
    assert rows_after == rows_before - len(live) + len(second)
    assert chars_after < chars_before - len(REPLY) + second_chars
    pages_after = _pages_in_use(api)
    if pages_before is not None:
        assert pages_after is not None and pages_after < pages_before
