"""REST: a command that prints a gigabyte leaves a capped result and capped events.

What a person notices when a command prints for an hour: the server stays
small and the conversation stays readable. So the stored result is the output
cap's worth plus a note of what was cut, each live ``tool_output`` event carries
at most the report's tail, and the server's in-memory event tail stays within
its character cap; none of it grows with the gigabyte.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from server_harness import WAIT, RunningApi

from desktop_agent.core.tooling.builtin.live_output import TAIL_BYTES
from desktop_agent.core.tooling.builtin.shell_tool import MAX_TIMEOUT, OUTPUT_CAP
from desktop_agent.server.event_tail import MEMORY_TAIL_BYTES
from desktop_agent.testing import ScriptedServer, script

GIGABYTE = 2**30


def test_a_gigabyte_of_output_is_stored_capped_and_streamed_capped(
        api: RunningApi, model_server: ScriptedServer) -> None:
    cid = api.create(base_url=model_server.base_url, model="test-model", tools=["bash"],
                     confirm_tools=False)["id"]
    command = f"head -c {GIGABYTE} /dev/zero | tr '\\0' a; echo; echo printed"
    model_server.enqueue(
        script.tool_calls([("bash", {"command": command, "timeout_seconds": MAX_TIMEOUT})],
                          ids=["c1"]),
        script.text("That was long."))
    assert api.client.post(f"/conversations/{cid}/run",
                           json={"message": "print a lot"}).status_code == 202
    assert _until_idle(api, cid)["outcome"] == "complete"

    events = api.events(cid)
    [result] = [e["data"] for e in events if e["type"] == "tool_result"]
    assert not result["is_error"], result["content"][:300]
    assert "stdout truncated" in result["content"]
    assert len(result["content"]) < 2 * OUTPUT_CAP
    stored = api.client.get(f"/conversations/{cid}/messages").json()["messages"]
    [tool] = [m for m in stored if m["role"] == "tool"]
    assert tool["message"]["content"] == result["content"]
    # the model got the same capped result
    sent = next(m for m in model_server.requests[1]["messages"] if m["role"] == "tool")
    assert len(sent["content"]) < 2 * OUTPUT_CAP

    live = [e["data"] for e in events if e["type"] == "tool_output"]
    assert live, "no live output was reported"
    assert all(len(e["text"].encode()) <= TAIL_BYTES for e in live)
    assert live[-1]["lines"] >= 1
    stored_chars = sum(len(json.dumps(e["data"])) for e in events)
    assert stored_chars < GIGABYTE / 20, f"{stored_chars:,} characters of events were stored"

    services = api.server.config.app.state.services  # type: ignore[attr-defined]
    tail = services.events._tails.get(cid)  # the in-memory cap is the point
    assert tail is None or tail.size <= 2 * MEMORY_TAIL_BYTES
    assert "That was long." in "".join(e["data"]["text"] for e in events if e["type"] == "text")


def _until_idle(api: RunningApi, cid: str) -> dict[str, Any]:
    """Follow the stream until the turn ends, however long the machine takes.

    No deadline here: the command's own time limit ends the turn at the latest.
    """
    with api.client.stream("GET", f"/conversations/{cid}/events/stream",
                           timeout=httpx.Timeout(None, connect=WAIT)) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):
                event = json.loads(line[5:])
                if event["type"] == "state" and event["data"]["state"] == "idle":
                    return dict(event["data"])
    raise AssertionError("the stream ended before the turn did")
