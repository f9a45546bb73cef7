"""The REST server runs a conversation exactly as the window does (issue 12's drifts).

Each test reproduces a drift between the two front ends that the session
layer removed: config.json rules, extra_body, MCP tool names in a PATCH,
the shared defaults and the missing-key error. Real HTTP, real SQLite, the
scripted model server.
"""

from __future__ import annotations

import json
from pathlib import Path

from server_harness import RunningApi

from desktop_agent.testing import ScriptedServer, script


def write_config(data_dir: Path, config: dict[str, object]) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")


def test_a_deny_rule_in_config_json_stops_a_rest_turns_tool(
        api: RunningApi, model_server: ScriptedServer, data_dir: Path) -> None:
    write_config(data_dir, {"permissions": [{"tool": "get_weather", "decision": "deny"}]})
    model_server.enqueue(script.tool_calls([("get_weather", {"city": "Oslo"})]),
                         script.text("I may not look."))
    cid = api.create(base_url=model_server.base_url, model="test-model",
                     tools=["get_weather"], confirm_tools=False)["id"]
    api.client.post(f"/conversations/{cid}/run", json={"message": "Oslo?"})
    api.wait_idle(cid)
    results = api.events(cid, types="tool_result")
    assert [r["data"]["is_error"] for r in results] == [True]
    assert "not allowed by a permission rule" in results[0]["data"]["content"]
    tool_message = next(m for m in model_server.requests[1]["messages"] if m["role"] == "tool")
    assert "Sunny" not in tool_message["content"]


def test_extra_body_reaches_the_model_server(api: RunningApi,
                                             model_server: ScriptedServer) -> None:
    model_server.enqueue(script.text("Hi."))
    cid = api.create(base_url=model_server.base_url, model="test-model", tools=[],
                     extra_body={"cache_prompt": True, "top_k": 20})["id"]
    api.client.post(f"/conversations/{cid}/run", json={"message": "Hello"})
    api.wait_idle(cid)
    sent = model_server.requests[0]
    assert sent["cache_prompt"] is True and sent["top_k"] == 20


def test_patching_temperature_keeps_a_window_conversations_mcp_tool(
        api: RunningApi, data_dir: Path) -> None:
    write_config(data_dir, {"mcpServers": {"time": {"command": "no-such-mcp-server"}}})
    cid = api.create(model="m", tools=["time__now", "get_weather"])["id"]
    patched = api.client.patch(f"/conversations/{cid}", json={"settings": {"temperature": 0.2}})
    assert patched.status_code == 200, patched.text
    assert patched.json()["settings"]["tools"] == ["time__now", "get_weather"]
    bad = api.client.patch(f"/conversations/{cid}", json={"settings": {"tools": ["nope"]}})
    assert bad.status_code == 422 and bad.json()["code"] == "unknown_tool"


def test_defaults_are_the_windows(api: RunningApi, model_server: ScriptedServer) -> None:
    """No ``tools`` key offers every tool; asked calls wait (confirmation on)."""
    model_server.enqueue(script.text("Hi."))
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
    api.client.post(f"/conversations/{cid}/run", json={"message": "Hello"})
    api.wait_idle(cid)
    offered = {t["function"]["name"] for t in model_server.requests[0]["tools"]}
    assert {"get_weather", "read_file", "bash"} <= offered
    assert model_server.requests[0]["max_tokens"] == 4096
    assert api.client.get(f"/conversations/{cid}").json()["confirm_tools"] is True


def test_a_missing_api_key_is_an_error_not_an_empty_key(
        api: RunningApi, model_server: ScriptedServer) -> None:
    cid = api.create(base_url=model_server.base_url, model="test-model",
                     api_key_name="api:nowhere")["id"]
    api.client.post(f"/conversations/{cid}/run", json={"message": "Hello"})
    api.wait_idle(cid)
    errors = api.events(cid, types="error")
    assert "No API key named" in errors[0]["data"]["message"]
    assert model_server.requests == []


def test_user_prompt_submit_hooks_run_for_rest_turns(
        tmp_path: Path, data_dir: Path, model_server: ScriptedServer) -> None:
    from server_harness import start_api

    from desktop_agent.core.tooling.hooks import HOOK_USER_PROMPT_SUBMIT, HookDecision

    async def add_context(event: object) -> HookDecision:
        return HookDecision(modified_prompt=f"{event.prompt} (answer briefly)")  # type: ignore[attr-defined]

    api = start_api(tmp_path, hooks={HOOK_USER_PROMPT_SUBMIT: [add_context]})
    try:
        model_server.enqueue(script.text("Ok."))
        cid = api.create(base_url=model_server.base_url, model="test-model", tools=[])["id"]
        api.client.post(f"/conversations/{cid}/run", json={"message": "Explain"})
        api.wait_idle(cid)
        user = [m for m in model_server.requests[0]["messages"] if m["role"] == "user"]
        assert user[-1]["content"] == "Explain (answer briefly)"
    finally:
        api.stop()
        api.store.close()




def test_two_servers_on_one_folder_take_turns(
        tmp_path: Path, data_dir: Path, model_server: ScriptedServer) -> None:
    """Two ``serve`` processes on one data folder: one turn at a time, one linear branch."""
    from server_harness import start_api

    from desktop_agent.store import Store

    first = start_api(tmp_path / "a")
    second = start_api(tmp_path / "b", store=Store.open(first.database))
    try:
        model_server.enqueue(script.tool_calls([("get_weather", {"city": "Oslo"})]),
                             script.text("Sunny."), script.text("Second server here."))
        cid = first.create(base_url=model_server.base_url, model="test-model",
                           tools=["get_weather"])["id"]
        first.client.post(f"/conversations/{cid}/run", json={"message": "Oslo?"})
        asked = first.wait_for_event(cid, lambda e: e["type"] == "approval_requested")

        busy = second.client.post(f"/conversations/{cid}/run", json={"message": "Hi?"})
        assert busy.status_code == 409 and busy.json()["code"] == "conversation_busy"
        refused = second.client.post(f"/conversations/{cid}/messages", json={"content": "Hi?"})
        assert refused.status_code == 409

        first.client.post(f"/conversations/{cid}/approvals/{asked['data']['tool_use_id']}"
                          "/approve")
        done = first.wait_idle(cid)
        assert second.client.post(f"/conversations/{cid}/run",
                                  json={"message": "And you?"}).status_code == 202
        second.wait_idle(cid, after=done["id"])  # one event log: ids from the database
        messages = second.client.get(f"/conversations/{cid}/messages").json()["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant",
                                                 "user", "assistant"]
        assert messages[-1]["message"]["content"] == "Second server here."
        assert first.store.count_messages(cid) == 6  # nothing forked
    finally:
        second.stop()
        second.store.close()
        first.stop()
        first.store.close()


def test_a_rest_turn_tells_what_the_window_shows_beside_the_transcript(
        api: RunningApi, model_server: ScriptedServer, data_dir: Path) -> None:
    """The window shows why an MCP server's tools are missing and how far the server
    has read a long prompt; a REST client gets both as events."""
    write_config(data_dir, {"mcpServers": {"time": {"command": "no-such-mcp-server"}}})
    factory = script.ChunkFactory()
    model_server.enqueue(script.from_chunks([
        script.Chunk({"choices": [], "prompt_progress": {
            "total": 1024, "cache": 0, "processed": processed, "time_ms": 5}})
        for processed in (512, 1024)
    ] + [factory.delta({"role": "assistant", "content": "Hi."}), factory.finish("stop")]))
    cid = api.create(base_url=model_server.base_url, model="test-model",
                     tools=["time__now", "get_weather"])["id"]
    api.client.post(f"/conversations/{cid}/run", json={"message": "Hello"})
    api.wait_idle(cid)
    notices = api.events(cid, types="notice")
    assert notices and "time" in notices[0]["data"]["text"]
    assert "no-such-mcp-server" in notices[0]["data"]["text"]
    progress = api.events(cid, types="prompt_progress")
    assert [(e["data"]["processed"], e["data"]["total"]) for e in progress] == [
        (512, 1024), (1024, 1024)]
