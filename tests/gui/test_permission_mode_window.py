"""The permission-mode selector in the header, Shift+Tab in the message box, plan approval."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.testing import script


def _card(window: Any, name: str) -> Any:
    from desktop_agent.gui.transcript.tool_card import ToolCard

    window.current_tab().transcript.flush()
    cards = [c for c in window.current_tab().findChildren(ToolCard) if c.tool_name == name]
    assert cards, f"no card for {name}"
    return cards[-1]


def test_the_selector_shows_and_sets_the_mode_and_bypass_is_red(
        qtbot: Any, make_window: Any, server: Any, bubblewrap: None) -> None:
    window = make_window()
    controller = use_server(window, server)
    header = window.current_tab().header
    box = header.mode_box
    assert box.currentText() == "Ask first"
    box.activated.emit(box.findData("plan"))
    assert controller.settings["permission_mode"] == "plan"
    assert box.currentData() == "plan"
    box.activated.emit(box.findData("bypassPermissions"))
    assert controller.settings["permission_mode"] == "bypassPermissions"
    assert box.property("danger") is True
    box.activated.emit(box.findData("default"))
    assert box.property("danger") is False


def test_bypass_without_a_sandbox_is_refused_with_the_reason(
        qtbot: Any, make_window: Any, server: Any, bubblewrap: None) -> None:
    window = make_window()
    controller = use_server(window, server)
    controller.update_settings(sandbox="off")
    header = window.current_tab().header
    told: list[str] = []
    controller.notice.connect(told.append)
    header.mode_box.activated.emit(header.mode_box.findData("bypassPermissions"))
    assert "permission_mode" not in controller.settings
    assert header.mode_box.currentData() == "default"
    assert told and "needs the command sandbox" in told[0]


def test_shift_tab_in_the_message_box_cycles_modes_as_claude_code(
        qtbot: Any, make_window: Any, server: Any) -> None:
    window = make_window()
    controller = use_server(window, server)
    window.show()
    qtbot.waitExposed(window)
    tab = window.current_tab()
    tab.composer.setFocus()
    qtbot.waitUntil(tab.composer.hasFocus, timeout=WAIT_MS)
    seen = []
    for _ in range(4):
        qtbot.keyClick(tab.composer, Qt.Key.Key_Backtab, Qt.KeyboardModifier.ShiftModifier)
        seen.append(controller.settings.get("permission_mode"))
    assert seen == ["acceptEdits", "plan", "default", "acceptEdits"]
    assert tab.header.mode_box.currentData() == "acceptEdits"
    assert tab.composer.hasFocus()  # the text keeps the focus: Shift+Tab is the mode key here


def test_a_plan_is_approved_on_its_card_and_the_header_follows(
        qtbot: Any, make_window: Any, server: Any) -> None:
    server.enqueue(script.tool_calls([("exit_plan_mode", {"plan": "1. Check the weather."})]),
                   script.text("Going ahead."))
    window = make_window()
    controller = use_server(window, server)
    controller.update_settings(permission_mode="plan")
    send(qtbot, window, "Plan it")
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: _card(window, "exit_plan_mode").approval_panel is not None,
                    timeout=WAIT_MS)
    panel = _card(window, "exit_plan_mode").approval_panel
    assert panel.allow_button.text() == "Approve plan"
    assert panel.allow_conversation_button.text() == "Approve, accept edits"
    assert panel.allow_always_button.isHidden()
    qtbot.mouseClick(panel.allow_conversation_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)
    assert controller.settings["permission_mode"] == "acceptEdits"
    qtbot.waitUntil(lambda: window.current_tab().header.mode_box.currentData() == "acceptEdits",
                    timeout=WAIT_MS)


def test_conversation_settings_list_the_hook_commands(
        qtbot: Any, make_window: Any, data_dir: Any) -> None:
    import json

    (data_dir / "config.json").write_text(json.dumps({"hooks": {
        "PreToolUse": [{"matcher": "bash", "hooks": [{"type": "command",
                                                      "command": "./check.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "make lint", "timeout": 30}]}]}}))
    window = make_window()
    dialog = window.open_settings()
    assert dialog is not None
    lines = dialog.hooks_box.lines()
    assert lines[0].startswith("PreToolUse [bash]: ./check.sh")
    assert lines[1].startswith("Stop: make lint") and "30 s" in lines[1]
    dialog.reject()
