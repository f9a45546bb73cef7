"""REST: the working folder's AGENTS.md is reported and sent (and the switch leaves it out)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from server_harness import RunningApi

from desktop_agent.testing import ScriptedServer, script


def test_agents_md_is_reported_and_sent_and_the_switch_removes_it(
        api: RunningApi, model_server: ScriptedServer, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    cid = api.create(base_url=model_server.base_url, model="m", tools=[],
                     workdir=str(folder))["id"]
    nothing = api.client.get(f"/conversations/{cid}/project-instructions").json()
    assert nothing["found"] is False

    (folder / "AGENTS.md").write_text("Always run `pytest -x` first.", encoding="utf-8")
    shown: dict[str, Any] = api.client.get(f"/conversations/{cid}/project-instructions").json()
    assert (shown["found"], shown["file"], shown["included"], shown["truncated"]) == \
        (True, "AGENTS.md", True, False)
    assert shown["cap_bytes"] == 32 * 1024 and shown["tokens"] > 5

    model_server.enqueue(script.text("Ok."), script.text("Ok."))
    api.client.post(f"/conversations/{cid}/run", json={"message": "Hi"})
    api.wait_idle(cid)
    assert "Always run `pytest -x` first." in model_server.requests[-1]["messages"][0]["content"]

    patched = api.client.patch(f"/conversations/{cid}",
                               json={"settings": {"project_instructions": False}})
    assert patched.status_code == 200, patched.text
    assert api.client.get(f"/conversations/{cid}/project-instructions").json()["included"] \
        is False
    last = api.events(cid)[-1]["id"]
    api.client.post(f"/conversations/{cid}/run", json={"message": "Again"})
    api.wait_idle(cid, after=last)
    assert model_server.requests[-1]["messages"][-1]["content"] == "Again"
    assert "pytest -x" not in str(model_server.requests[-1]["messages"])


def test_a_plan_is_an_event_and_is_read_back_after_a_restart(
        tmp_path: Path, data_dir: Path, model_server: ScriptedServer) -> None:
    from server_harness import start_api

    steps = [{"step": "Find the bug", "status": "completed"},
             {"step": "Write the fix", "status": "in_progress"}]
    api = start_api(tmp_path)
    try:
        cid = api.create(base_url=model_server.base_url, model="m")["id"]
        assert api.client.get(f"/conversations/{cid}/plan").json() == \
            {"explanation": None, "plan": []}
        model_server.enqueue(script.tool_calls([("update_plan", {"plan": steps})]),
                             script.text("On it."))
        api.client.post(f"/conversations/{cid}/run", json={"message": "Fix it"})
        api.wait_idle(cid)
        [event] = [e["data"] for e in api.events(cid) if e["type"] == "plan"]
        assert event == {"explanation": None, "plan": steps}
        assert not [e for e in api.events(cid) if e["type"] == "approval_requested"]
    finally:
        api.stop()
    again = start_api(tmp_path, store=api.store)  # a new server on the same database
    try:
        assert again.client.get(f"/conversations/{cid}/plan").json() == \
            {"explanation": None, "plan": steps}
    finally:
        again.stop()
        again.store.close()
