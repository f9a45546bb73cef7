"""Drive the real main window in tests as a person would (imported by the test modules).

These live outside ``conftest.py`` so that test modules can import them by a
name no other test folder uses.
"""

from __future__ import annotations

from typing import Any

WAIT_MS = 10_000


def use_server(window: Any, server: Any, model: str = "test-model") -> Any:
    """Point the visible conversation at the scripted server."""
    controller = window.current_controller() or window.new_conversation()
    window.servers.use_server(controller, server.base_url, model, None, 8192)
    return controller


def send(qtbot: Any, window: Any, text: str) -> None:
    """Type a message in the visible tab and press Enter, as a person would."""
    from PySide6.QtCore import Qt

    tab = window.current_tab()
    tab.composer.setFocus()
    qtbot.keyClicks(tab.composer, text)
    qtbot.keyClick(tab.composer, Qt.Key.Key_Return)


def wait_idle(qtbot: Any, controller: Any) -> None:
    """Wait until the conversation's turn has ended."""
    qtbot.waitUntil(lambda: not controller.busy, timeout=WAIT_MS)


def last_assistant_text(window: Any, controller: Any = None) -> str:
    """The text the transcript shows for the last assistant reply."""
    tab = window.tab_for(controller.conversation_id) if controller else window.current_tab()
    view = tab.transcript
    view.flush()
    for key in reversed(view.item_keys()):
        text = view.item_text(key)
        record = next((r for r in tab.controller.stored_messages() if r["id"] == key), None)
        if record is not None and record["role"] == "assistant":
            return text
    return ""
