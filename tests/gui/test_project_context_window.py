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


def ten_thousand_files(root: Path) -> Path:
    """A folder of 10,000 files in 100 folders, one of them the file to find."""
    folder = root / "big"
    for d in range(100):
        sub = folder / f"pkg{d:02d}" / "mod"
        sub.mkdir(parents=True)
        for f in range(100):
            (sub / f"file_{f:03d}.py").write_text("x = 1\n", encoding="utf-8")
    (folder / "pkg42" / "mod" / "file_007.py").unlink()
    (folder / "pkg42" / "mod" / "tokenizer_rules.py").write_text(
        "RULES = ['@-files']\n", encoding="utf-8")
    node = folder / "node_modules" / "left_out"
    node.mkdir(parents=True)
    (node / "tokenizer_rules.py").write_text("not offered\n", encoding="utf-8")
    return folder


def test_at_completes_a_file_in_a_10000_file_folder_and_attaches_it(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    from PySide6.QtCore import Qt

    folder = ten_thousand_files(tmp_path)
    window = make_window()
    controller = use_server(window, server)
    controller.update_settings(workdir=str(folder))
    tab = window.current_tab()
    mentions = tab.file_mentions
    tab.composer.setFocus()
    qtbot.keyClicks(tab.composer, "Read @tokrul")
    qtbot.waitUntil(mentions.is_open, timeout=WAIT_MS)
    assert mentions.index is not None and len(mentions.index.paths) == 10_000
    assert mentions.offered()[0] == "pkg42/mod/tokenizer_rules.py"
    assert not any(p.startswith("node_modules") for p in mentions.offered())

    qtbot.keyClick(mentions.completer.popup(), Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: bool(tab.attachments), timeout=WAIT_MS)
    assert not mentions.is_open()
    assert [a.name for a in tab.attachments] == ["tokenizer_rules.py"]
    assert tab.composer.toPlainText() == "Read "  # the @mention became the attachment
    assert tab.composer_box.chips.isVisible()

    server.enqueue(script.text("Read it."))
    qtbot.keyClick(tab.composer, Qt.Key.Key_Return)  # the list is closed: Enter sends
    wait_idle(qtbot, controller)
    assert "RULES = ['@-files']" in str(server.requests[-1]["messages"][-1]["content"])


def test_esc_closes_the_list_without_stopping_and_a_plain_at_sign_is_text(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    from PySide6.QtCore import Qt

    folder = tmp_path / "small"
    folder.mkdir()
    (folder / "notes.md").write_text("hi", encoding="utf-8")
    window = make_window()
    controller = use_server(window, server)
    controller.update_settings(workdir=str(folder))
    tab = window.current_tab()
    tab.composer.setFocus()
    qtbot.keyClicks(tab.composer, "mail me at me@example")  # not a mention: no space before
    qtbot.wait(50)
    assert not tab.file_mentions.is_open()
    qtbot.keyClicks(tab.composer, " @no")
    qtbot.waitUntil(tab.file_mentions.is_open, timeout=WAIT_MS)
    assert tab.file_mentions.offered() == ["notes.md"]
    qtbot.keyClick(tab.file_mentions.completer.popup(), Qt.Key.Key_Escape)
    assert not tab.file_mentions.is_open()
    assert tab.attachments == []
    assert tab.composer.toPlainText() == "mail me at me@example @no"
    qtbot.keyClicks(tab.composer, "t")  # typing on opens the list again; Tab chooses too
    qtbot.waitUntil(tab.file_mentions.is_open, timeout=WAIT_MS)
    qtbot.keyClick(tab.file_mentions.completer.popup(), Qt.Key.Key_Tab)
    qtbot.waitUntil(lambda: bool(tab.attachments), timeout=WAIT_MS)
    assert [a.name for a in tab.attachments] == ["notes.md"]
    assert tab.composer.toPlainText() == "mail me at me@example "
    assert tab.composer.hasFocus() or not tab.isActiveWindow()


def test_a_plan_set_before_the_page_shown_still_comes_back(
        qtbot: Any, make_window: Any, store: Any) -> None:
    import json

    record = store.create_conversation(title="Long run")
    store.add_message(record.id, {"role": "user", "content": "Fix the parser"})
    call = {"id": "p1", "type": "function",
            "function": {"name": "update_plan", "arguments": json.dumps({"plan": STEPS})}}
    store.add_message(record.id, {"role": "assistant", "content": "", "tool_calls": [call]})
    store.add_message(record.id, {"role": "tool", "tool_call_id": "p1",
                                  "content": "Plan updated"},
                      metadata={"name": "update_plan", "is_error": False})
    for index in range(300):  # 600 messages after it: the plan is pages back
        store.add_message(record.id, {"role": "user", "content": f"Next {index}"})
        store.add_message(record.id, {"role": "assistant", "content": f"Done {index}"})
    window = make_window()
    window.open_conversation(record.id)
    tab = window.tab_for(record.id)
    window.tabs.setCurrentWidget(tab)
    qtbot.waitUntil(tab.plan_panel.isVisible, timeout=WAIT_MS)
    assert tab.plan_panel.step_texts() == [(s["status"], s["step"]) for s in STEPS]
