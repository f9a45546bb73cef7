"""Checkpoints over real HTTP: commands and turns recorded, files changed with diffs, undo, 409."""

from __future__ import annotations

from pathlib import Path

from server_harness import RunningApi

from desktop_agent.testing import ScriptedServer, script


def project(api: RunningApi, cid: str) -> Path:
    workdir = api.workdir(cid)
    (workdir / "src").mkdir(parents=True, exist_ok=True)
    (workdir / "src" / "main.py").write_text("print('one')\nprint('two')\n")
    (workdir / "src" / "run.sh").write_text("#!/bin/sh\n")
    (workdir / "src" / "run.sh").chmod(0o755)
    return workdir


def test_a_command_is_recorded_listed_with_diffs_and_undone(api: RunningApi) -> None:
    cid = api.create()["id"]
    workdir = project(api, cid)
    result = api.client.post(f"/conversations/{cid}/commands",
                             json={"command": "rm -rf src && echo x > new.txt"}).json()
    assert result["exit_code"] == 0 and result["turn"]
    assert not (workdir / "src").exists()

    changed = api.client.get(f"/conversations/{cid}/files-changed").json()["turns"]
    assert [t["turn"] for t in changed] == [result["turn"]]
    files = {f["path"]: f for f in changed[0]["files"]}
    assert files["new.txt"]["change"] == "added" and files["new.txt"]["diff"].startswith(
        "--- /dev/null")
    assert files["src/main.py"]["change"] == "deleted"
    assert files["src/main.py"]["summary"] == "Deletes src/main.py (26 bytes, 2 lines)."
    event = api.wait_for_event(cid, lambda e: e["type"] == "files_changed")
    assert event["data"]["turn"] == result["turn"]
    listed = api.client.get(f"/conversations/{cid}/checkpoints").json()
    assert {c["kind"] for c in listed["checkpoints"]} == {"command", "turn_end"}
    assert listed["size_bytes"] > 0

    undone = api.client.post(f"/conversations/{cid}/undo", json={"turn": result["turn"]})
    assert undone.status_code == 200, undone.text
    assert (workdir / "src" / "main.py").read_text() == "print('one')\nprint('two')\n"
    assert (workdir / "src" / "run.sh").stat().st_mode & 0o777 == 0o755
    assert not (workdir / "new.txt").exists()
    assert "new.txt" in undone.json()["removed"]


def test_a_file_edited_by_hand_is_a_409_with_its_name_unless_forced(api: RunningApi) -> None:
    cid = api.create()["id"]
    workdir = project(api, cid)
    api.client.post(f"/conversations/{cid}/commands",
                    json={"command": "echo agent > src/main.py"})
    (workdir / "src" / "main.py").write_text("agent\nand mine\n")

    refused = api.client.post(f"/conversations/{cid}/undo", json={})
    assert refused.status_code == 409
    body = refused.json()
    assert body["code"] == "restore_conflict" and "src/main.py" in body["error"]
    assert body["details"] == [{"path": "src/main.py"}]
    assert (workdir / "src" / "main.py").read_text() == "agent\nand mine\n"

    forced = api.client.post(f"/conversations/{cid}/undo", json={"force": True})
    assert forced.status_code == 200
    assert forced.json()["overwritten"] == ["src/main.py"]
    assert (workdir / "src" / "main.py").read_text() == "print('one')\nprint('two')\n"


def test_a_turns_bash_is_restored_to_before_its_message_with_a_new_branch(
        api: RunningApi, model_server: ScriptedServer) -> None:
    cid = api.create(base_url=model_server.base_url, model="test-model", tools=["bash"],
                     confirm_tools=False)["id"]
    workdir = project(api, cid)
    model_server.enqueue(script.tool_calls([("bash", {"command": "rm -rf src"})]),
                         script.text("Removed."))
    assert api.client.post(f"/conversations/{cid}/run",
                           json={"message": "remove src"}).status_code == 202
    api.wait_idle(cid)
    assert not (workdir / "src").exists()
    messages = api.client.get(f"/conversations/{cid}/messages").json()["messages"]
    user = next(m for m in messages if m["role"] == "user")

    restored = api.client.post(f"/conversations/{cid}/restore",
                               json={"message_id": user["id"], "branch": True})

    assert restored.status_code == 200, restored.text
    assert (workdir / "src" / "main.py").exists()
    assert api.client.get(f"/conversations/{cid}/messages").json()["messages"] == []
    bad = api.client.post(f"/conversations/{cid}/restore", json={"branch": True})
    assert bad.status_code == 422
