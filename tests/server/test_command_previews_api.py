"""Command previews over real HTTP: /commands with preview, the model's bash, apply, discard, 409.

Real ``serve`` (uvicorn on 127.0.0.1), real bubblewrap and a real overlay;
the model is the ScriptedServer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from server_harness import RunningApi

from desktop_agent.testing import ScriptedServer, script
from tests.tools.folder_snapshot import snapshot

pytestmark = pytest.mark.usefixtures("bubblewrap", "overlay")


def project(api: RunningApi, cid: str) -> Path:
    workdir = api.workdir(cid)
    (workdir / "src").mkdir(parents=True, exist_ok=True)
    (workdir / "src" / "main.py").write_text("print('one')\n")
    (workdir / "notes.md").write_text("first\n")
    return workdir


def _preview(api: RunningApi, cid: str, command: str) -> dict[str, Any]:
    response = api.client.post(f"/conversations/{cid}/commands",
                               json={"command": command, "preview": True})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def test_a_previewed_command_leaves_the_folder_and_apply_is_undoable(api: RunningApi) -> None:
    cid = api.create()["id"]
    workdir = project(api, cid)
    before = snapshot(workdir)
    result = _preview(api, cid, "rm -rf src && echo x > new.txt && echo done")
    assert result["stdout"] == "done\n" and result["turn"] is None
    preview = result["preview"]
    assert preview["summary"] == "creates 1 file, deletes 1"
    assert {c["path"]: c["change"] for c in preview["changes"]} == {"new.txt": "created",
                                                                    "src": "deleted"}
    assert preview["diffs"]["new.txt"].startswith("--- /dev/null")
    assert preview["tree"]["totals"]["created"] == 1
    assert snapshot(workdir) == before
    event = api.wait_for_event(cid, lambda e: e["type"] == "command_preview")
    assert event["data"]["id"] == preview["id"]
    listed = api.client.get(f"/conversations/{cid}/previews").json()["previews"]
    assert [p["id"] for p in listed] == [preview["id"]]

    applied = api.client.post(f"/conversations/{cid}/previews/{preview['id']}/apply", json={})
    assert applied.status_code == 200, applied.text
    assert set(applied.json()["applied"]) == {"src", "new.txt"}
    assert not (workdir / "src").exists() and (workdir / "new.txt").read_text() == "x\n"
    settled = api.wait_for_event(cid, lambda e: e["type"] == "command_preview_settled")
    assert settled["data"]["outcome"] == "applied"
    changed = api.wait_for_event(cid, lambda e: e["type"] == "files_changed")
    undone = api.client.post(f"/conversations/{cid}/undo",
                             json={"turn": changed["data"]["turn"]})
    assert undone.status_code == 200, undone.text
    assert (workdir / "src" / "main.py").read_text() == "print('one')\n"
    assert not (workdir / "new.txt").exists()
    gone = api.client.post(f"/conversations/{cid}/previews/{preview['id']}/apply", json={})
    assert gone.status_code == 404 and gone.json()["code"] == "no_such_preview"


def test_a_file_changed_meanwhile_is_a_409_with_its_name(api: RunningApi) -> None:
    cid = api.create()["id"]
    workdir = project(api, cid)
    preview = _preview(api, cid, "echo agent > notes.md")["preview"]
    (workdir / "notes.md").write_text("mine\n")
    refused = api.client.post(f"/conversations/{cid}/previews/{preview['id']}/apply", json={})
    assert refused.status_code == 409
    body = refused.json()
    assert body["code"] == "preview_conflict" and body["details"] == [{"path": "notes.md"}]
    assert (workdir / "notes.md").read_text() == "mine\n"
    forced = api.client.post(f"/conversations/{cid}/previews/{preview['id']}/apply",
                             json={"force": True})
    assert forced.status_code == 200 and forced.json()["overwritten"] == ["notes.md"]
    assert (workdir / "notes.md").read_text() == "agent\n"


def test_discard_leaves_the_folder_byte_for_byte(api: RunningApi) -> None:
    cid = api.create()["id"]
    workdir = project(api, cid)
    before = snapshot(workdir)
    preview = _preview(api, cid, "rm -rf src; chmod 000 notes.md")["preview"]
    done = api.client.post(f"/conversations/{cid}/previews/{preview['id']}/discard",
                           json={"reason": "no"})
    assert done.status_code == 200 and done.json()["discarded"] is True
    assert snapshot(workdir) == before
    assert api.client.get(f"/conversations/{cid}/previews").json()["previews"] == []


def test_the_models_bash_is_previewed_and_the_model_reads_the_verdict(
        api: RunningApi, model_server: ScriptedServer) -> None:
    cid = api.create(base_url=model_server.base_url, model="test-model", tools=["bash"],
                     confirm_tools=False, command_preview="preview")["id"]
    workdir = project(api, cid)
    model_server.enqueue(script.tool_calls([("bash", {"command": "rm -rf src"})]),
                         script.text("Removed."))
    assert api.client.post(f"/conversations/{cid}/run",
                           json={"message": "remove src"}).status_code == 202
    event = api.wait_for_event(cid, lambda e: e["type"] == "command_preview")
    assert event["data"]["tool_use_id"] and event["data"]["summary"] == "deletes 1 file"
    assert (workdir / "src" / "main.py").exists()
    discarded = api.client.post(f"/conversations/{cid}/previews/{event['data']['id']}/discard",
                                json={"reason": "keep src"})
    assert discarded.status_code == 200
    api.wait_idle(cid)
    result = api.wait_for_event(cid, lambda e: e["type"] == "tool_result")
    assert result["data"]["content"].rstrip().endswith("preview outcome: discarded: keep src")
    assert (workdir / "src" / "main.py").exists()


def test_preview_is_offered_on_a_bash_approval_and_taken(
        api: RunningApi, model_server: ScriptedServer) -> None:
    cid = api.create(base_url=model_server.base_url, model="test-model", tools=["bash"],
                     confirm_tools=True)["id"]
    workdir = project(api, cid)
    model_server.enqueue(script.tool_calls([("bash", {"command": "echo new > new.txt"})]),
                         script.text("Made."))
    api.client.post(f"/conversations/{cid}/run", json={"message": "make a file"})
    asked = api.wait_for_event(cid, lambda e: e["type"] == "approval_requested")
    assert asked["data"]["can_preview"] is True
    call = asked["data"]["tool_use_id"]
    listed = api.client.get(f"/conversations/{cid}/approvals").json()["approvals"]
    assert listed[0]["can_preview"] is True
    approved = api.client.post(f"/conversations/{cid}/approvals/{call}/approve",
                               json={"preview": True})
    assert approved.status_code == 200
    event = api.wait_for_event(cid, lambda e: e["type"] == "command_preview")
    assert event["data"]["tool_use_id"] == call and not (workdir / "new.txt").exists()
    applied = api.client.post(f"/conversations/{cid}/previews/{event['data']['id']}/apply")
    assert applied.status_code == 200, applied.text
    api.wait_idle(cid)
    assert (workdir / "new.txt").read_text() == "new\n"


def test_a_command_that_cannot_be_previewed_is_refused_not_run(api: RunningApi) -> None:
    cid = api.create(sandbox="read_only")["id"]
    workdir = project(api, cid)
    refused = api.client.post(f"/conversations/{cid}/commands",
                              json={"command": "echo x > x.txt", "preview": True})
    assert refused.status_code == 409 and refused.json()["code"] == "no_preview"
    assert "read-only" in refused.json()["error"]
    assert not (workdir / "x.txt").exists()
