"""A tool call's arguments are fixed on its card, where the person reads it.

The real window, the scripted model and the tool that records what it really
ran with: the person clicks *Edit arguments* on the waiting card, types, and
allows there. One edit per request: made on the card it shows in the dock, made
in the dock it shows on the card, and an answer in either place runs it.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt
from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.testing import script


def _waiting_card(qtbot: Any, window: Any) -> Any:
    from desktop_agent.gui.transcript.tool_card import ToolCard

    def card() -> Any:
        window.current_tab().transcript.flush()
        found = [c for c in window.current_tab().findChildren(ToolCard)
                 if c.approval_panel is not None]
        return found[-1] if found else None

    qtbot.waitUntil(lambda: card() is not None, timeout=WAIT_MS)
    return card()


def _retype(qtbot: Any, editor: Any, text: str) -> None:
    """Select all of the editor's text and type ``text`` over it, as a person would."""
    editor.setFocus()
    editor.selectAll()
    qtbot.keyClick(editor, Qt.Key.Key_Delete)
    qtbot.keyClicks(editor, text)


def _ask(qtbot: Any, make_window: Any, server: Any) -> tuple[Any, Any]:
    window = make_window()
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("get_weather", {"city": "Pariss"})]),
                   script.text("It is sunny in Paris."))
    send(qtbot, window, "Weather in Paris?")
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=WAIT_MS)
    return window, controller


def test_a_bad_argument_is_fixed_and_allowed_on_the_card(
        qtbot: Any, make_window: Any, server: Any, weather: Any) -> None:
    window, controller = _ask(qtbot, make_window, server)
    card = _waiting_card(qtbot, window)
    panel = card.approval_panel
    qtbot.waitUntil(panel.edit_button.isVisible, timeout=WAIT_MS)
    assert not panel.arguments_editor.isVisible()

    qtbot.mouseClick(panel.edit_button, Qt.MouseButton.LeftButton)
    assert panel.arguments_editor.isVisible() and panel.arguments_editor.hasFocus()
    assert json.loads(panel.arguments_editor.toPlainText()) == {"city": "Pariss"}

    _retype(qtbot, panel.arguments_editor, '{"city": "Paris"')  # not yet valid
    qtbot.mouseClick(panel.allow_button, Qt.MouseButton.LeftButton)
    assert "not valid JSON" in panel.json_error.text() and panel.json_error.isVisible()
    assert window.approvals.pending() and weather.calls == []  # nothing ran

    qtbot.keyClicks(panel.arguments_editor, "}")
    assert not panel.json_error.isVisible()
    # The dock lists the same request, with the card's edit in its editor.
    assert json.loads(window.approval_dock._arguments.toPlainText()) == {"city": "Paris"}
    qtbot.mouseClick(panel.allow_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)

    assert weather.calls == [{"city": "Paris"}]
    window.current_tab().transcript.flush()
    done = next(c for c in window.current_tab().findChildren(type(card))
                if c.tool_use_id == card.tool_use_id)
    assert done._arguments_label.text() == "Arguments (edited before it ran)"
    assert json.loads(done.arguments_view.code()) == {"city": "Paris"}
    stored = next(m for m in controller.stored_messages() if m["message"].get("tool_calls"))
    assert json.loads(stored["metadata"]["model_arguments"][card.tool_use_id]) == \
        {"city": "Pariss"}


def test_an_edit_in_the_dock_shows_on_the_card_and_the_card_runs_it(
        qtbot: Any, make_window: Any, server: Any, weather: Any) -> None:
    window, controller = _ask(qtbot, make_window, server)
    card = _waiting_card(qtbot, window)
    window.approval_dock.set_arguments_text('{\n  "city": "Paris"\n}')  # typed in the dock
    panel = card.approval_panel
    qtbot.waitUntil(panel.arguments_editor.isVisible, timeout=WAIT_MS)
    assert json.loads(panel.arguments_editor.toPlainText()) == {"city": "Paris"}

    qtbot.mouseClick(panel.allow_button, Qt.MouseButton.LeftButton)  # answered on the card
    wait_idle(qtbot, controller)
    assert weather.calls == [{"city": "Paris"}]


def test_a_file_call_edited_on_its_card_shows_the_diff_of_the_edit(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Any) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "calc.py").write_text("a = 1\nb = 2\n")
    window = make_window(builtin=True)
    controller = use_server(window, server)
    controller.update_settings(tools=["edit_file"], workdir=str(work))
    server.enqueue(script.tool_calls([("edit_file", {"path": "calc.py", "old_string": "b = 2",
                                                     "new_string": "b = 20"})]),
                   script.text("Changed it."))
    send(qtbot, window, "Change b")
    card = _waiting_card(qtbot, window)
    qtbot.waitUntil(lambda: card.preview_view.summary.text() == "Changes calc.py (+1 \u22121).",
                    timeout=WAIT_MS)

    qtbot.mouseClick(card.approval_panel.edit_button, Qt.MouseButton.LeftButton)
    _retype(qtbot, card.approval_panel.arguments_editor, json.dumps(
        {"path": "calc.py", "old_string": "a = 1", "new_string": "a = 10\na2 = 11"}))
    # The diff on the card is worked out again for the edited call.
    qtbot.waitUntil(lambda: card.preview_view.summary.text() == "Changes calc.py (+2 \u22121).",
                    timeout=WAIT_MS)
    qtbot.mouseClick(card.approval_panel.allow_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)
    assert (work / "calc.py").read_text() == "a = 10\na2 = 11\nb = 2\n"
