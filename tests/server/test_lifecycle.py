"""A conversation's whole life over real HTTP: create, run, approve, switch model, delete."""

from __future__ import annotations

import json
import threading

from server_harness import RunningApi

from desktop_agent.store import Store
from desktop_agent.testing import script
from desktop_agent.testing.script import Gate


def _text(events: list[dict]) -> str:
    return "".join(e["data"]["text"] for e in events if e["type"] == "text")


def test_a_turn_streams_into_events_and_the_shared_store(api: RunningApi, model_server):
    model_server.enqueue(script.text("Hello from the model", pieces=4))
    conv = api.create(base_url=model_server.base_url, model="test-model",
                      system_prompt="Be brief.")
    cid = conv["id"]
    assert conv["state"] == "idle" and conv["confirm_tools"] is True

    sent = api.client.post(f"/conversations/{cid}/messages", json={"content": "Hi there"})
    assert sent.status_code == 201 and sent.json()["role"] == "user"
    started = api.client.post(f"/conversations/{cid}/run")
    assert started.status_code == 202 and started.json()["state"] == "running"
    api.wait_idle(cid)

    events = api.events(cid)
    ids = [e["id"] for e in events]
    assert ids == list(range(1, len(ids) + 1))
    assert _text(events) == "Hello from the model"
    assert [e["type"] for e in events if e["type"] in ("usage",)] == ["usage"]
    assert events[-1]["data"] == {"state": "idle", "outcome": "complete"}
    request = model_server.requests[-1]
    assert request["messages"][0] == {"role": "system", "content": "Be brief."}
    assert request["messages"][-1]["content"] == "Hi there"

    messages = api.client.get(f"/conversations/{cid}/messages").json()["messages"]
    assert [(m["role"], m["status"]) for m in messages] == [("user", "complete"),
                                                            ("assistant", "complete")]
    assert messages[1]["message"]["content"] == "Hello from the model"

    # The window opens the same file: the conversation and its messages are there.
    with Store.open(api.database) as window_store:
        record = window_store.get_conversation(cid)
        assert record is not None and record.settings["model"] == "test-model"
        path = window_store.active_path(cid)
        assert [m.message["content"] for m in path] == ["Hi there", "Hello from the model"]


def test_run_with_message_conflicts_while_running_and_interrupt_keeps_partial_text(
        api: RunningApi, model_server):
    gate = threading.Event()
    reply = script.text("First part then the rest", pieces=5)
    reply.steps.insert(3, Gate(gate, timeout=10))
    model_server.enqueue(reply)
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]

    assert api.client.post(f"/conversations/{cid}/run",
                           json={"message": "Go"}).status_code == 202
    api.wait_for_event(cid, lambda e: e["type"] == "text")
    again = api.client.post(f"/conversations/{cid}/run", json={"message": "Again"})
    assert again.status_code == 409 and again.json()["code"] == "turn_running"
    blocked = api.client.post(f"/conversations/{cid}/messages", json={"content": "x"})
    assert blocked.status_code == 409

    stopped = api.client.post(f"/conversations/{cid}/interrupt")
    gate.set()
    assert stopped.status_code == 200 and stopped.json()["interrupted"] is True
    idle = api.wait_idle(cid)
    assert idle["data"]["outcome"] == "interrupted"
    partial = _text(api.events(cid))
    assert partial and "First part then the rest".startswith(partial)
    messages = api.client.get(f"/conversations/{cid}/messages").json()["messages"]
    assert messages[-1]["role"] == "assistant"
    assert messages[-1]["status"] == "interrupted"
    assert messages[-1]["message"]["content"] == partial
    assert api.client.post(f"/conversations/{cid}/interrupt").json()["interrupted"] is False


def test_switching_model_mid_conversation_applies_to_the_next_turn(api: RunningApi, model_server):
    model_server.models = ["test-model", "other-model"]
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
    api.client.post(f"/conversations/{cid}/run", json={"message": "one"})
    first_idle = api.wait_idle(cid)
    patched = api.client.patch(f"/conversations/{cid}",
                               json={"settings": {"model": "other-model", "temperature": 0.1}})
    assert patched.status_code == 200
    assert patched.json()["settings"]["model"] == "other-model"
    api.client.post(f"/conversations/{cid}/run", json={"message": "two"})
    api.wait_idle(cid, after=first_idle["id"])
    assert [r["model"] for r in model_server.requests] == ["test-model", "other-model"]
    assert model_server.requests[-1]["temperature"] == 0.1
    # the second turn carried the first one's history
    contents = [m["content"] for m in model_server.requests[-1]["messages"]]
    assert contents == ["one", "You said: one", "two"]


def test_confirmation_mode_approve_with_edited_input_and_reject_with_reason(
        api: RunningApi, model_server):
    model_server.enqueue(script.tool_calls([("get_weather", {"city": "Paris"})]),
                         script.text("It is sunny in Lyon."),
                         script.tool_calls([("get_weather", {"city": "Rome"})]),
                         script.text("I could not check."))
    cid = api.create(base_url=model_server.base_url, model="test-model",
                     tools=["get_weather"])["id"]
    api.client.post(f"/conversations/{cid}/run", json={"message": "Weather in Paris?"})
    asked = api.wait_for_event(cid, lambda e: e["type"] == "approval_requested")
    call_id = asked["data"]["tool_use_id"]
    assert asked["data"]["tool_name"] == "get_weather"
    assert asked["data"]["input"] == {"city": "Paris"}
    pending = api.client.get(f"/conversations/{cid}/approvals").json()["approvals"]
    assert [p["tool_use_id"] for p in pending] == [call_id]
    assert api.client.get(f"/conversations/{cid}").json()["state"] == "waiting_approval"

    approved = api.client.post(f"/conversations/{cid}/approvals/{call_id}/approve",
                               json={"input": {"city": "Lyon"}})
    assert approved.status_code == 200
    first_idle = api.wait_idle(cid)
    results = [e for e in api.events(cid) if e["type"] == "tool_result"]
    assert results[0]["data"]["content"] == "Sunny in Lyon"
    assert api.client.get(f"/conversations/{cid}/approvals").json()["approvals"] == []

    api.client.post(f"/conversations/{cid}/run", json={"message": "And Rome?"})
    asked = api.wait_for_event(cid, lambda e: e["id"] > first_idle["id"]
                               and e["type"] == "approval_requested")
    rejected = api.client.post(
        f"/conversations/{cid}/approvals/{asked['data']['tool_use_id']}/reject",
        json={"reason": "No weather lookups today."})
    assert rejected.status_code == 200
    api.wait_idle(cid, after=first_idle["id"])
    tool_messages = [m for m in model_server.requests[-1]["messages"] if m["role"] == "tool"]
    assert "No weather lookups today." in tool_messages[-1]["content"]
    resolved = [e["data"]["decision"] for e in api.events(cid, types="approval_resolved")]
    # One set of decision words for the window, the store and the events.
    assert resolved == ["allow_once", "deny"]
    stored = api.client.get(f"/conversations/{cid}/messages").json()["messages"]
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant",
                                           "user", "assistant", "tool", "assistant"]
    assert stored[1]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    # What the record shows is what ran: the stored call, the events and the
    # history the model is sent next hold the edited input.
    assert json.loads(stored[1]["message"]["tool_calls"][0]["function"]["arguments"]) \
        == {"city": "Lyon"}
    assert results[0]["data"]["input"] == {"city": "Lyon"}
    next_request = model_server.requests[1]["messages"]
    sent_call = next(m for m in next_request if m.get("tool_calls"))
    assert json.loads(sent_call["tool_calls"][0]["function"]["arguments"]) == {"city": "Lyon"}
    record = api.store.get_message(stored[1]["id"])
    assert json.loads(record.metadata["model_arguments"][call_id]) == {"city": "Paris"}
    assert api.store.get_message(stored[2]["id"]).metadata["approval"] == {
        "decision": "allow_once", "edited_input": {"city": "Lyon"}}
    assert stored[3]["message"]["content"] == "It is sunny in Lyon."
    unknown = api.client.post(f"/conversations/{cid}/approvals/nope/approve")
    assert unknown.status_code == 404


def test_confirmation_off_runs_tools_without_asking(api: RunningApi, model_server):
    model_server.enqueue(script.tool_calls([("get_weather", {"city": "Oslo"})]),
                         script.text("Done."))
    cid = api.create(base_url=model_server.base_url, model="test-model",
                     tools=["get_weather"])["id"]
    assert api.client.put(f"/conversations/{cid}/confirmation",
                          json={"enabled": False}).json() == {"enabled": False}
    api.client.post(f"/conversations/{cid}/run", json={"message": "Oslo?"})
    api.wait_idle(cid)
    types = [e["type"] for e in api.events(cid)]
    assert "approval_requested" not in types
    assert [e["data"]["content"] for e in api.events(cid, types="tool_result")] == ["Sunny in Oslo"]
    assert api.client.get(f"/conversations/{cid}").json()["settings"]["confirm_tools"] is False


def test_unanswered_approval_times_out_as_deny(tmp_path, data_dir, model_server):
    from server_harness import start_api

    api = start_api(tmp_path, approval_timeout=0.3)
    try:
        model_server.enqueue(script.tool_calls([("get_weather", {"city": "Paris"})]),
                             script.text("Fine."))
        cid = api.create(base_url=model_server.base_url, model="test-model",
                         tools=["get_weather"])["id"]
        api.client.post(f"/conversations/{cid}/run", json={"message": "Paris?"})
        api.wait_idle(cid)
        events = api.events(cid)
        assert [e["data"]["decision"] for e in events if e["type"] == "approval_resolved"] \
            == ["expired"]
        assert not [e for e in events if e["type"] == "tool_result" and not e["data"]["is_error"]]
        tool_message = [m for m in model_server.requests[-1]["messages"] if m["role"] == "tool"]
        assert "approval" in tool_message[0]["content"].lower()
    finally:
        api.stop()
        api.store.close()


def test_model_server_errors_become_error_events(api: RunningApi, model_server):
    model_server.enqueue(script.error(404, "model 'nope' not found"))
    cid = api.create(base_url=model_server.base_url, model="nope")["id"]
    api.client.post(f"/conversations/{cid}/run", json={"message": "hello"})
    idle = api.wait_idle(cid)
    assert idle["data"]["outcome"] == "error"
    error = next(e for e in api.events(cid) if e["type"] == "error")
    assert error["data"]["kind"] == "ModelNotFoundError"
    assert error["data"]["message"]


def test_run_needs_a_model_and_a_user_message(api: RunningApi, model_server):
    bare = api.create()["id"]
    answer = api.client.post(f"/conversations/{bare}/run", json={"message": "hi"})
    assert answer.status_code == 409 and answer.json()["code"] == "not_configured"
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
    nothing = api.client.post(f"/conversations/{cid}/run")
    assert nothing.status_code == 409 and nothing.json()["code"] == "nothing_to_answer"


def test_crud_unknown_ids_and_delete_keeps_workdir_unless_asked(api: RunningApi, model_server):
    first = api.create(model="a", base_url=model_server.base_url)
    second = api.create(model="b", base_url=model_server.base_url)
    listed = api.client.get("/conversations").json()["conversations"]
    assert [c["id"] for c in listed][:2] == [second["id"], first["id"]]
    for missing in ("/conversations/nope", "/conversations/nope/events",
                    "/conversations/nope/messages"):
        answer = api.client.get(missing)
        assert answer.status_code == 404
        assert answer.json()["code"] == "not_found" and "nope" in answer.json()["error"]
    bad_tool = api.client.patch(f"/conversations/{first['id']}",
                                json={"settings": {"tools": ["no_such_tool"]}})
    assert bad_tool.status_code == 422 and "no_such_tool" in bad_tool.json()["error"]

    api.client.post(f"/conversations/{first['id']}/files",
                    data={"path": "keep.txt"}, files={"file": ("keep.txt", b"keep me")})
    workdir = api.workdir(first["id"])
    assert (workdir / "keep.txt").read_bytes() == b"keep me"
    deleted = api.client.delete(f"/conversations/{first['id']}")
    assert deleted.json() == {"deleted": True, "workdir_deleted": False, "note": None}
    assert (workdir / "keep.txt").exists()
    assert api.client.get(f"/conversations/{first['id']}").status_code == 404

    api.client.post(f"/conversations/{second['id']}/files",
                    data={"path": "gone.txt"}, files={"file": ("gone.txt", b"x")})
    second_workdir = api.workdir(second["id"])
    gone = api.client.delete(f"/conversations/{second['id']}", params={"delete_workdir": True})
    assert gone.json()["workdir_deleted"] is True
    assert not second_workdir.exists()


def test_thinking_streams_as_its_own_events_and_is_kept_out_of_the_reply(
        api: RunningApi, model_server):
    model_server.enqueue(script.thinking("Let me think about it.", "The answer is 4."))
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
    api.client.post(f"/conversations/{cid}/run", json={"message": "2+2?"})
    api.wait_idle(cid)
    events = api.events(cid)
    thinking = "".join(e["data"]["text"] for e in events if e["type"] == "thinking")
    assert thinking == "Let me think about it."
    assert _text(events) == "The answer is 4."
    reply = api.client.get(f"/conversations/{cid}/messages").json()["messages"][-1]
    assert reply["message"]["content"] == "The answer is 4."
    with Store.open(api.database) as window_store:
        stored = window_store.active_path(cid)[-1]
        assert stored.metadata["thinking"] == "Let me think about it."
        assert stored.metadata["usage"]["completion_tokens"] == 10
