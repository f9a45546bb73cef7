"""REST creates conversations by the session's folder rule and patches settings through it."""

from __future__ import annotations

from pathlib import Path

from server_harness import RunningApi


def test_new_conversations_get_dated_folders_of_their_own_made_at_once(api: RunningApi) -> None:
    first, second = api.create(), api.create()
    folders = [Path(c["workdir"]) for c in (first, second)]
    assert folders[0] != folders[1]
    for conversation, folder in zip((first, second), folders, strict=True):
        assert folder.parent == api.workdirs.resolve() and folder.is_dir()
        assert folder.name.startswith("Chat ") and conversation["id"] not in folder.name
        assert conversation["settings"]["workdir"] == str(folder)  # recorded, not derived
        assert conversation["title"] == "API chat"
    untitled = api.client.post("/conversations", json={}).json()
    assert untitled["title"] == "New chat"


def test_a_chosen_workdir_is_kept(api: RunningApi, tmp_path: Path) -> None:
    mine = tmp_path / "project"
    mine.mkdir()
    created = api.create(workdir=str(mine))
    assert created["workdir"] == str(mine) and created["settings"]["workdir"] == str(mine)


def test_unknown_keys_and_invalid_values_are_refused_with_a_sentence(api: RunningApi) -> None:
    cid = api.create(temperature=0.5)["id"]
    unknown = api.client.patch(f"/conversations/{cid}", json={"settings": {"colour": "blue"}})
    assert unknown.status_code == 422
    assert unknown.json()["error"].startswith("Invalid request: settings.colour:")
    invalid = api.client.patch(f"/conversations/{cid}", json={"settings": {"temperature": 5}})
    assert invalid.status_code == 422
    assert "settings.temperature" in invalid.json()["error"]
    assert "less than or equal to 2" in invalid.json()["error"]
    assert api.client.get(f"/conversations/{cid}").json()["settings"]["temperature"] == 0.5


def test_a_patch_keeps_what_the_window_wrote_and_an_open_session_sees_it(
        api: RunningApi) -> None:
    cid = api.create(temperature=0.5)["id"]
    api.client.post(f"/conversations/{cid}/messages", json={"content": "hello"})  # opens it
    api.store.patch_settings(cid, {"system_prompt": "Be brief."})  # the window, meanwhile
    patched = api.client.patch(f"/conversations/{cid}",
                               json={"title": "Renamed", "settings": {"confirm_tools": False,
                                                                      "temperature": None}})
    assert patched.status_code == 200, patched.text
    body = patched.json()
    assert body["title"] == "Renamed" and body["confirm_tools"] is False
    assert body["settings"]["system_prompt"] == "Be brief."
    assert "temperature" not in body["settings"]
    settings_events = [e for e in api.events(cid) if e["type"] == "settings"]
    assert settings_events[-1]["data"] == {"changed": ["confirm_tools", "temperature"],
                                           "title_changed": True}


def test_the_permission_mode_is_a_setting_and_bypass_needs_the_sandbox(
        api: RunningApi, bubblewrap: None) -> None:
    cid = api.create(sandbox="off")["id"]
    refused = api.client.patch(f"/conversations/{cid}",
                               json={"settings": {"permission_mode": "bypassPermissions"}})
    assert refused.status_code == 422
    assert "needs the command sandbox" in refused.json()["error"]
    unknown = api.client.patch(f"/conversations/{cid}",
                               json={"settings": {"permission_mode": "yolo"}})
    assert unknown.status_code == 422 and "settings.permission_mode" in unknown.json()["error"]
    planned = api.client.patch(f"/conversations/{cid}",
                               json={"settings": {"permission_mode": "plan"}})
    assert planned.status_code == 200 and planned.json()["settings"]["permission_mode"] == "plan"
    fine = api.client.patch(f"/conversations/{cid}", json={"settings": {
        "sandbox": "workdir", "permission_mode": "bypassPermissions"}})
    assert fine.status_code == 200, fine.text
    created = api.client.post("/conversations", json={"settings": {
        "sandbox": "off", "permission_mode": "bypassPermissions"}})
    assert created.status_code == 422 and created.json()["code"] == "permission_mode"
