"""The event log: pagination bounds, SSE with Last-Event-ID resume, survival of a restart."""

from __future__ import annotations

import json
import threading
import time

import httpx
from server_harness import MASTER_KEY, RunningApi, SseReader, start_api

from desktop_agent.server.routes import events as events_route
from desktop_agent.store import Store
from desktop_agent.store.event_table import LIVE_OUTPUT_TYPES
from desktop_agent.testing import script

WAIT_FOR_TEST = 60.0
"""How long the scripted server holds a gate at most, so a failing test ends."""


def _stream(api: RunningApi, cid: str, **headers: str):
    return httpx.stream("GET", f"{api.base_url}/conversations/{cid}/events/stream",
                        headers={"Authorization": f"Bearer {MASTER_KEY}", **headers},
                        timeout=15)


def _one_turn(api: RunningApi, model_server, cid: str, text: str, after: int = 0) -> dict:
    model_server.enqueue(script.text(text, pieces=len(text.split())))
    assert api.client.post(f"/conversations/{cid}/run", json={"message": "go"}).status_code == 202
    return api.wait_idle(cid, after=after)


def test_pages_cover_the_log_once_and_limit_is_bounded(api: RunningApi, model_server):
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
    _one_turn(api, model_server, cid, "one two three four five six seven")
    everything = api.events(cid)
    pages, after = [], 0
    while True:
        page = api.client.get(f"/conversations/{cid}/events",
                              params={"after": after, "limit": 3}).json()
        assert len(page["events"]) <= 3
        pages += page["events"]
        after = page["next_after"]
        if not page["has_more"]:
            break
    assert [e["id"] for e in pages] == [e["id"] for e in everything]
    for limit in (0, 1001, -5):
        answer = api.client.get(f"/conversations/{cid}/events", params={"limit": limit})
        assert answer.status_code == 422
        assert answer.json()["code"] == "invalid_request"
    only_text = api.events(cid, types="text")
    assert {e["type"] for e in only_text} == {"text"}
    assert "".join(e["data"]["text"] for e in only_text) == "one two three four five six seven"


def test_sse_resume_with_last_event_id_loses_and_repeats_nothing(api: RunningApi, model_server):
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
    first_idle = _one_turn(api, model_server, cid, "a b c d e f g h i j")
    logged = api.events(cid)

    with _stream(api, cid) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        reader = SseReader(response)
        seen = [reader.next_event() for _ in range(5)]
    assert [e["id"] for e in seen] == [1, 2, 3, 4, 5]
    assert seen == [{**e, "event": e["type"]} for e in logged[:5]]

    # Reconnect after event 5 while a second turn is still to come.
    with _stream(api, cid, **{"Last-Event-ID": "5"}) as response:
        reader = SseReader(response)
        caught_up = reader.read_until(lambda e: e["id"] == first_idle["id"])
        model_server.enqueue(script.text("live one two three", pieces=4))
        assert api.client.post(f"/conversations/{cid}/run",
                               json={"message": "again"}).status_code == 202
        live = reader.read_until(lambda e: e["type"] == "state" and e["data"]["state"] == "idle")
    ids = [e["id"] for e in seen + caught_up + live]
    assert ids == list(range(1, ids[-1] + 1)), "ids must be contiguous: no loss, no duplicates"
    assert "".join(e["data"]["text"] for e in live if e["type"] == "text") == "live one two three"
    # The retention rule: the first turn's live output went when the second started.
    kept = [e["id"] for e in seen + caught_up + live
            if e["id"] > first_idle["id"] or e["type"] not in LIVE_OUTPUT_TYPES]
    assert [e["id"] for e in api.events(cid)] == kept

    with _stream(api, cid) as response:
        pass
    with httpx.stream("GET", f"{api.base_url}/conversations/{cid}/events/stream",
                      params={"after": ids[-2]},
                      headers={"Authorization": f"Bearer {MASTER_KEY}"}, timeout=15) as response:
        assert SseReader(response).next_event()["id"] == ids[-1]
    bad = api.client.get(f"/conversations/{cid}/events/stream",
                         headers={"Last-Event-ID": "seven"})
    assert bad.status_code == 400


def test_events_survive_a_restart_and_ids_continue(tmp_path, data_dir, model_server):
    api = start_api(tmp_path)
    try:
        cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
        idle = _one_turn(api, model_server, cid, "before the restart")
        before = api.events(cid)
    finally:
        api.stop()
        api.store.close()
    assert before[-1]["id"] == idle["id"]

    again = start_api(tmp_path, store=Store.open(tmp_path / "conversations.sqlite3"))
    try:
        assert again.events(cid) == before
        _one_turn(again, model_server, cid, "after it", after=idle["id"])
        after = again.events(cid)
        # Of the first turn only its live output went, when the second started (the
        # retention rule); the second turn's ids continue right after the first's.
        kept = [e for e in before if e["type"] not in LIVE_OUTPUT_TYPES]
        assert after[:len(kept)] == kept
        second = [e["id"] for e in after[len(kept):]]
        assert second == list(range(idle["id"] + 1, idle["id"] + 1 + len(second)))
    finally:
        again.stop()
        again.store.close()


def test_an_idle_stream_gets_keep_alive_comments_and_ends_when_the_client_leaves(
        api: RunningApi, model_server, monkeypatch):
    """Proxies drop silent connections: an idle stream sends a comment line now and
    then (which EventSource clients ignore); a client that leaves ends the server's
    follower instead of leaving it waiting for events forever."""
    monkeypatch.setattr(events_route, "KEEPALIVE_SECONDS", 0.2)
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
    services = api.server.config.app.state.services  # type: ignore[attr-defined]
    with _stream(api, cid) as response:
        assert response.headers["cache-control"] == "no-store"
        reader = SseReader(response)
        lines = reader._lines
        assert next(lines) == ": keep-alive"
        assert next(lines) == ""
        assert next(lines) == ": keep-alive"
        _one_turn(api, model_server, cid, "still here")
        text = reader.read_until(lambda e: e["type"] == "state" and e["data"]["state"] == "idle")
        assert "".join(e["data"]["text"] for e in text if e["type"] == "text") == "still here"
    deadline = time.monotonic() + 5
    while cid in services.events._waiters and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cid not in services.events._waiters, "the follower outlived its client"


def test_pieces_read_together_reach_sse_as_fewer_events_and_a_lone_piece_alone(
        api: RunningApi, model_server):
    """A busy server reads many of a reply's pieces in one socket read: they go out as
    fewer, longer text events, every consumer still gets the same text in the same
    order, and a piece that arrives alone is never held back to wait for others."""
    words = [f"w{n} " for n in range(120)]
    f = script.ChunkFactory()
    burst = b"".join(b"data: " + json.dumps(f.delta({"content": word}).data).encode() + b"\n\n"
                     for word in words)
    lone_may_come = threading.Event()
    model_server.enqueue(script.Script([
        f.delta({"role": "assistant", "content": ""}),
        script.Raw(burst),  # one write: the pieces reach the server's socket together
        script.Gate(lone_may_come, timeout=WAIT_FOR_TEST),
        f.delta({"content": "end."}),
        f.finish("stop"), f.usage(None, len(words) + 1), script.DONE]))
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
    with _stream(api, cid) as response:
        reader = SseReader(response)
        assert api.client.post(f"/conversations/{cid}/run", json={"message": "go"}).status_code \
            == 202
        before_gate = reader.read_until(
            lambda e: e["type"] == "text" and e["data"]["text"].endswith("w119 "))
        lone_may_come.set()
        after_gate = reader.read_until(
            lambda e: e["type"] == "state" and e["data"]["state"] == "idle")
    burst_texts = [e["data"]["text"] for e in before_gate if e["type"] == "text"]
    assert "".join(burst_texts) == "".join(words)
    assert len(burst_texts) < len(words)
    assert [e["data"]["text"] for e in after_gate if e["type"] == "text"] == ["end."]
    reply = "".join(words) + "end."
    assert "".join(e["data"]["text"] for e in api.events(cid, types="text")) == reply
    stored = api.client.get(f"/conversations/{cid}/messages").json()["messages"]
    assert [m["message"]["content"] for m in stored if m["role"] == "assistant"] == [reply]
