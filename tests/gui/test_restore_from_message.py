"""A message's "Restore files…": files back to before it, and optionally the conversation.

The real window, a scripted model, the built-in ``write_file`` and real files:
the person opens the menu under an earlier message and picks an entry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox
from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.gui.transcript.message_bubbles import (
    RESTORE_AND_BRANCH,
    RESTORE_FILES,
    UserMessageWidget,
)
from desktop_agent.testing import script


def _write_turn(qtbot: Any, window: Any, controller: Any, server: Any, prompt: str,
                files: dict[str, str]) -> None:
    server.enqueue(script.tool_calls([("write_file", {"path": name, "content": text})
                                      for name, text in files.items()]),
                   script.text("Written."))
    send(qtbot, window, prompt)
    wait_idle(qtbot, controller)


def _message(window: Any, text: str) -> UserMessageWidget:
    view = window.current_tab().transcript
    view.flush()
    for key in view.item_keys():
        widget = view.item_widget(key)
        if isinstance(widget, UserMessageWidget) and widget.plain_text() == text:
            return widget
    raise AssertionError(f"no message {text!r} on screen")


def _choose(qtbot: Any, message: UserMessageWidget, entry: str) -> None:
    """Click "Restore files…" under ``message`` and pick ``entry`` in its menu."""
    assert message.restore_button.isVisible()
    qtbot.mouseClick(message.restore_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(message.restore_menu.isVisible, timeout=WAIT_MS)
    action = next(a for a in message.restore_menu.actions() if a.text() == entry)
    message.restore_menu.hide()
    action.trigger()


def _question(qtbot: Any, tab: Any) -> QMessageBox:
    """The question asked before the restore (it comes once the plan is read)."""
    qtbot.waitUntil(lambda: tab.undo_actions.restore_question is not None
                    and tab.undo_actions.restore_question.isVisible(), timeout=WAIT_MS)
    box: QMessageBox = tab.undo_actions.restore_question
    return box


def _answer(qtbot: Any, tab: Any, button_text: str) -> str:
    """Click ``button_text`` in the question; return what it asked."""
    box = _question(qtbot, tab)
    asked = f"{box.text()}\n{box.informativeText()}"
    button = next(b for b in box.buttons() if b.text() == button_text)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: tab.undo_actions.restore_question is None, timeout=WAIT_MS)
    return asked


def test_restore_files_to_before_an_earlier_message_asks_about_hand_edits_then_branches(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    window = make_window(builtin=True)
    controller = use_server(window, server)
    controller.update_settings(tools=["write_file"], workdir=str(work), confirm_tools=False)
    tab = window.current_tab()

    send(qtbot, window, "hello")  # a turn that changes nothing: no "Restore files…" yet
    server.enqueue(script.text("Hi."))
    wait_idle(qtbot, controller)
    assert not _message(window, "hello").restore_button.isVisible()

    _write_turn(qtbot, window, controller, server, "Write a", {"a.txt": "one\n"})
    _write_turn(qtbot, window, controller, server, "Change a, add b",
                {"a.txt": "two\n", "b.txt": "new\n"})
    assert (work / "a.txt").read_text() == "two\n"
    (work / "b.txt").write_text("my own words\n")  # the person edits b.txt by hand

    # Before "Change a, add b": b.txt was changed by hand since, so the bar asks first.
    qtbot.waitUntil(_message(window, "Change a, add b").restore_button.isVisible,
                    timeout=WAIT_MS)
    _choose(qtbot, _message(window, "Change a, add b"), RESTORE_FILES)
    _answer(qtbot, tab, "Restore 2 files")
    bar = tab.files_bar
    qtbot.waitUntil(bar.overwrite_button.isVisible, timeout=WAIT_MS)
    assert "b.txt" in bar.message.text()
    assert (work / "a.txt").read_text() == "two\n"  # nothing was touched
    assert (work / "b.txt").read_text() == "my own words\n"
    qtbot.mouseClick(bar.overwrite_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bar.undo_button.text() == "Undo this restore", timeout=WAIT_MS)
    assert not (work / "b.txt").exists()
    assert (work / "a.txt").read_text() == "one\n"
    # The conversation itself did not move.
    assert _message(window, "Change a, add b").isVisible()

    # Before "Write a", going back to there too: a.txt is gone, the conversation ends
    # at "hello", and the message waits in the composer to be edited and sent again.
    _choose(qtbot, _message(window, "Write a"), RESTORE_AND_BRANCH)
    _answer(qtbot, tab, "Restore 1 file")
    qtbot.waitUntil(lambda: not (work / "a.txt").exists(), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: tab.composer.toPlainText() == "Write a", timeout=WAIT_MS)
    texts = [tab.transcript.item_text(k) for k in tab.transcript.item_keys()]
    assert "hello" in texts and "Write a" not in texts and "Change a, add b" not in texts
    assert [m.role for m in controller.session.path] == ["user", "assistant"]

    # Sent again, it is a new branch beside the old one (which is kept).
    server.enqueue(script.text("Sure."))
    qtbot.keyClick(tab.composer, Qt.Key.Key_Return)
    wait_idle(qtbot, controller)
    qtbot.waitUntil(lambda: _message(window, "Write a").branches.isVisible(),
                    timeout=WAIT_MS)


def test_restore_files_asks_first_naming_each_file_and_cancel_changes_nothing(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "old.txt").write_text("keep me\n")
    window = make_window(builtin=True)
    controller = use_server(window, server)
    controller.update_settings(tools=["write_file", "bash"], workdir=str(work),
                               confirm_tools=False)
    tab = window.current_tab()
    _write_turn(qtbot, window, controller, server, "Write a", {"a.txt": "one\n"})
    _write_turn(qtbot, window, controller, server, "More",
                {"a.txt": "two\n", "notes.txt": "new\n"})
    server.enqueue(script.tool_calls([("bash", {"command": "rm old.txt"})]), script.text("Gone."))
    send(qtbot, window, "Remove old.txt")
    wait_idle(qtbot, controller)

    message = _message(window, "More")
    qtbot.waitUntil(message.restore_button.isVisible, timeout=WAIT_MS)
    _choose(qtbot, message, RESTORE_FILES)
    asked = _answer(qtbot, tab, "Cancel")
    # The count and the names, as the bar gives them, and what happens to each.
    assert asked.startswith("Restore 3 files to how they were before this message: "
                            "a.txt, notes.txt and old.txt?")
    assert "a.txt: put back as it was" in asked
    assert "notes.txt: removed (created since)" in asked
    assert "old.txt: brought back (deleted since)" in asked
    assert (work / "a.txt").read_text() == "two\n"  # Cancel: nothing was touched
    assert (work / "notes.txt").exists() and not (work / "old.txt").exists()

    _choose(qtbot, message, RESTORE_FILES)
    _answer(qtbot, tab, "Restore 3 files")
    bar = tab.files_bar
    qtbot.waitUntil(lambda: bar.undo_button.text() == "Undo this restore", timeout=WAIT_MS)
    assert (work / "a.txt").read_text() == "one\n"
    assert not (work / "notes.txt").exists()
    assert (work / "old.txt").read_text() == "keep me\n"
    # The bar says what happened to each file, and why.
    assert bar.message.text() == (
        "Put back a.txt as it was before that message. "
        "Brought back old.txt, which was deleted after that message. "
        "Removed notes.txt, which was created after that message.")
