"""REST: between turns a conversation's session holds no copy of its history.

``serve`` keeps the sessions of conversations in use until their idle eviction;
each one holding its whole branch (every message and tool result) made the
server grow with every turn of every conversation. The next turn reads the
branch from the store again, so the model still gets the whole conversation.
"""

from __future__ import annotations

from server_harness import RunningApi

from desktop_agent.testing import ScriptedServer, script


def test_between_turns_nothing_is_held_and_the_next_turn_sends_the_whole_conversation(
        api: RunningApi, model_server: ScriptedServer) -> None:
    cid = api.create(base_url=model_server.base_url, model="test-model", tools=["bash"],
                     confirm_tools=False)["id"]
    model_server.enqueue(
        script.tool_calls([("bash", {"command": "seq 1 3 | sed 's/^/row /'"})], ids=["c1"]),
        script.text("Three rows."), script.text("Still three rows."))
    assert api.client.post(f"/conversations/{cid}/run",
                           json={"message": "count"}).status_code == 202
    ended = api.wait_idle(cid)
    assert ended["data"]["outcome"] == "complete"

    runner = api.server.config.app.state.services.runners.peek(cid)  # type: ignore[attr-defined]
    session = runner.session
    assert session.client is not None and session.client.history == []
    assert session._branch._loaded is None

    assert api.client.post(f"/conversations/{cid}/run",
                           json={"message": "and now?"}).status_code == 202
    assert api.wait_idle(cid, after=ended["id"])["data"]["outcome"] == "complete"
    sent = model_server.requests[-1]["messages"]
    assert [m["role"] for m in sent if m["role"] != "system"] == [
        "user", "assistant", "tool", "assistant", "user"]
    assert "row 3" in next(m["content"] for m in sent if m["role"] == "tool")
    stored = api.client.get(f"/conversations/{cid}/messages").json()["messages"]
    assert [m["message"]["content"] for m in stored][-2:] == ["and now?", "Still three rows."]
