"""The window shows AGENTS.md: a mark in the header, its cost and switch in settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.testing import script


def test_agents_md_mark_cost_and_switch(qtbot: Any, make_window: Any, server: Any,
                                        tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    window = make_window()
    controller = use_server(window, server)
    controller.update_settings(workdir=str(folder))
    tab = window.current_tab()
    mark = tab.header.instructions_mark
    assert not mark.isVisible()

    (folder / "AGENTS.md").write_text("Keep answers under ten words.", encoding="utf-8")
    server.enqueue(script.text("Ok."), script.text("Ok."))
    send(qtbot, window, "Hello")
    wait_idle(qtbot, controller)  # a turn's end looks at the folder again
    qtbot.waitUntil(mark.isVisible, timeout=WAIT_MS)
    assert mark.text() == "AGENTS.md"
    assert "Keep answers under ten words." in server.requests[-1]["messages"][0]["content"]

    dialog = window.open_settings()
    box = dialog.context_box.instructions
    assert box.isEnabled() and box.isChecked()
    qtbot.waitUntil(lambda: "tokens)" in box.text(), timeout=WAIT_MS)
    assert "AGENTS.md" in box.text()
    box.setChecked(False)
    dialog._apply()
    qtbot.waitUntil(lambda: not mark.isVisible(), timeout=WAIT_MS)
    send(qtbot, window, "Again")
    wait_idle(qtbot, controller)
    assert "ten words" not in str(server.requests[-1]["messages"])
