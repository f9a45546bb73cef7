"""Tool approvals across three real ``serve`` replicas on one real PostgreSQL database.

The issue's "create on A, run on B, stream on C, approve on A": the turn runs on B
and waits for a person; C's stream shows the question, A lists it and answers it
(allowed with edited input, then rejected), and the call runs on B as A said, or not
at all. A question is answered once whichever replicas are asked, and a question
whose replica was killed stops being listed or answerable.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from replica_harness import (
    WAIT,
    Follower,
    Replica,
    all_events,
    create_conversation,
    running_replicas,
    wait_idle,
)

from desktop_agent.store.event_table import LIVE_OUTPUT_TYPES
from desktop_agent.testing import ScriptedServer, script


@pytest.fixture
def replicas(data_dir: Path, postgres_url: str) -> Iterator[list[Replica]]:
    """Three ``serve`` processes on one database."""
    with running_replicas(data_dir, postgres_url) as started:
        yield started


def _approvals(client: httpx.Client, cid: str) -> list[dict[str, Any]]:
    response = client.get(f"/conversations/{cid}/approvals")
    assert response.status_code == 200, response.text
    return list(response.json()["approvals"])


def _asked_on_c(c: httpx.Client, b: httpx.Client, cid: str, message: str,
                after: int) -> dict[str, Any]:
    """Run a turn on B while C streams; the ``approval_requested`` event C saw live."""
    follower = Follower(c, cid, headers={"Last-Event-ID": str(after)} if after else None)
    follower.start()
    assert follower.connected.wait(WAIT) and follower.error is None, follower.error
    assert b.post(f"/conversations/{cid}/run", json={"message": message}).status_code == 202
    asked = follower.wait_for("approval_requested")
    assert not any(e["type"] == "tool_result" for e in follower.seen())  # still waiting
    return asked


@pytest.mark.slow
def test_a_turn_on_b_asks_c_streams_the_question_and_a_answers_it(
    replicas: list[Replica], model_server: ScriptedServer,
) -> None:
    (_, a), (_, b), (_, c) = replicas
    model_server.enqueue(
        script.tool_calls([("write_file", {"path": "note.txt", "content": "model's words"})]),
        script.text("Written."),
        script.tool_calls([("write_file", {"path": "other.txt", "content": "no"})]),
        script.text("Left alone."))
    cid = create_conversation(a, model_server, tools=["write_file"])
    assert a.get(f"/conversations/{cid}").json()["confirm_tools"] is True
    workdir = Path(a.get(f"/conversations/{cid}").json()["workdir"])

    asked = _asked_on_c(c, b, cid, "write a note", after=0)
    call_id = asked["data"]["tool_use_id"]
    assert asked["data"]["tool_name"] == "write_file"
    assert asked["data"]["diff"]["path"] == "note.txt"
    # Every replica lists it, the one running the turn and the others alike, and says
    # the conversation waits for an answer.
    for client in (a, b, c):
        listed = _approvals(client, cid)
        assert [(q["tool_use_id"], q["input"]) for q in listed] == [
            (call_id, {"path": "note.txt", "content": "model's words"})]
        shown = client.get(f"/conversations/{cid}").json()
        assert (shown["state"], shown["pending_approvals"]) == ("waiting_approval", 1)
    assert not (workdir / "note.txt").exists()

    approved = a.post(f"/conversations/{cid}/approvals/{call_id}/approve",
                      json={"input": {"path": "note.txt", "content": "edited on A"}})
    assert approved.status_code == 200, approved.text
    assert approved.json() == {"tool_use_id": call_id, "decision": "approved"}
    # Answered once: a second answer, on any replica, finds no question (as on one server).
    for client, verb in ((c, "approve"), (b, "reject"), (a, "approve")):
        again = client.post(f"/conversations/{cid}/approvals/{call_id}/{verb}")
        assert again.status_code == 404, again.text
    first = wait_idle(c, cid)
    assert (workdir / "note.txt").read_text() == "edited on A"  # B ran the edited call
    resolved = [e["data"] for e in first if e["type"] == "approval_resolved"]
    assert resolved == [{"tool_use_id": call_id, "decision": "allow_once", "edited": True,
                         "input": {"path": "note.txt", "content": "edited on A"}}]
    result = next(e["data"] for e in first if e["type"] == "tool_result")
    assert result["input"] == {"path": "note.txt", "content": "edited on A"}
    assert not result["is_error"]
    types = [e["type"] for e in first]
    assert types.index("approval_requested") < types.index("approval_resolved") \
        < types.index("tool_result")
    assert all(_approvals(client, cid) == [] for client in (a, b, c))
    deadline = time.monotonic() + WAIT  # B gives the lease back just after its last event
    while a.get(f"/conversations/{cid}").json()["state"] != "idle":
        assert time.monotonic() < deadline
        time.sleep(0.05)

    asked = _asked_on_c(c, b, cid, "and another", after=first[-1]["id"])
    second_id = asked["data"]["tool_use_id"]
    assert [q["tool_use_id"] for q in _approvals(a, cid)] == [second_id]
    rejected = a.post(f"/conversations/{cid}/approvals/{second_id}/reject",
                      json={"reason": "Not that file."})
    assert rejected.status_code == 200, rejected.text
    assert c.post(f"/conversations/{cid}/approvals/{second_id}/approve").status_code == 404
    events = wait_idle(c, cid, turns=2)
    assert not (workdir / "other.txt").exists()  # the rejected call never ran
    later = [e for e in events if e["id"] > first[-1]["id"]]
    assert [e["data"] for e in later if e["type"] == "approval_resolved"] == [
        {"tool_use_id": second_id, "decision": "deny", "reason": "Not that file."}]
    denied = next(e["data"] for e in later if e["type"] == "tool_result")
    assert denied["is_error"] and "Not that file." in denied["content"]
    tool_messages = [m for m in model_server.requests[-1]["messages"] if m["role"] == "tool"]
    assert "Not that file." in tool_messages[-1]["content"]  # the model was told why
    # One log, whichever replica reads it: the stream C followed, less the first turn's
    # live output, which the second turn's start pruned (the retention rule).
    assert all_events(a, cid) == all_events(c, cid) == [
        e for e in events
        if e["id"] > first[-1]["id"] or e["type"] not in LIVE_OUTPUT_TYPES]


@pytest.mark.slow
def test_a_question_whose_replica_was_killed_is_no_longer_answerable(
    replicas: list[Replica], model_server: ScriptedServer,
) -> None:
    (_, a), (b_process, b), (_, c) = replicas
    model_server.enqueue(
        script.tool_calls([("write_file", {"path": "never.txt", "content": "x"})]))
    cid = create_conversation(a, model_server, tools=["write_file"])
    workdir = Path(a.get(f"/conversations/{cid}").json()["workdir"])
    call_id = _asked_on_c(c, b, cid, "write", after=0)["data"]["tool_use_id"]
    assert [q["tool_use_id"] for q in _approvals(a, cid)] == [call_id]

    os.kill(b_process.pid, signal.SIGKILL)
    b_process.wait(WAIT)
    # B is gone (on this machine its process is checked; elsewhere its lease lapses):
    # nothing lists the question as open, and answering it is refused.
    deadline = time.monotonic() + WAIT
    while _approvals(a, cid):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert _approvals(c, cid) == []
    approve = a.post(f"/conversations/{cid}/approvals/{call_id}/approve")
    assert approve.status_code == 404, approve.text
    assert not (workdir / "never.txt").exists()
