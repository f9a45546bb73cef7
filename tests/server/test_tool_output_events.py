"""REST: a running command's output arrives as ``tool_output`` events; one call can be stopped."""

from __future__ import annotations

from server_harness import RunningApi

from desktop_agent.testing import ScriptedServer, script


def test_output_streams_as_events_and_stop_ends_just_that_command(
        api: RunningApi, model_server: ScriptedServer) -> None:
    cid = api.create(base_url=model_server.base_url, model="test-model", tools=["bash"],
                     confirm_tools=False)["id"]
    command = "for i in $(seq 1 50); do echo step $i; done; sleep 120"
    model_server.enqueue(script.tool_calls([("bash", {"command": command})], ids=["c1"]),
                         script.text("Stopped it."))
    assert api.client.post("/conversations/nope/tool_calls/c1/stop").status_code == 404
    assert api.client.post(f"/conversations/{cid}/run",
                           json={"message": "count"}).status_code == 202
    first = api.wait_for_event(cid, lambda e: e["type"] == "tool_output"
                               and "step 50" in e["data"]["text"])
    assert first["data"]["tool_use_id"] == "c1" and first["data"]["name"] == "bash"
    assert first["data"]["lines"] == 50 and first["data"]["stoppable"] is True
    # no result yet: the command is still sleeping
    assert not [e for e in api.events(cid) if e["type"] == "tool_result"]

    stopped = api.client.post(f"/conversations/{cid}/tool_calls/c1/stop")
    assert stopped.status_code == 200 and stopped.json() == {"stopped": True}
    api.wait_idle(cid)
    assert api.client.post(f"/conversations/{cid}/tool_calls/c1/stop").json() == {
        "stopped": False}
    events = api.events(cid)
    [result] = [e["data"] for e in events if e["type"] == "tool_result"]
    assert result["content"].startswith("stopped by the person after")
    assert "step 1\n" in result["content"]
    texts = "".join(e["data"]["text"] for e in events if e["type"] == "tool_output")
    assert texts.startswith("step 1\nstep 2\n")
    # the turn went on: the model read the stopped result and answered
    assert "".join(e["data"]["text"] for e in events if e["type"] == "text") == "Stopped it."
    tool_message = next(m for m in model_server.requests[1]["messages"] if m["role"] == "tool")
    assert tool_message["content"] == result["content"]
