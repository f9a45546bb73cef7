"""The window and the REST server on one conversation (issue 12, drift 6).

Both open the same SQLite file, as ``desktop-agent`` and ``desktop-agent
serve`` do: the real window (pytest-qt, offscreen) and the real REST app on
uvicorn with its own Store, over real HTTP, against one scripted model server.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.testing import script

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))
from server_harness import RunningApi, start_api


@pytest.fixture
def rest(tmp_path: Path, store: Any, weather: Any) -> Iterator[RunningApi]:
    from desktop_agent.appdata import paths
    from desktop_agent.store import Store

    running = start_api(tmp_path, store=Store.open(paths.database_path()),
                        extra_tools=[weather.build()])
    try:
        yield running
    finally:
        running.stop()
        running.store.close()


def _rest_idle(rest: RunningApi, cid: str) -> bool:
    return bool(rest.client.get(f"/conversations/{cid}").json()["state"] == "idle")


def _run_over_rest(qtbot: Any, rest: RunningApi, cid: str, text: str) -> None:
    started = rest.client.post(f"/conversations/{cid}/run", json={"message": text})
    assert started.status_code == 202, started.text
    qtbot.waitUntil(lambda: _rest_idle(rest, cid), timeout=WAIT_MS)


def test_window_and_rest_take_turns_without_forking_the_tree(
        qtbot: Any, make_window: Any, server: Any, rest: RunningApi, store: Any) -> None:
    server.enqueue(script.text("Reply one."), script.text("Reply two."),
                   script.text("Reply three."))
    window = make_window()
    controller = use_server(window, server)
    cid = controller.conversation_id
    send(qtbot, window, "one")
    wait_idle(qtbot, controller)

    _run_over_rest(qtbot, rest, cid, "two")
    # The open window notices the other process's write and shows it.
    qtbot.waitUntil(lambda: any(m["message"].get("content") == "Reply two."
                                for m in controller.stored_messages()), timeout=WAIT_MS)

    send(qtbot, window, "three")
    wait_idle(qtbot, controller)
    path = store.active_path(cid)
    assert [(r.role, r.message.get("content")) for r in path] == [
        ("user", "one"), ("assistant", "Reply one."), ("user", "two"),
        ("assistant", "Reply two."), ("user", "three"), ("assistant", "Reply three.")]
    assert store.count_messages(cid) == len(path)  # no branch was forked
    # The model saw the REST turn too.
    assert [m["content"] for m in server.requests[2]["messages"] if m["role"] == "user"] \
        == ["one", "two", "three"]


def test_a_window_settings_save_keeps_keys_the_server_wrote(
        qtbot: Any, make_window: Any, server: Any, rest: RunningApi, store: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    cid = controller.conversation_id
    patched = rest.client.patch(f"/conversations/{cid}", json={"settings": {
        "confirm_tools": False, "system_prompt": "Be brief."}})
    assert patched.status_code == 200
    controller.update_settings(temperature=0.3)  # the window's copy predates the PATCH
    settings = store.get_conversation(cid).settings
    assert settings["confirm_tools"] is False and settings["system_prompt"] == "Be brief."
    assert settings["temperature"] == 0.3 and settings["model"] == "test-model"


def test_only_one_front_end_runs_a_turn_at_a_time(
        qtbot: Any, make_window: Any, server: Any, rest: RunningApi, weather: Any,
        store: Any) -> None:
    server.enqueue(script.tool_calls([("get_weather", {"city": "Oslo"})]),
                   script.text("Sunny."), script.text("Later."))
    window = make_window()
    controller = use_server(window, server)
    cid = controller.conversation_id
    send(qtbot, window, "Weather in Oslo?")  # waits in the Approvals dock
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=WAIT_MS)

    busy = rest.client.post(f"/conversations/{cid}/run", json={"message": "Meanwhile?"})
    assert busy.status_code == 409 and busy.json()["code"] == "conversation_busy"
    assert "busy in another window or server" in busy.json()["error"]
    qtbot.mouseClick(window.approval_dock.allow_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)

    _run_over_rest(qtbot, rest, cid, "And later?")
    roles = [r.role for r in store.active_path(cid)]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert weather.calls == [{"city": "Oslo"}]


def test_the_window_is_told_when_a_rest_turn_runs(
        qtbot: Any, make_window: Any, server: Any, rest: RunningApi, store: Any) -> None:
    server.enqueue(script.tool_calls([("read_file", {"path": "notes.txt"})]),
                   script.text("Done."))
    window = make_window()
    controller = use_server(window, server)
    cid = controller.conversation_id
    rest.client.patch(f"/conversations/{cid}", json={"settings": {"tools": ["read_file"]}})
    rest.client.post(f"/conversations/{cid}/run", json={"message": "Read it"})
    asked = rest.wait_for_event(cid, lambda e: e["type"] == "approval_requested")

    with qtbot.waitSignal(controller.error, timeout=WAIT_MS) as shown:
        assert controller.send("Me too") is False
    assert "busy in another window or server" in shown.args[0]
    rest.client.post(f"/conversations/{cid}/approvals/{asked['data']['tool_use_id']}/reject")
    qtbot.waitUntil(lambda: _rest_idle(rest, cid), timeout=WAIT_MS)
    assert "Me too" not in [r.message.get("content") for r in store.active_path(cid)]


def test_one_stored_shape_whichever_front_end_ran_the_turn(
        qtbot: Any, make_window: Any, server: Any, rest: RunningApi, weather: Any,
        store: Any) -> None:
    server.enqueue(script.tool_calls([("get_weather", {"city": "Oslo"})]), script.text("One."),
                   script.tool_calls([("get_weather", {"city": "Rome"})]), script.text("Two."))
    window = make_window()
    controller = use_server(window, server)
    cid = controller.conversation_id
    send(qtbot, window, "Oslo?")
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=WAIT_MS)
    qtbot.mouseClick(window.approval_dock.allow_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)

    rest.client.post(f"/conversations/{cid}/run", json={"message": "Rome?"})
    asked = rest.wait_for_event(cid, lambda e: e["type"] == "approval_requested")
    rest.client.post(f"/conversations/{cid}/approvals/{asked['data']['tool_use_id']}/approve")
    qtbot.waitUntil(lambda: _rest_idle(rest, cid), timeout=WAIT_MS)

    path = store.active_path(cid)
    assert [r.role for r in path] == ["user", "assistant", "tool", "assistant"] * 2
    window_turn, rest_turn = path[:4], path[4:]
    for mine, theirs in zip(window_turn, rest_turn, strict=True):
        assert sorted(mine.metadata) == sorted(theirs.metadata), mine.role
        assert mine.status == theirs.status == "complete"
    assert window_turn[2].metadata["approval"] == rest_turn[2].metadata["approval"] \
        == {"decision": "allow_once"}
