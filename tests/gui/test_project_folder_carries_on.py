"""A project's folder is picked once: new conversations from its tab start there, and the
folder menu offers the folders picked lately (after a restart too)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QPoint
from window_driver import WAIT_MS


def _pick(window: Any, folder: Path) -> None:
    """Pick ``folder`` in the visible tab's header, as the folder dialog reports it."""
    window.current_tab().header.folder_chosen.emit(str(folder))


def _workdir(controller: Any) -> str:
    return str(controller.settings.get("workdir"))


def test_a_new_conversation_from_a_tab_starts_in_the_folder_picked_there(
        qtbot: Any, make_window: Any, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    window = make_window()
    first = window.current_controller()
    made_for_first = _workdir(first)
    second = window.new_conversation()  # from a tab in a folder the app made: a new one
    assert _workdir(second) not in ("", made_for_first)
    assert Path(_workdir(second)).name.startswith("Chat ")

    _pick(window, project)
    qtbot.waitUntil(lambda: _workdir(second) == os.path.realpath(project), timeout=WAIT_MS)
    third = window.new_conversation()  # Ctrl+T with the project's tab in front
    assert _workdir(third) == os.path.realpath(project)
    assert window.current_controller() is third
    assert window.current_tab().header.folder_button.full_text().endswith("project")


def test_the_folder_menu_offers_the_folders_picked_lately_even_after_a_restart(
        qtbot: Any, make_window: Any, tmp_path: Path, store: Any) -> None:
    older, newer = tmp_path / "older", tmp_path / "newer"
    older.mkdir()
    newer.mkdir()
    window = make_window()
    header = window.current_tab().header
    assert header.recent_folder_names() == []
    _pick(window, older)
    _pick(window, newer)
    assert header.recent_folder_names() == [str(newer), str(older)]  # newest first

    # One click on a recent folder makes it the conversation's folder.
    controller = window.current_controller()
    button = header.folder_button  # its menu, as the click opens it (without its event loop)
    header.folder_menu.popup(button.mapToGlobal(QPoint(0, button.height())))
    qtbot.waitUntil(header.folder_menu.isVisible, timeout=WAIT_MS)
    action = next(a for a in header.folder_menu.actions() if a.text() == str(older))
    header.folder_menu.hide()
    action.trigger()
    qtbot.waitUntil(lambda: _workdir(controller) == os.path.realpath(older), timeout=WAIT_MS)
    assert header.recent_folder_names() == [str(older), str(newer)]

    window.close()
    reopened = make_window()  # the list is kept with the conversations
    assert reopened.current_tab().header.recent_folder_names() == [str(older), str(newer)]
    newer.rmdir()  # a folder gone since is not offered
    reopened.new_conversation()
    assert reopened.current_tab().header.recent_folder_names() == [str(older)]
