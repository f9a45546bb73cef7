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


STEPS = [{"step": "Read the failing test", "status": "completed"},
         {"step": "Fix the parser", "status": "in_progress"},
         {"step": "Run the suite", "status": "pending"}]


def test_the_plan_is_pinned_above_the_composer_and_comes_back_after_a_restart(
        qtbot: Any, make_window: Any, server: Any) -> None:
    window = make_window(builtin=True)
    controller = use_server(window, server)
    tab = window.current_tab()
    panel = tab.plan_panel
    assert not panel.isVisible()
    server.enqueue(script.tool_calls([("update_plan", {"explanation": "Three steps.",
                                                       "plan": STEPS})]),
                   script.text("Working on it."))
    send(qtbot, window, "Fix the parser")
    wait_idle(qtbot, controller)
    qtbot.waitUntil(panel.isVisible, timeout=WAIT_MS)
    assert panel.step_texts() == [(s["status"], s["step"]) for s in STEPS]
    assert panel.toggle.text() == "Plan · 1 of 3 done · now: Fix the parser"
    assert "Three steps." in panel.steps.text()
    # above the composer, in the same column
    assert panel.mapTo(tab, panel.rect().bottomLeft()).y() \
        <= tab.composer_box.mapTo(tab, tab.composer_box.rect().topLeft()).y()
    panel.toggle.click()  # folds to its summary line
    assert not panel.steps.isVisible() and panel.isVisible()

    conversation = controller.conversation_id
    window.close()
    qtbot.waitUntil(lambda: not window.controllers, timeout=WAIT_MS)
    again = make_window(builtin=True)
    reopened = again.tab_for(conversation)
    again.tabs.setCurrentWidget(reopened)
    qtbot.waitUntil(reopened.plan_panel.isVisible, timeout=WAIT_MS)
    assert reopened.plan_panel.step_texts() == [(s["status"], s["step"]) for s in STEPS]
