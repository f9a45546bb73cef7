"""REST: compaction is a per-conversation setting and an event; tools list their schema cost."""

from __future__ import annotations

from typing import Any

from server_harness import RunningApi

from desktop_agent.core.context.summary_request import SUMMARY_INSTRUCTIONS
from desktop_agent.testing import ScriptedServer, script

LONG_ANSWER = " ".join(f"word{i}" for i in range(180))


def _answering(model_server: ScriptedServer) -> None:
    def respond(body: dict[str, Any]) -> script.Script:
        if body["messages"][0].get("content") == SUMMARY_INSTRUCTIONS:
            return script.text("Three questions about words were answered.")
        return script.text(LONG_ANSWER)

    model_server.responder = respond


def _talk(api: RunningApi, cid: str, turns: int) -> None:
    after = 0
    for n in range(turns):
        sent = api.client.post(f"/conversations/{cid}/run", json={"message": f"Question {n}"})
        assert sent.status_code == 202, sent.text
        after = api.wait_idle(cid, after=after)["id"]


def test_a_long_conversation_reports_its_compactions(api: RunningApi,
                                                     model_server: ScriptedServer) -> None:
    _answering(model_server)
    model_server.max_prompt_tokens = 700
    cid = api.create(base_url=model_server.base_url, model="test-model", context_length=700,
                     max_tokens=100)["id"]
    _talk(api, cid, 5)
    events = api.events(cid, types="compaction")
    assert events and events[0]["data"]["mode"] == "summarise"
    assert events[0]["data"]["summary"] == "Three questions about words were answered."
    assert events[0]["data"]["tokens_after"] < events[0]["data"]["tokens_before"]
    assert not api.events(cid, types="error")
    messages = api.client.get(f"/conversations/{cid}/messages").json()["messages"]
    assert sum(m["role"] == "assistant" for m in messages) == 5  # the store keeps all


def test_compaction_is_a_setting(api: RunningApi, model_server: ScriptedServer) -> None:
    _answering(model_server)
    model_server.max_prompt_tokens = 700
    cid = api.create(base_url=model_server.base_url, model="test-model", context_length=700,
                     max_tokens=100)["id"]
    patched = api.client.patch(f"/conversations/{cid}",
                               json={"settings": {"compaction": "drop_oldest"}})
    assert patched.status_code == 200 and patched.json()["settings"]["compaction"] == "drop_oldest"
    _talk(api, cid, 5)
    events = api.events(cid, types="compaction")
    assert events and all(e["data"]["mode"] == "drop_oldest" and e["data"]["summary"] is None
                          for e in events)
    bad = api.client.patch(f"/conversations/{cid}", json={"settings": {"compaction": "maybe"}})
    assert bad.status_code == 422


def test_off_lets_the_context_error_through(api: RunningApi,
                                            model_server: ScriptedServer) -> None:
    _answering(model_server)
    model_server.max_prompt_tokens = 700
    cid = api.create(base_url=model_server.base_url, model="test-model", context_length=700,
                     max_tokens=100, compaction="off")["id"]
    _talk(api, cid, 5)
    assert not api.events(cid, types="compaction")
    assert api.events(cid, types="error")


def test_tools_list_their_schema_cost(api: RunningApi) -> None:
    listing = api.client.get("/tools").json()
    by_name = {t["name"]: t for t in listing["tools"]}
    assert list(by_name)[:7] == ["read_file", "write_file", "edit_file", "list_dir", "glob",
                                 "grep", "bash"]
    assert by_name["get_weather"]["group"] == "custom"
    assert by_name["read_file"]["group"] == "built-in" and by_name["read_file"]["read_only"]
    groups = listing["schema_tokens_by_group"]
    # the seven workdir tools (300-400) and update_plan (about 100)
    assert 400 < groups["built-in"] <= 520
    assert 80 < by_name["update_plan"]["schema_tokens"] <= 120
    assert listing["schema_tokens"] == sum(t["schema_tokens"] for t in listing["tools"])


def test_compaction_stays_in_steps_across_turns(api: RunningApi,
                                                model_server: ScriptedServer) -> None:
    """Each turn reloads the history from the store; the summary is reused, not redone."""
    _answering(model_server)
    model_server.max_prompt_tokens = 2048
    cid = api.create(base_url=model_server.base_url, model="test-model", context_length=2048,
                     max_tokens=100)["id"]
    _talk(api, cid, 12)
    compactions = api.events(cid, types="compaction")
    summaries = [r for r in model_server.requests
                 if r["messages"][0].get("content") == SUMMARY_INSTRUCTIONS]
    assert 1 <= len(compactions) <= 4 and len(summaries) == len(compactions)


def test_constrained_tool_calls_are_a_setting(api: RunningApi,
                                              model_server: ScriptedServer) -> None:
    # Off by default; switched on over REST, the next request asks the server for
    # constrained decoding, and the constrained answer arrives as text events.
    model_server.enqueue(script.text("Plain."), script.text('{"answer": "Constrained."}'))
    cid = api.create(base_url=model_server.base_url, model="test-model",
                     tools=["read_file"], confirm_tools=False)["id"]
    _talk(api, cid, 1)
    patched = api.client.patch(f"/conversations/{cid}",
                               json={"settings": {"constrained_tool_calls": True}})
    assert patched.status_code == 200, patched.text
    last = api.events(cid)[-1]["id"]
    # a request that names the tool's job (a file): one naming none is held to an answer
    sent = api.client.post(f"/conversations/{cid}/run", json={"message": "read notes.txt"})
    assert sent.status_code == 202
    api.wait_idle(cid, after=last)
    plain, constrained = model_server.requests[-2:]
    assert "response_format" not in plain and "tools" in plain
    schema = constrained["response_format"]["json_schema"]["schema"]
    names = [c["properties"]["name"]["const"] for c in schema["anyOf"][1:]]
    assert names == ["read_file"]
    texts = "".join(e["data"]["text"] for e in api.events(cid, types="text"))
    assert texts.endswith("Constrained.") and "answer" not in texts
    bad = api.client.patch(f"/conversations/{cid}",
                           json={"settings": {"constrained_tool_calls": "yes please"}})
    assert bad.status_code == 422
