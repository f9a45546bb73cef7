"""File calls on approval cards: the diff before, the diff of what changed after."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.testing import script


def _tool_card(window: Any, name: str) -> Any:
    from desktop_agent.gui.transcript.tool_card import ToolCard

    window.current_tab().transcript.flush()
    cards = [c for c in window.current_tab().findChildren(ToolCard) if c.tool_name == name]
    assert cards, f"no card for {name}"
    return cards[-1]


def _lines(view: Any) -> list[str]:
    view.left.grab()  # paints the rows in view, with their colours
    return list(view.left.row_texts())


def test_an_edit_shows_its_diff_the_dock_follows_edits_and_the_card_keeps_what_changed(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "calc.py").write_text("a = 1\nb = 2\nc = 3\n")
    window = make_window(builtin=True)
    controller = use_server(window, server)
    controller.update_settings(tools=["edit_file"], workdir=str(work))
    server.enqueue(script.tool_calls([("edit_file", {"path": "calc.py", "old_string": "b = 2",
                                                     "new_string": "b = 20"})]),
                   script.text("Changed b."))
    send(qtbot, window, "Change b")
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=WAIT_MS)
    dock = window.approval_dock

    card = _tool_card(window, "edit_file")
    qtbot.waitUntil(lambda: card.preview_view.isVisible() and card.preview_view.rows_shown > 0,
                    timeout=WAIT_MS)
    view = card.preview_view
    assert view.counts.text().count("+1") == 1 and "\u22121" in view.counts.text()
    assert view.summary.text() == "Changes calc.py (+1 \u22121)."
    shown = _lines(view)
    assert shown[0] == "@@ -1,3 +1,3 @@"
    # Both line numbers, the sign and the code, as a person reads a diff.
    assert [line.split() for line in shown[1:]] == [
        ["1", "1", "a", "=", "1"], ["2", "-", "b", "=", "2"], ["2", "+", "b", "=", "20"],
        ["3", "3", "c", "=", "3"]]

    # The dock shows the same diff; editing the arguments works it out again.
    assert dock.diff_view.summary.text() == "Changes calc.py (+1 \u22121)."
    dock.set_arguments_text(json.dumps({"path": "calc.py", "old_string": "b = 2",
                                        "new_string": "b = 2\nb2 = 4"}))
    qtbot.waitUntil(lambda: dock.diff_view.summary.text() == "Changes calc.py (+1 \u22120).",
                    timeout=WAIT_MS)
    dock.set_arguments_text(json.dumps({"path": "calc.py", "old_string": "z = 9",
                                        "new_string": "z = 10"}))
    qtbot.waitUntil(lambda: "old_string was not found in 'calc.py'"
                    in dock.diff_view.summary.text(), timeout=WAIT_MS)
    assert "Would fail" in dock.diff_view.counts.text()
    dock.set_arguments_text(json.dumps({"path": "calc.py", "old_string": "b = 2",
                                        "new_string": "b = 2\nb2 = 4"}))
    qtbot.waitUntil(lambda: not dock.preview_pending() and dock.diff_view.diff() is not None,
                    timeout=WAIT_MS)
    dock.allow_once()
    wait_idle(qtbot, controller)

    assert (work / "calc.py").read_text() == "a = 1\nb = 2\nb2 = 4\nc = 3\n"
    qtbot.waitUntil(lambda: _tool_card(window, "edit_file").change_section is not None,
                    timeout=WAIT_MS)
    card = _tool_card(window, "edit_file")
    assert not card.preview_view.isVisible()
    assert not card.change_section.expanded  # kept, folded
    assert "+1 \u22120" in card.change_section.header_button.text()

    # After a restart the card still has it, from the stored result.
    window.close()
    qtbot.waitUntil(lambda: not window.controllers, timeout=WAIT_MS)
    again = make_window(builtin=True)
    qtbot.waitUntil(lambda: again.current_controller() is not None, timeout=WAIT_MS)
    again.current_tab().ensure_loaded()
    qtbot.waitUntil(lambda: _tool_card(again, "edit_file").change_section is not None,
                    timeout=WAIT_MS)
    restored = _tool_card(again, "edit_file")
    restored.change_section.set_expanded(True)
    qtbot.waitUntil(lambda: restored.change_view.rows_shown > 0, timeout=WAIT_MS)
    assert any("b2 = 4" in line for line in _lines(restored.change_view))


def test_arguments_edited_to_another_file_update_the_card_and_its_kept_diff_is_of_that_file(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    from desktop_agent.session import stored_file_change

    work = tmp_path / "work"
    work.mkdir()
    (work / "calc.py").write_text("a = 1\nb = 2\n")
    (work / "other.py").write_text("x = 1\ny = 2\nz = 3\n")
    window = make_window(builtin=True)
    controller = use_server(window, server)
    controller.update_settings(tools=["edit_file"], workdir=str(work))
    server.enqueue(script.tool_calls([("edit_file", {"path": "calc.py", "old_string": "b = 2",
                                                     "new_string": "b = 20"})]),
                   script.text("Changed it."))
    send(qtbot, window, "Change b")
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=WAIT_MS)
    card = _tool_card(window, "edit_file")
    qtbot.waitUntil(lambda: card.preview_view.summary.text() == "Changes calc.py (+1 \u22121).",
                    timeout=WAIT_MS)

    # The person edits the call in the dock: another file, another change. The card
    # in the transcript shows the edited call's diff, not the model's.
    dock = window.approval_dock
    dock.set_arguments_text(json.dumps({"path": "other.py", "old_string": "y = 2",
                                        "new_string": "y = 20\ny2 = 40"}))
    qtbot.waitUntil(lambda: card.preview_view.summary.text() == "Changes other.py (+2 \u22121).",
                    timeout=WAIT_MS)
    assert any("y2 = 40" in line for line in _lines(card.preview_view))
    assert dock.diff_view.summary.text() == "Changes other.py (+2 \u22121)."
    dock.allow_once()
    wait_idle(qtbot, controller)

    assert (work / "other.py").read_text() == "x = 1\ny = 20\ny2 = 40\nz = 3\n"
    assert (work / "calc.py").read_text() == "a = 1\nb = 2\n"
    # What the card keeps (and the store) is the change to the file that was written.
    qtbot.waitUntil(lambda: _tool_card(window, "edit_file").change_section is not None,
                    timeout=WAIT_MS)
    header = _tool_card(window, "edit_file").change_section.header_button.text()
    assert header.startswith("Changed other.py") and "+2 \u22121" in header
    kept = [stored_file_change(r.metadata) for r in controller.session.path if r.role == "tool"]
    assert [(d.path, d.added, d.removed) for d in kept if d is not None] == [("other.py", 2, 1)]


def test_on_a_short_window_the_docks_diff_gets_the_room_and_the_arguments_fold_away(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    from PySide6.QtCore import Qt

    work = tmp_path / "work"
    work.mkdir()
    old = "".join(f"value_{i} = {i}\n" for i in range(12))
    (work / "values.py").write_text(old)
    window = make_window(builtin=True)
    window.resize(1024, 640)
    controller = use_server(window, server)
    controller.update_settings(tools=["edit_file"], workdir=str(work))
    server.enqueue(script.tool_calls([("edit_file", {
        "path": "values.py", "old_string": old, "new_string": old.replace(" = ", " = 10 * ")})]),
        script.text("Scaled."))
    send(qtbot, window, "Scale the values")
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=WAIT_MS)
    dock = window.approval_dock
    dock.show()
    qtbot.waitUntil(lambda: dock.diff_view.rows_shown > 0, timeout=WAIT_MS)
    lines = dock.diff_view.left

    def rows_in_view() -> int:
        return lines.viewport().height() // lines.row_height()

    # The arguments fold behind their header and the description goes: the diff gets the
    # room (it had three rows at this size, under the arguments and the description).
    assert not dock.arguments_toggle.is_open() and not dock._arguments.isVisible()
    assert not dock._description.isVisible()
    qtbot.waitUntil(lambda: rows_in_view() >= 10, timeout=WAIT_MS)
    # One click opens the arguments (still editable); the diff keeps a few rows.
    qtbot.mouseClick(dock.arguments_toggle, Qt.MouseButton.LeftButton)
    assert dock._arguments.isVisible() and dock._arguments.isEnabled()
    qtbot.waitUntil(lambda: rows_in_view() >= 4, timeout=WAIT_MS)
    # Taller, everything shows.
    qtbot.mouseClick(dock.arguments_toggle, Qt.MouseButton.LeftButton)
    dock.arguments_toggle.reset()
    window.resize(1200, 800)
    qtbot.waitUntil(lambda: dock._arguments.isVisible() and dock._description.isVisible(),
                    timeout=WAIT_MS)
    dock.allow_once()
    wait_idle(qtbot, controller)
    assert (work / "values.py").read_text() == old.replace(" = ", " = 10 * ")
