"""Undo this turn, a conflict asked about on the bar, and the Files changed window.

The real window, a scripted model, a real sandboxed ``bash`` and real files:
the person clicks the buttons a person would.
"""

from __future__ import annotations

import base64
import stat
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.testing import script


def _project(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hello')\n")
    (root / "src" / "run.sh").write_text("#!/bin/sh\n")
    (root / "src" / "run.sh").chmod(0o755)
    (root / "notes.md").write_text("mine\n")


def _window_with_bash(make_window: Any, server: Any, work: Path) -> tuple[Any, Any]:
    window = make_window(builtin=True)
    controller = use_server(window, server)
    controller.update_settings(tools=["bash"], workdir=str(work), confirm_tools=False)
    return window, controller


def _turn(qtbot: Any, window: Any, controller: Any, server: Any, command: str) -> None:
    server.enqueue(script.tool_calls([("bash", {"command": command})]), script.text("Done."))
    send(qtbot, window, f"run {command}")
    wait_idle(qtbot, controller)


def test_undo_this_turn_puts_a_deleted_folder_back_and_can_itself_be_undone(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    _project(work)
    window, controller = _window_with_bash(make_window, server, work)
    _turn(qtbot, window, controller, server, "rm -rf src && echo x > new.txt")
    tab = window.current_tab()
    bar = tab.files_bar

    qtbot.waitUntil(bar.isVisible, timeout=WAIT_MS)
    assert not (work / "src").exists()
    assert bar.message.text().startswith("This turn changed 3 files:")
    assert "new.txt" in bar.message.text()
    qtbot.mouseClick(bar.undo_button, Qt.MouseButton.LeftButton)

    qtbot.waitUntil(lambda: (work / "src" / "app.py").exists(), timeout=WAIT_MS)
    assert (work / "src" / "app.py").read_text() == "print('hello')\n"
    assert stat.S_IMODE((work / "src" / "run.sh").stat().st_mode) == 0o755
    assert not (work / "new.txt").exists()
    qtbot.waitUntil(lambda: bar.undo_button.text() == "Undo this restore", timeout=WAIT_MS)
    # What happened to each file, and why (not "Put back 3 files", which read as
    # if new.txt had come back).
    assert bar.message.text() == ("Brought back src/app.py and src/run.sh, which this turn "
                                  "deleted. Removed new.txt, which this turn created.")

    qtbot.mouseClick(bar.undo_button, Qt.MouseButton.LeftButton)  # changed my mind
    qtbot.waitUntil(lambda: (work / "new.txt").exists(), timeout=WAIT_MS)
    assert not (work / "src").exists()
    # The sentence before also names new.txt: wait for this restore's own.
    undone = ("Brought back new.txt, which the restore deleted. Removed src/app.py and "
              "src/run.sh, which the restore created.")
    qtbot.waitUntil(lambda: bar.message.text() == undone, timeout=WAIT_MS)


def test_undoing_a_turn_that_created_a_file_says_it_removed_it(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    _project(work)
    window, controller = _window_with_bash(make_window, server, work)
    _turn(qtbot, window, controller, server, "echo remember > notes.txt")
    bar = window.current_tab().files_bar
    qtbot.waitUntil(bar.isVisible, timeout=WAIT_MS)
    assert bar.message.text() == "This turn changed 1 file: notes.txt."

    qtbot.mouseClick(bar.undo_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bar.undo_button.text() == "Undo this restore", timeout=WAIT_MS)
    assert not (work / "notes.txt").exists()
    assert bar.message.text() == "Removed notes.txt, which this turn created."


def test_a_file_edited_by_hand_is_asked_about_on_the_bar_before_it_is_overwritten(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    _project(work)
    window, controller = _window_with_bash(make_window, server, work)
    _turn(qtbot, window, controller, server, "echo agent > notes.md")
    (work / "notes.md").write_text("agent\nand my own line\n")
    bar = window.current_tab().files_bar

    qtbot.mouseClick(bar.undo_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(bar.overwrite_button.isVisible, timeout=WAIT_MS)
    assert "notes.md" in bar.message.text()
    assert (work / "notes.md").read_text() == "agent\nand my own line\n"

    qtbot.mouseClick(bar.overwrite_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: (work / "notes.md").read_text() == "mine\n", timeout=WAIT_MS)


def test_the_files_changed_window_lists_turns_with_diffs_and_restores_with_a_branch(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    _project(work)
    window, controller = _window_with_bash(make_window, server, work)
    _turn(qtbot, window, controller, server, "echo 'print(1)' > src/app.py")
    _turn(qtbot, window, controller, server, "echo b > b.txt")
    tab = window.current_tab()
    qtbot.mouseClick(tab.files_bar.files_button, Qt.MouseButton.LeftButton)
    panel = tab.undo_actions.files_panel
    qtbot.waitUntil(lambda: panel is not None and panel.tree.topLevelItemCount() == 2,
                    timeout=WAIT_MS)

    newest, oldest = panel.tree.topLevelItem(0), panel.tree.topLevelItem(1)
    assert newest.text(0).startswith("run echo b > b.txt")
    assert oldest.child(0).text(0) == "changed  src/app.py  +1 \u22121"
    panel.tree.setCurrentItem(oldest.child(0))
    assert panel.summary.text() == "Changes src/app.py (+1 \u22121)."
    assert panel.diff_view.diff() is not None

    panel.branch_box.setChecked(True)
    qtbot.mouseClick(panel.restore_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: tab.undo_actions.restore_question is not None, timeout=WAIT_MS)
    question = tab.undo_actions.restore_question
    assert question.text() == ("Restore 2 files to how they were before this "
                               "message: b.txt and src/app.py?")
    yes = next(b for b in question.buttons() if b.text() == "Restore 2 files")
    qtbot.mouseClick(yes, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: (work / "src" / "app.py").read_text() == "print('hello')\n",
                    timeout=WAIT_MS)
    # Back before the first message: the next one starts a new branch (the old one stays).
    qtbot.waitUntil(lambda: controller.session.path == [], timeout=WAIT_MS)
    assert not (work / "b.txt").exists()
    assert controller.is_empty()


def test_the_files_changed_window_drops_its_diffs_when_closed_and_reads_them_when_reopened(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    _project(work)
    window, controller = _window_with_bash(make_window, server, work)
    _turn(qtbot, window, controller, server, "echo 'print(1)' > src/app.py")
    tab = window.current_tab()
    qtbot.mouseClick(tab.files_bar.files_button, Qt.MouseButton.LeftButton)
    panel = tab.undo_actions.files_panel
    qtbot.waitUntil(lambda: panel is not None and panel.tree.topLevelItemCount() == 1,
                    timeout=WAIT_MS)
    assert panel.diff_view.diff() is not None

    panel.close()  # the person closes the window: nothing of its diffs stays
    assert not panel.holds_turns
    assert panel.tree.topLevelItemCount() == 0
    assert panel.diff_view.diff() is None
    assert panel.selected_turn() is None

    _turn(qtbot, window, controller, server, "echo b > b.txt")  # while it is closed
    qtbot.mouseClick(tab.files_bar.files_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.tree.topLevelItemCount() == 2, timeout=WAIT_MS)
    assert panel.holds_turns
    assert panel.tree.topLevelItem(0).text(0).startswith("run echo b > b.txt")
    assert panel.diff_view.diff() is not None


TOKEN = "ghp_WindowDiff+Secret/0123456789abcdef"


def test_a_file_that_holds_a_secret_shows_no_diff_and_says_why(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path,
        no_keyring: None) -> None:
    # issue 47: a secret a command wrote into a file showed in the window's diff views
    from desktop_agent.session import set_conversation_secret

    work = tmp_path / "work"
    _project(work)
    window, controller = _window_with_bash(make_window, server, work)
    set_conversation_secret(controller.conversation_id, "TOKEN", TOKEN)  # this session only
    _turn(qtbot, window, controller, server,
          "printf 'USER=me\\nTOKEN=%s\\n' \"$TOKEN\" > creds.env; "
          "printf %s \"$TOKEN\" | base64 -w 20 > encoded.txt; echo plain > plain.txt")
    assert TOKEN in (work / "creds.env").read_text()  # the command had the secret
    tab = window.current_tab()
    qtbot.waitUntil(tab.files_bar.isVisible, timeout=WAIT_MS)
    qtbot.mouseClick(tab.files_bar.files_button, Qt.MouseButton.LeftButton)
    panel = tab.undo_actions.files_panel
    qtbot.waitUntil(lambda: panel is not None and panel.tree.topLevelItemCount() == 1,
                    timeout=WAIT_MS)

    turn = panel.tree.topLevelItem(0)
    rows = {turn.child(i).text(0).split("  ")[1]: turn.child(i)
            for i in range(turn.childCount())}
    assert set(rows) == {"creds.env", "encoded.txt", "plain.txt"}
    for name in ("creds.env", "encoded.txt"):
        panel.tree.setCurrentItem(rows[name])
        assert panel.diff_view.diff() is None
        assert panel.summary.isVisibleTo(panel)
        assert "could not be checkpointed because it holds a secret" in panel.summary.text()
    panel.tree.setCurrentItem(rows["plain.txt"])
    assert panel.diff_view.diff() is not None
    # nowhere in the panel's rows or words, in any form
    forms = [TOKEN, base64.b64encode(TOKEN.encode()).decode()[:20], TOKEN[:16]]
    shown = " ".join([panel.summary.text(), turn.text(0)]
                     + [row.text(0) for row in rows.values()])
    assert not [form for form in forms if form in shown], shown
