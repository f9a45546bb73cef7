"""Per-conversation settings reach the model; API keys stay out of files; tab handling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.testing import script


def test_conversation_settings_are_sent_with_the_next_turn(qtbot: Any, make_window: Any,
                                                           server: Any, weather: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    dialog = window.open_settings()
    dialog.system_prompt.setPlainText("Answer like a pirate.")
    dialog.temperature.setValue(0.2)
    dialog.max_tokens.setValue(256)
    dialog.tool_boxes["get_weather"].setChecked(False)
    dialog._apply()
    send(qtbot, window, "Hello")
    wait_idle(qtbot, controller)
    request = server.requests[-1]
    assert request["messages"][0] == {"role": "system", "content": "Answer like a pirate."}
    assert request["temperature"] == 0.2 and request["max_tokens"] == 256
    assert "tools" not in request
    assert window.store.get_conversation(controller.conversation_id).settings["tools"] == []


def test_auto_execute_runs_tools_without_asking(qtbot: Any, make_window: Any, server: Any,
                                                weather: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    controller.update_settings(auto_execute=True)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Nice"})]), script.text("Sunny."))
    send(qtbot, window, "Nice?")
    wait_idle(qtbot, controller)
    assert weather.calls == [{"city": "Nice"}]
    assert window.approvals.requests() == []


def test_api_key_is_kept_for_the_session_and_never_written_to_disk(
        qtbot: Any, make_window: Any, server: Any, data_dir: Path, no_keyring: None) -> None:
    from desktop_agent.appdata.secrets import get_secret

    planted = "sk-test-" + "k" * 32
    server.api_key = planted
    window = make_window()
    picker = window.servers.open_server_picker()
    picker.url_edit.setText(server.base_url)
    picker.key_edit.setText(planted)
    qtbot.mouseClick(picker.add_button, Qt.MouseButton.LeftButton)
    assert "kept for this session only" in picker._custom_message.text()
    assert picker.key_edit.text() == ""
    qtbot.waitUntil(lambda: window.catalog.find(server.base_url) is not None
                    and not window.catalog.searching, timeout=WAIT_MS)
    entry = window.catalog.find(server.base_url)
    assert entry.up, entry.error
    assert picker.select_model(server.base_url, "test-model")
    qtbot.mouseClick(picker.use_button, Qt.MouseButton.LeftButton)
    controller = window.current_controller()
    assert controller.settings["api_key_name"] == f"api:{server.base_url}"
    assert get_secret(controller.settings["api_key_name"]) == planted
    send(qtbot, window, "Authenticated hello")
    wait_idle(qtbot, controller)
    assert server.request_headers[-1]["authorization"] == f"Bearer {planted}"
    window.close()
    qtbot.waitUntil(lambda: not window.controllers, timeout=WAIT_MS)
    window.store.close()
    for path in data_dir.rglob("*"):
        if path.is_file():
            assert planted.encode() not in path.read_bytes(), f"the key leaked into {path}"


def test_tabs_open_rename_and_close_with_the_keyboard(qtbot: Any, make_window: Any) -> None:
    window = make_window()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=WAIT_MS)
    assert window.tabs.count() == 1
    qtbot.keyClick(window, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.count() == 2
    controller = window.current_controller()
    controller.rename("Trip planning")
    assert window.tabs.tabText(window.tabs.currentIndex()) == "Trip planning"
    assert window.store.get_conversation(controller.conversation_id).title == "Trip planning"
    qtbot.keyClick(window, Qt.Key.Key_W, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.count() == 1
    qtbot.waitUntil(lambda: not window._closing_tasks, timeout=WAIT_MS)
    # A named conversation is kept; the sidebar opens it again.
    window.sidebar.refresh()
    assert controller.conversation_id in window.sidebar.conversation_ids()
    window.sidebar.open_requested.emit(controller.conversation_id)
    assert window.current_controller().title == "Trip planning"
    window.close_current_tab()
    window.close_current_tab()
    qtbot.waitUntil(lambda: not window._closing_tasks, timeout=WAIT_MS)
    assert window.tabs.count() == 0 and window._stack.currentIndex() == 0


def test_command_limits_are_set_per_conversation_in_its_settings(
        make_window: Any, server: Any) -> None:
    from desktop_agent.session import sandbox_policy

    window = make_window()
    controller = use_server(window, server)
    dialog = window.open_settings()
    dialog.limits_box.boxes["command_processes"].setValue(32)
    dialog.limits_box.boxes["command_memory_mb"].setValue(256)
    dialog._apply()
    stored = window.store.get_conversation(controller.conversation_id).settings
    assert stored["command_processes"] == 32 and stored["command_memory_mb"] == 256
    assert "command_tmp_mb" not in stored  # left at its default: not stored
    limits = sandbox_policy(stored).limits
    assert (limits.processes, limits.memory_mb, limits.tmp_mb) == (32, 256, 512)
    again = window.open_settings()
    assert again.limits_box.boxes["command_processes"].value() == 32
    again.limits_box.boxes["command_processes"].setValue(256)
    again._apply()
    assert "command_processes" not in \
        window.store.get_conversation(controller.conversation_id).settings
