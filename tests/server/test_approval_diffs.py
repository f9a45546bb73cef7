"""REST: a pending write_file/edit_file approval carries the diff it would make."""

from __future__ import annotations

from server_harness import RunningApi

from desktop_agent.testing import script


def _upload(api: RunningApi, cid: str, path: str, content: bytes) -> None:
    made = api.client.post(f"/conversations/{cid}/files", data={"path": path},
                           files={"file": ("upload.bin", content)})
    assert made.status_code == 201


def test_a_pending_edit_carries_its_diff_and_the_result_keeps_what_changed(
        api: RunningApi, model_server):
    model_server.enqueue(
        script.tool_calls([("edit_file", {"path": "notes.txt", "old_string": "two\n",
                                          "new_string": "2\n2.5\n"})]),
        script.text("Edited."))
    cid = api.create(base_url=model_server.base_url, model="test-model",
                     tools=["edit_file"])["id"]
    _upload(api, cid, "notes.txt", b"one\ntwo\nthree\n")
    api.client.post(f"/conversations/{cid}/run", json={"message": "Edit the notes"})
    asked = api.wait_for_event(cid, lambda e: e["type"] == "approval_requested")
    diff = asked["data"]["diff"]
    assert diff["kind"] == "edit" and diff["counts"] == "+2 \u22121"
    assert diff["problem"] is None
    assert diff["text"] == ("--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,4 @@\n"
                            " one\n-two\n+2\n+2.5\n three\n")
    pending = api.client.get(f"/conversations/{cid}/approvals").json()["approvals"]
    assert pending[0]["diff"] == diff

    call_id = asked["data"]["tool_use_id"]
    api.client.post(f"/conversations/{cid}/approvals/{call_id}/approve")
    api.wait_idle(cid)
    got = api.client.get(f"/conversations/{cid}/files/content", params={"path": "notes.txt"})
    assert got.content == b"one\n2\n2.5\nthree\n"
    stored = api.client.get(f"/conversations/{cid}/messages").json()["messages"]
    tool = next(m for m in stored if m["role"] == "tool")
    change = api.store.get_message(tool["id"]).metadata["file_change"]
    assert (change["path"], change["kind"], change["added"], change["removed"]) == \
        ("notes.txt", "edit", 2, 1)


def test_an_edit_whose_old_text_is_missing_says_so_before_anyone_allows_it(
        api: RunningApi, model_server):
    model_server.enqueue(
        script.tool_calls([("edit_file", {"path": "notes.txt", "old_string": "four",
                                          "new_string": "4"})]),
        script.text("Hm."))
    cid = api.create(base_url=model_server.base_url, model="test-model",
                     tools=["edit_file"])["id"]
    _upload(api, cid, "notes.txt", b"one\ntwo\n")
    api.client.post(f"/conversations/{cid}/run", json={"message": "Edit"})
    asked = api.wait_for_event(cid, lambda e: e["type"] == "approval_requested")
    diff = asked["data"]["diff"]
    assert diff["kind"] is None
    assert diff["problem"] == "old_string was not found in 'notes.txt'; nothing changed"
    assert diff["text"].startswith("This call would fail: old_string was not found")
    api.client.post(f"/conversations/{cid}/approvals/{asked['data']['tool_use_id']}/reject")
    api.wait_idle(cid)


def test_a_new_file_shows_all_added_and_other_tools_carry_no_diff(
        api: RunningApi, model_server):
    model_server.enqueue(
        script.tool_calls([("write_file", {"path": "src/new.py", "content": "a = 1\nb = 2\n"}),
                           ("get_weather", {"city": "Oslo"})]),
        script.text("Done."))
    cid = api.create(base_url=model_server.base_url, model="test-model",
                     tools=["write_file", "get_weather"])["id"]
    api.client.post(f"/conversations/{cid}/run", json={"message": "Write"})
    for name in ("write_file", "get_weather"):  # one reply's calls are asked together
        api.wait_for_event(cid, lambda e, name=name: e["type"] == "approval_requested"
                           and e["data"]["tool_name"] == name)
    pending = api.client.get(f"/conversations/{cid}/approvals").json()["approvals"]
    by_tool = {p["tool_name"]: p for p in pending}
    assert by_tool["get_weather"]["diff"] is None
    written = by_tool["write_file"]["diff"]
    assert written["kind"] == "new" and written["counts"] == "+2 \u22120"
    assert written["text"].startswith("--- /dev/null\n+++ b/src/new.py\n@@ -0,0 +1,2 @@\n")
    for p in pending:
        api.client.post(f"/conversations/{cid}/approvals/{p['tool_use_id']}/reject")
    api.wait_idle(cid)
