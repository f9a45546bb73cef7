"""``/`` in the window's composer: the command files listed, chosen, expanded, then sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from window_driver import WAIT_MS, use_server, wait_idle

from desktop_agent.testing import script


def test_slash_lists_chooses_expands_and_sends_a_command(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    from PySide6.QtCore import Qt

    folder = tmp_path / "project"
    (folder / ".agents/commands").mkdir(parents=True)
    (folder / ".agents/commands/review.md").write_text(
        "---\ndescription: Review a file for bugs\n---\nReview $ARGUMENTS for bugs.\n",
        encoding="utf-8")
    (folder / ".agents/commands/release.md").write_text("Write the release notes.",
                                                         encoding="utf-8")
    window = make_window()
    controller = use_server(window, server)
    controller.update_settings(workdir=str(folder))
    tab = window.current_tab()
    menu = tab.slash_menu
    tab.composer.setFocus()
    qtbot.keyClicks(tab.composer, "/rev")
    qtbot.waitUntil(menu.is_open, timeout=WAIT_MS)
    assert menu.offered() == ["review"]
    assert "Review a file for bugs" in menu.model.stringList()[0]
    qtbot.keyClick(menu.completer.popup(), Qt.Key.Key_Return)
    assert not menu.is_open()
    assert tab.composer.toPlainText() == "/review "
    qtbot.keyClicks(tab.composer, "app.py")
    qtbot.keyClick(tab.composer, Qt.Key.Key_Return)  # expands, does not send
    qtbot.waitUntil(lambda: tab.composer.toPlainText() == "Review app.py for bugs.",
                    timeout=WAIT_MS)
    assert server.requests == []
    server.enqueue(script.text("Looks fine."))
    qtbot.keyClick(tab.composer, Qt.Key.Key_Return)  # now it is sent, as shown
    wait_idle(qtbot, controller)
    assert server.requests[-1]["messages"][-1]["content"] == "Review app.py for bugs."


def test_a_message_starting_with_a_path_is_sent_as_it_is(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    from PySide6.QtCore import Qt

    folder = tmp_path / "empty"
    folder.mkdir()
    window = make_window()
    controller = use_server(window, server)
    controller.update_settings(workdir=str(folder))
    tab = window.current_tab()
    tab.composer.setFocus()
    qtbot.keyClicks(tab.composer, "/etc/hosts is odd")
    assert not tab.slash_menu.is_open()
    server.enqueue(script.text("Ok."))
    qtbot.keyClick(tab.composer, Qt.Key.Key_Return)
    wait_idle(qtbot, controller)
    assert server.requests[-1]["messages"][-1]["content"] == "/etc/hosts is odd"
