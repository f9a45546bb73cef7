"""A secret a command writes into a file: never in a diff, never kept in the data folder (issue 47).

Over real HTTP against the app on real uvicorn, with real bubblewrap: the
command writes the conversation's secret into files (plain, base64 wrapped
over lines); the files-changed route, the approval's diff of an edit to
such a file and the diff kept with the edit's result show it blanked, and
no file under the data folder (checkpoints included) holds it in any form,
not even after the file is deleted. A secret set after a file holding it
was checkpointed drops that copy.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from server_harness import RunningApi

from desktop_agent.testing import ScriptedServer, script

TOKEN = "ghp_FilesChanged+Secret/0123456789abcdef"
NOT_KEPT = "could not be checkpointed because it holds a secret"


@pytest.fixture(autouse=True)
def _sandbox(bubblewrap: None) -> None:
    """Commands run under the real sandbox."""


def _forms(secret: str) -> list[str]:
    raw = secret.encode()
    return [secret, base64.b64encode(raw).decode()[:40], raw.hex()[:40], secret[:16]]


def _copies_in(folder: Path, secret: str) -> list[str]:
    """Files under ``folder`` holding ``secret`` in a form (line breaks ignored)."""
    found = []
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes().decode("utf-8", "replace").replace("\n", "")
            if any(form in data for form in _forms(secret)):
                found.append(str(path.relative_to(folder)))
    return found


def _files(api: RunningApi, cid: str, turn: str) -> dict[str, dict]:
    turns = api.client.get(f"/conversations/{cid}/files-changed", params={"turn": turn})
    assert turns.status_code == 200, turns.text
    [changed] = turns.json()["turns"]
    return {f["path"]: f for f in changed["files"]}


def _command(api: RunningApi, cid: str, command: str) -> dict:
    ran = api.client.post(f"/conversations/{cid}/commands", json={"command": command})
    assert ran.status_code == 200, ran.text
    result: dict = ran.json()
    assert result["exit_code"] == 0, result
    return result


def test_a_secret_written_into_a_file_is_in_no_diff_and_no_checkpoint(
        api: RunningApi, model_server: ScriptedServer, data_dir: Path) -> None:
    cid = api.create(base_url=model_server.base_url, model="test-model",
                     tools=["edit_file"])["id"]
    put = api.client.put(f"/conversations/{cid}/secrets/TOKEN", json={"value": TOKEN})
    assert put.status_code == 200, put.text
    wrote = _command(api, cid, "printf 'USER=me\\nTOKEN=%s\\nMODE=1\\n' \"$TOKEN\" > creds.env; "
                               "printf %s \"$TOKEN\" | base64 -w 20 > encoded.txt; "
                               "echo plain > plain.txt")
    files = _files(api, cid, wrote["turn"])
    for name in ("creds.env", "encoded.txt"):
        assert files[name]["diff"] is None and NOT_KEPT in files[name]["summary"], files[name]
    assert files["plain.txt"]["diff"].endswith("+plain\n")
    assert _copies_in(data_dir, TOKEN) == []

    # an edit of that file: its approval diff and the diff kept with its result
    model_server.enqueue(
        script.tool_calls([("edit_file", {"path": "creds.env", "old_string": "MODE=1",
                                          "new_string": "MODE=2"})]), script.text("Edited."))
    api.client.post(f"/conversations/{cid}/run", json={"message": "Set mode 2"})
    asked = api.wait_for_event(cid, lambda e: e["type"] == "approval_requested")
    diff = asked["data"]["diff"]["text"]
    assert " TOKEN=[secret TOKEN redacted]\n" in diff and "+MODE=2\n" in diff, diff
    assert not [form for form in _forms(TOKEN) if form in json.dumps(asked)]
    api.client.post(f"/conversations/{cid}/approvals/{asked['data']['tool_use_id']}/approve")
    api.wait_idle(cid)
    assert (api.workdir(cid) / "creds.env").read_text().endswith("MODE=2\n")
    tool = next(m for m in api.client.get(f"/conversations/{cid}/messages").json()["messages"]
                if m["role"] == "tool")
    kept = json.dumps(api.store.get_message(tool["id"]).metadata["file_change"])
    assert "[secret TOKEN redacted]" in kept and not [f for f in _forms(TOKEN) if f in kept]
    everything = api.client.get(f"/conversations/{cid}/files-changed").text
    assert not [form for form in _forms(TOKEN) if form in everything]

    # deleted, the file leaves no copy behind either
    removed = _command(api, cid, "rm creds.env encoded.txt")
    assert NOT_KEPT in _files(api, cid, removed["turn"])["creds.env"]["summary"]
    assert _copies_in(data_dir, TOKEN) == []


def test_a_secret_set_after_its_file_was_checkpointed_drops_that_copy(
        api: RunningApi, data_dir: Path) -> None:
    cid = api.create()["id"]
    made = api.client.post(f"/conversations/{cid}/files", data={"path": "creds.env"},
                           files={"file": ("creds.env", f"TOKEN={TOKEN}\n".encode())})
    assert made.status_code == 201, made.text
    appended = _command(api, cid, "echo MODE=1 >> creds.env")
    assert _copies_in(data_dir, TOKEN), "the checkpoint kept no copy to drop"

    put = api.client.put(f"/conversations/{cid}/secrets/TOKEN", json={"value": TOKEN})
    assert put.status_code == 200, put.text
    assert _copies_in(data_dir, TOKEN) == []
    shown = _files(api, cid, appended["turn"])["creds.env"]
    assert shown["diff"] is None and "holds a secret" in shown["summary"], shown
    # undo cannot bring back what it does not keep: the file stays as it is
    undone = api.client.post(f"/conversations/{cid}/undo", json={"turn": appended["turn"]})
    assert undone.status_code == 200, undone.text
    assert "creds.env" in undone.json()["kept"]
    assert (api.workdir(cid) / "creds.env").read_text() == f"TOKEN={TOKEN}\nMODE=1\n"
    # a later command still works and still keeps no copy
    _command(api, cid, "echo MODE=2 >> creds.env")
    assert _copies_in(data_dir, TOKEN) == []
