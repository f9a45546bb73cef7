"""Command previews in the real window: the card, Apply, Discard, a conflict, the settings.

A scripted model calls ``bash``; the command runs in real bubblewrap on a real
overlay; the person clicks what a person would on the card.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from window_driver import send, use_server, wait_idle

from desktop_agent.testing import script
from tests.tools.folder_snapshot import snapshot

pytestmark = pytest.mark.usefixtures("bubblewrap", "overlay")

#: Bound on a real preview on a busy machine (a wait, not a timing assertion).
PREVIEW_MS = 120_000


def _project(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hello')\n")
    (root / "src" / "util.py").write_text("def util():\n    return 1\n")
    (root / "notes.md").write_text("mine\n")


def _window(make_window: Any, server: Any, work: Path, **settings: Any) -> tuple[Any, Any]:
    window = make_window(builtin=True)
    controller = use_server(window, server)
    controller.update_settings(tools=["bash"], workdir=str(work),
                               **{"confirm_tools": False, **settings})
    return window, controller


def _card(window: Any) -> Any:
    widget = window.current_tab().transcript
    for key in reversed(widget.item_keys()):
        answer = widget.item_widget(key)
        cards = getattr(answer, "_cards", {})
        for card in cards.values():
            if card.tool_name == "bash":
                return card
    return None


def _panel(qtbot: Any, window: Any) -> Any:
    qtbot.waitUntil(lambda: _card(window) is not None
                    and _card(window).preview_panel is not None, timeout=PREVIEW_MS)
    return _card(window).preview_panel


def _bash_result(server: Any) -> str:
    for request in reversed(server.requests):
        for message in request.get("messages", []):
            if message.get("role") == "tool":
                return str(message["content"])
    return ""


def _start(qtbot: Any, window: Any, server: Any, command: str) -> None:
    server.enqueue(script.tool_calls([("bash", {"command": command})]), script.text("Done."))
    send(qtbot, window, "run the command")


def test_the_card_shows_what_would_change_and_apply_moves_it_into_the_folder(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    _project(work)
    window, controller = _window(make_window, server, work, command_preview="preview")
    before = snapshot(work)
    _start(qtbot, window, server, "rm -rf src && echo made > new.txt && echo ok")
    panel = _panel(qtbot, window)
    assert panel.title.text() == "Would change the folder: creates 1 file, deletes 2"
    assert "ok" in panel.output.toPlainText()
    # A short output all in view, once the card is laid out in the transcript.
    qtbot.waitUntil(lambda: panel.output.isVisible()
                    and panel.output.verticalScrollBar().maximum() == 0, timeout=PREVIEW_MS)
    assert "Nothing has reached the working folder yet." in panel.status.text()
    rows = {panel.tree.topLevelItem(i).text(0): panel.tree.topLevelItem(i).text(1)
            for i in range(panel.tree.topLevelItemCount())}
    assert rows == {"src/": "deleted folder (2 files)", "new.txt": "new"}
    assert panel.diff_view.isVisibleTo(panel) and panel.diff_view.diff().path == "new.txt"
    assert not _card(window).live_view or not _card(window).live_view.isVisibleTo(panel)
    assert snapshot(work) == before
    assert controller.busy  # the call waits for the person
    card = _card(window)  # opened, the command in sight while the person decides
    assert card.expanded and card.arguments_view.isVisibleTo(card)
    assert "rm -rf src" in card.arguments_view.code()

    qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)
    assert not (work / "src").exists() and (work / "new.txt").read_text() == "made\n"
    qtbot.waitUntil(lambda: panel.title.text().startswith("Applied:"), timeout=PREVIEW_MS)
    assert not panel.apply_button.isVisibleTo(panel) and not _card(window).expanded
    assert not panel.details.isVisibleTo(panel)  # folded once decided, one click away
    qtbot.mouseClick(panel.details_button, Qt.MouseButton.LeftButton)
    assert panel.details.isVisibleTo(panel) and panel.tree.topLevelItemCount() == 2
    assert _bash_result(server).rstrip().endswith("preview outcome: applied")
    bar = window.current_tab().files_bar
    qtbot.waitUntil(bar.isVisible, timeout=PREVIEW_MS)  # undo covers it, as any turn


def test_discard_with_a_reason_leaves_the_folder_and_tells_the_model(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    _project(work)
    window, controller = _window(make_window, server, work, command_preview="preview")
    before = snapshot(work)
    _start(qtbot, window, server, "rm -rf src")
    panel = _panel(qtbot, window)
    qtbot.keyClicks(panel.reason, "keep my sources")
    qtbot.mouseClick(panel.discard_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)
    assert snapshot(work) == before
    assert panel.title.text() == "Discarded: deletes 2 files"
    assert _bash_result(server).rstrip().endswith("discarded: keep my sources")


def test_a_file_edited_meanwhile_is_named_and_apply_anyway_overwrites_it(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    _project(work)
    window, controller = _window(make_window, server, work, command_preview="preview")
    _start(qtbot, window, server, "echo agent > notes.md")
    panel = _panel(qtbot, window)
    (work / "notes.md").write_text("my edit\n")
    qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.apply_anyway_button.isVisibleTo(panel), timeout=PREVIEW_MS)
    assert "notes.md changed after the command ran" in panel.problem.text()
    assert (work / "notes.md").read_text() == "my edit\n"
    qtbot.mouseClick(panel.apply_anyway_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)
    assert (work / "notes.md").read_text() == "agent\n"
    assert "overwriting 1 file changed meanwhile" in _bash_result(server)


def test_preview_on_the_approval_card_runs_that_command_on_a_copy(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    _project(work)
    window, controller = _window(make_window, server, work, confirm_tools=True)
    _start(qtbot, window, server, "echo new > new.txt")
    qtbot.waitUntil(lambda: _card(window) is not None
                    and _card(window).approval_panel is not None, timeout=PREVIEW_MS)
    approval = _card(window).approval_panel
    qtbot.waitUntil(lambda: approval.preview_button.isVisibleTo(approval), timeout=PREVIEW_MS)
    qtbot.mouseClick(approval.preview_button, Qt.MouseButton.LeftButton)
    panel = _panel(qtbot, window)
    assert panel.title.text() == "Would change the folder: creates 1 file"
    assert not (work / "new.txt").exists()
    qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)
    assert (work / "new.txt").read_text() == "new\n"


MANY_FILES = ("python3 -c \"import os\n"
              "for p in range(100):\n"
              "    d = f'node_modules/pkg{p}/lib'\n"
              "    os.makedirs(d)\n"
              "    for f in range(100):\n"
              "        open(f'{d}/m{f}.js', 'w').write('module.exports = %d;\\\\n' % f)\n\"")


def test_ten_thousand_files_fold_into_folders_with_totals(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    _project(work)
    window, controller = _window(make_window, server, work, command_preview="preview")
    _start(qtbot, window, server, MANY_FILES)
    panel = _panel(qtbot, window)
    assert panel.title.text() == "Would change the folder: creates 10,000 files"
    assert panel.tree.topLevelItemCount() == 1
    top = panel.tree.topLevelItem(0)
    assert top.text(0) == "node_modules/"
    assert top.text(1) == "new folder; creates 10,000 files" and top.text(2).endswith(" KB")
    # The lone top folder is opened; its 100 folders are not (their rows are made when
    # opened: 10,000 are never all made).
    assert top.isExpanded() and top.childCount() == 100
    first = top.child(0)
    assert first.text(1) == "new folder; creates 100 files"
    assert not first.isExpanded() and first.child(0).text(0) == "\u2026"
    first.setExpanded(True)
    assert first.child(0).text(0) == "lib/" and first.child(0).child(0).text(0) == "\u2026"
    qtbot.mouseClick(panel.discard_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not controller.busy, timeout=PREVIEW_MS)  # 10,000 files removed
    assert not (work / "node_modules").exists()


def test_the_setting_is_in_conversation_settings_and_says_if_previews_work(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    _project(work)
    window, controller = _window(make_window, server, work)
    dialog = window.open_settings()
    box = dialog.commands_box
    # The dialog also asks the model's server about tool calls: let it answer, so no
    # request is cut off when the dialog closes.
    qtbot.waitUntil(lambda: "decided when" not in dialog.tool_call_mode.text(),
                    timeout=PREVIEW_MS)
    assert box.choice.currentText() == "Run on the folder"
    qtbot.waitUntil(lambda: "Apply or Discard" in box.detail.text(), timeout=PREVIEW_MS)
    box.choice.setCurrentIndex(1)
    assert box.choice.currentText() == "Preview changes first"
    dialog._apply()
    assert controller.settings["command_preview"] == "preview"
    controller.update_settings(sandbox="off")
    again = window.open_settings()
    qtbot.waitUntil(lambda: "Previews cannot work here" in again.commands_box.detail.text(),
                    timeout=PREVIEW_MS)
    qtbot.waitUntil(lambda: "decided when" not in again.tool_call_mode.text(),
                    timeout=PREVIEW_MS)
    again.reject()


def test_an_edited_command_is_the_one_previewed(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    _project(work)
    window, controller = _window(make_window, server, work, confirm_tools=True)
    _start(qtbot, window, server, "rm -rf src")
    qtbot.waitUntil(lambda: _card(window) is not None
                    and _card(window).approval_panel is not None, timeout=PREVIEW_MS)
    approval = _card(window).approval_panel
    qtbot.waitUntil(lambda: approval.preview_button.isVisibleTo(approval), timeout=PREVIEW_MS)
    qtbot.mouseClick(approval.edit_button, Qt.MouseButton.LeftButton)
    editor = approval.arguments_editor
    editor.selectAll()
    qtbot.keyClick(editor, Qt.Key.Key_Delete)
    qtbot.keyClicks(editor, '{"command": "rm src/util.py"}')
    qtbot.mouseClick(approval.preview_button, Qt.MouseButton.LeftButton)
    panel = _panel(qtbot, window)
    assert panel.title.text() == "Would change the folder: deletes 1 file"
    assert (work / "src" / "util.py").exists()
    qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)
    assert not (work / "src" / "util.py").exists() and (work / "src" / "app.py").exists()
