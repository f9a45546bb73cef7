"""The MCP routes: a conversation's prompts, resources and completion, and its servers'
questions answered over REST, against the real server-everything from config.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from server_harness import RunningApi
from tier_policy import part_missing

from desktop_agent.testing import ScriptedServer, script

pytestmark = pytest.mark.timeout(240)

EVERYTHING = Path(__file__).parents[2] / ".mcp-servers" / "node_modules" / ".bin" \
    / "mcp-server-everything"
SLOW = 120.0  # the first call starts the server (node): generous on a busy machine


@pytest.fixture
def everything(data_dir: Path) -> None:
    if not EVERYTHING.exists():
        part_missing(f"{EVERYTHING} not found (bash .ci/install_mcp_servers.sh)")
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.json").write_text(json.dumps(
        {"mcpServers": {"ev": {"command": str(EVERYTHING)}}}), encoding="utf-8")


def _question(api: RunningApi, cid: str, kind: str) -> dict[str, Any]:
    return api.wait_for_event(cid, lambda e: e["type"] == f"{kind}_requested")["data"]


def test_prompts_resources_and_completion(api: RunningApi, everything: None) -> None:
    cid = api.create(model="m")["id"]
    base = f"/conversations/{cid}/mcp"
    prompts = api.client.get(base + "/prompts", timeout=SLOW)
    assert prompts.status_code == 200, prompts.text
    by_command = {p["command"]: p for p in prompts.json()["prompts"]}
    assert by_command["ev:args-prompt"]["arguments"][0] == {
        "name": "city", "description": by_command["ev:args-prompt"]["arguments"][0][
            "description"], "required": True}
    got = api.client.post(base + "/prompts/ev/args-prompt", json={"arguments": {"city": "Oslo"}})
    assert got.status_code == 200 and got.json()["text"] == "What's weather in Oslo?"
    missing = api.client.post(base + "/prompts/ev/args-prompt", json={"arguments": {}})
    assert missing.status_code == 422 and missing.json()["code"] == "mcp_refused"
    unknown = api.client.post(base + "/prompts/nope/x")
    assert unknown.status_code == 422 and "nope" in unknown.json()["error"]
    done = api.client.post(base + "/complete", json={
        "server": "ev", "ref_type": "prompt", "ref": "completable-prompt",
        "argument": "department", "value": "E"})
    assert done.json() == {"values": ["Engineering"]}
    listed = api.client.get(base + "/resources").json()
    assert listed["resources"] and listed["templates"][0]["parameters"] == ["resourceId"]
    first = listed["resources"][0]
    read = api.client.post(base + "/resources/read",
                           json={"server": "ev", "uri": first["uri"]})
    assert read.status_code == 200 and read.json()["contents"][0]["uri"] == first["uri"]


def test_no_server_configured_lists_nothing_and_says_so(api: RunningApi) -> None:
    cid = api.create(model="m")["id"]
    base = f"/conversations/{cid}/mcp"
    assert api.client.get(base + "/prompts").json() == {"prompts": []}
    refused = api.client.post(base + "/prompts/ev/x")
    assert refused.status_code == 404 and refused.json()["code"] == "no_mcp_servers"
    gone = api.client.post(base + "/questions/s1/sampling", json={"choice": "deny"})
    assert gone.status_code == 404


def test_sampling_and_a_form_are_answered_over_rest(
        api: RunningApi, everything: None, model_server: ScriptedServer) -> None:
    cid = api.create(base_url=model_server.base_url, model="test-model",
                     confirm_tools=False)["id"]
    base = f"/conversations/{cid}/mcp"
    assert api.client.get(base + "/prompts", timeout=SLOW).status_code == 200  # started
    model_server.enqueue(
        script.tool_calls([("ev__trigger-sampling-request", {"prompt": "Say hi"})], ids=["c1"]),
        script.text("Hi from the model"),
        script.tool_calls([("ev__trigger-elicitation-request", {})], ids=["c2"]),
        script.text("Done."))
    assert api.client.post(f"/conversations/{cid}/run",
                           json={"message": "Go"}).status_code == 202
    sampling = _question(api, cid, "sampling")
    assert sampling["server"] == "ev" and "Say hi" in sampling["messages"][0]["text"]
    waiting = api.client.get(base + "/questions").json()["questions"]
    assert [(q["id"], q["kind"]) for q in waiting] == [(sampling["id"], "sampling")]
    allowed = api.client.post(base + f"/questions/{sampling['id']}/sampling",
                              json={"choice": "allow_once"})
    assert allowed.status_code == 200, allowed.text
    form = _question(api, cid, "elicitation")
    assert {f["name"] for f in form["fields"]} >= {"name", "integer"}
    wrong = api.client.post(base + f"/questions/{form['id']}/elicitation",
                            json={"action": "accept", "content": {"name": "Ada",
                                                                  "integer": 500}})
    assert wrong.status_code == 422 and "at most 100" in wrong.json()["error"]
    accepted = api.client.post(base + f"/questions/{form['id']}/elicitation",
                               json={"action": "accept", "content": {"name": "Ada"}})
    assert accepted.status_code == 200, accepted.text
    api.wait_idle(cid)
    results = {e["data"]["tool_use_id"]: e["data"]["content"]
               for e in api.events(cid, types="tool_result")}
    assert "Hi from the model" in results["c1"] and '"name": "Ada"' in results["c2"]
    settled = [e["data"] for e in api.events(cid, types="server_question_resolved")]
    assert settled == [{"id": sampling["id"], "outcome": "allow_once"},
                       {"id": form["id"], "outcome": "accept"}]


def test_the_servers_state_log_and_level(api: RunningApi, everything: None) -> None:
    import time

    listed = api.client.get("/mcp/servers", timeout=SLOW)
    assert listed.status_code == 200, listed.text
    [ev] = listed.json()["servers"]
    assert (ev["name"], ev["state"], ev["transport"]) == ("ev", "connected", "stdio")
    assert ev["resources"] == 7 and ev["templates"] == 2 and ev["prompts"] == 4
    level = api.client.put("/mcp/servers/ev/log-level", json={"level": "debug"})
    assert level.json() == {"server": "ev", "level": "debug", "logs": True}
    bad = api.client.put("/mcp/servers/ev/log-level", json={"level": "loud"})
    assert bad.status_code == 422
    assert api.client.get("/mcp/servers/nope/log").status_code == 404
    # setting the level makes server-everything log it (at debug): kept, listed here
    deadline = time.monotonic() + SLOW
    while not (entries := api.client.get("/mcp/servers/ev/log").json()["entries"]):
        assert time.monotonic() < deadline, "no log message kept"
        time.sleep(0.1)
    assert {"time", "level", "logger", "text"} <= set(entries[0])
    assert api.client.get("/mcp/servers", params={"connect": False}).json()[
        "servers"][0]["log_level"] == "debug"
    again = api.client.post("/mcp/servers/ev/restart", timeout=SLOW)
    assert again.status_code == 200 and again.json()["state"] == "connected"


def test_no_server_configured_has_no_servers_to_list(api: RunningApi) -> None:
    listed = api.client.get("/mcp/servers")
    assert listed.status_code == 404 and listed.json()["code"] == "no_mcp_servers"
