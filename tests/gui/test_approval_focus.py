"""After an answer in the Approvals dock, typing goes on in the message box."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.testing import script


@pytest.mark.parametrize("answer", ["allow", "deny"])
def test_answering_in_the_dock_returns_the_focus_to_the_message_box(
        qtbot: Any, make_window: Any, server: Any, weather: Any, answer: str) -> None:
    window = make_window()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=WAIT_MS)
    background = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Oslo"})]),
                   script.text("Cold."))
    send(qtbot, window, "Weather in Oslo?")
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=WAIT_MS)
    visible = window.new_conversation()  # the request now waits in a background tab
    window.approval_view.focus_approvals()  # Ctrl+Shift+A, as a keyboard user would
    window.tabs.setCurrentWidget(window.tab_for(visible.conversation_id))
    dock = window.approval_dock
    assert dock.isVisible()

    button = dock.allow_button if answer == "allow" else dock.deny_button
    button.setFocus()
    qtbot.waitUntil(button.hasFocus, timeout=WAIT_MS)
    qtbot.keyClick(button, Qt.Key.Key_Space)  # pressed from the keyboard
    wait_idle(qtbot, background)

    composer = window.current_tab().composer
    assert QApplication.focusWidget() is composer, \
        f"the focus went to {QApplication.focusWidget()!r}"
    assert not window.sidebar.search.hasFocus()
