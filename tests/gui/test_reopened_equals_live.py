"""A conversation opened after a restart shows what the live window showed before it closed.

Each test plays a turn in the real window, notes everything a person sees of
it (every message's text, every card's header line, each turn's "stopped"
mark, the context meter), restarts the window on the same store and compares.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.testing import script
from desktop_agent.testing.script import Gate

PLAN = [{"step": "Run the tests", "status": "in_progress"},
        {"step": "Fix what fails", "status": "pending"}]
#: Twenty numbered lines, then a pause long enough to be stopped in.
TWENTY_LINES_THEN_WAIT = "for i in $(seq 1 20); do echo line $i; done; sleep 60"


def _seen(window: Any) -> dict[str, Any]:
    """What the visible conversation shows: texts, cards, turn marks, the context meter."""
    from desktop_agent.gui.transcript.assistant_message import AssistantMessageWidget
    from desktop_agent.gui.transcript.tool_card import ToolCard

    tab = window.current_tab()
    tab.transcript.flush()
    return {
        "texts": [tab.transcript.item_text(k) for k in tab.transcript.item_keys()],
        "cards": [(c.tool_name, c.detail_label.text()) for c in tab.findChildren(ToolCard)],
        "turns": [w._status.text() for w in tab.findChildren(AssistantMessageWidget)],
        "context": tab.status_line.context_label.text(),
    }


def _reopened(qtbot: Any, window: Any, make_window: Any) -> dict[str, Any]:
    """Close the window, open it again on the same store, and say what it shows."""
    window.close()
    qtbot.waitUntil(lambda: not window.controllers, timeout=WAIT_MS)
    again = make_window(builtin=True)
    qtbot.waitUntil(lambda: again.current_controller() is not None, timeout=WAIT_MS)
    again.current_tab().ensure_loaded()
    qtbot.waitUntil(lambda: "context —" not in again.current_tab().status_line
                    .context_label.text(), timeout=WAIT_MS)  # its figure, read after paint
    return _seen(again)


def test_a_turn_stopped_between_its_requests_is_still_stopped_after_a_restart(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    window = make_window(builtin=True)
    controller = use_server(window, server)
    controller.update_settings(tools=["update_plan"], workdir=str(work), confirm_tools=False)
    server.enqueue(script.text("Hello; what shall we do?"))
    send(qtbot, window, "hi")
    wait_idle(qtbot, controller)
    # The model sets its plan; its next request is still being read when the person stops.
    hold = threading.Event()
    held = script.text("Running them now.")
    held.steps.insert(0, Gate(hold, timeout=30))
    server.enqueue(script.tool_calls([("update_plan", {"plan": PLAN})],
                                     text_before="My plan:"), held)
    send(qtbot, window, "Run the tests")
    qtbot.waitUntil(lambda: len(server.requests) == 3, timeout=WAIT_MS)
    window.stop_current()
    wait_idle(qtbot, controller)
    hold.set()
    live = _seen(window)
    assert live["turns"][-1] == "· stopped"
    assert live["cards"] == [("update_plan", "builtin · done")]

    assert _reopened(qtbot, window, make_window) == live


def test_a_stopped_command_keeps_its_lines_time_and_the_context_after_a_restart(
        qtbot: Any, make_window: Any, server: Any, tmp_path: Path) -> None:
    from desktop_agent.gui.transcript.tool_card import ToolCard

    work = tmp_path / "work"
    work.mkdir()
    window = make_window(builtin=True)
    controller = use_server(window, server)
    controller.update_settings(tools=["bash"], workdir=str(work), confirm_tools=False)
    server.enqueue(script.tool_calls([("bash", {"command": "seq 1 12"})]),
                   script.text("Twelve lines."),
                   script.tool_calls([("bash", {"command": TWENTY_LINES_THEN_WAIT})]),
                   script.text("never sent"))
    send(qtbot, window, "Count to twelve")
    wait_idle(qtbot, controller)
    send(qtbot, window, "Now the long one")

    def printing() -> bool:
        window.current_tab().transcript.flush()
        cards = [c for c in window.current_tab().findChildren(ToolCard)
                 if c.live_view is not None]
        return bool(cards) and "line 20" in cards[-1].live_view.plain_text()

    qtbot.waitUntil(printing, timeout=WAIT_MS)
    window.stop_current()  # the whole turn, mid-command
    wait_idle(qtbot, controller)
    live = _seen(window)
    finished, stopped = (line for _name, line in live["cards"])
    assert finished.startswith("builtin · done · 12 lines · ")
    assert " · 20 lines · " in stopped
    assert live["turns"][-1] == "· stopped"

    assert _reopened(qtbot, window, make_window) == live
