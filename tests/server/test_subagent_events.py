"""REST: a subagent's steps arrive as ``subagent`` events nested under the delegation call."""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

from server_harness import RunningApi

from desktop_agent.testing import ScriptedServer, script
from desktop_agent.testing.script import Script


def test_child_events_carry_the_child_id_and_nest_under_the_call(
        api: RunningApi, model_server: ScriptedServer, data_dir: Path) -> None:
    (data_dir / "config.json").write_text(json.dumps({"agents": {"checker": {
        "description": "Checks the weather.", "prompt": "You are the checker.",
        "tools": ["get_weather"]}}}))
    queues: dict[str, list[Script]] = defaultdict(list)
    lock = threading.Lock()

    def respond(body: dict[str, Any]) -> Script:
        who = "checker" if "You are the checker." in (body["messages"][0].get("content")
                                                       or "") else "main"
        with lock:
            return queues[who].pop(0)

    model_server.responder = respond
    queues["main"] += [script.tool_calls([("delegate", {"agent": "checker",
                                                        "prompt": "Weather in Oslo?"})],
                                         ids=["d1"]),
                       script.text("The checker says it is sunny.")]
    queues["checker"] += [script.tool_calls([("get_weather", {"city": "Oslo"})], ids=["w1"]),
                          script.text("Sunny in Oslo.")]
    cid = api.create(base_url=model_server.base_url, model="test-model",
                     tools=["get_weather"])["id"]
    assert api.client.post(f"/conversations/{cid}/run",
                           json={"message": "Weather?"}).status_code == 202
    asked = api.wait_for_event(cid, lambda e: e["type"] == "approval_requested")
    assert asked["data"]["tool_use_id"] == "w1" and asked["data"]["agent"] == "checker"
    listed = api.client.get(f"/conversations/{cid}/approvals").json()["approvals"]
    assert [(a["tool_name"], a["agent"]) for a in listed] == [("get_weather", "checker")]
    assert api.client.post(f"/conversations/{cid}/approvals/w1/approve").status_code == 200
    api.wait_idle(cid)
    events = api.events(cid)
    steps = [e["data"] for e in events if e["type"] == "subagent"]
    assert {s["tool_use_id"] for s in steps} == {"d1"}  # all nested under the delegation
    assert len({s["agent_id"] for s in steps}) == 1 and steps[0]["agent_id"].startswith(
        "checker-")
    assert steps[0]["step"] == "started" and steps[-1]["step"] == "finished"
    call = next(s for s in steps if s["step"] == "tool_call")
    assert (call["call_id"], call["name"], call["input"]) == ("w1", "get_weather",
                                                               {"city": "Oslo"})
    done = steps[-1]
    assert done["result"] == "Sunny in Oslo." and done["requests"] == 2
    assert done["model"] == "test-model" and done["error"] is None
    [result] = [e["data"] for e in events if e["type"] == "tool_result"
                and e["data"]["tool_use_id"] == "d1"]
    assert result["content"].startswith("Sunny in Oslo.")
    # the main agent's own stream holds the delegation call and its result, not the child's
    assert [e["data"]["id"] for e in events if e["type"] == "tool_call"] == ["d1"]
