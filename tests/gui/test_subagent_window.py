"""A delegation card shows its subagent's run live; the subagent's calls are asked in the dock."""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QApplication
from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.testing import script
from desktop_agent.testing.script import Gate, Script


def _card(window: Any, name: str) -> Any:
    from desktop_agent.gui.transcript.tool_card import ToolCard

    window.current_tab().transcript.flush()
    cards = [c for c in window.current_tab().findChildren(ToolCard) if c.tool_name == name]
    return cards[-1] if cards else None


def routed(server: Any, scripts: dict[str, list[Script]]) -> None:
    lock = threading.Lock()

    def respond(body: dict[str, Any]) -> Script:
        who = "checker" if "You are the checker." in (body["messages"][0].get("content")
                                                       or "") else "main"
        with lock:
            return scripts[who].pop(0)

    server.responder = respond


def test_the_delegation_card_shows_the_run_live_and_keeps_it(
        qtbot: Any, make_window: Any, server: Any, data_dir: Path, weather: Any) -> None:
    (data_dir / "config.json").write_text(json.dumps({"agents": {"checker": {
        "description": "Checks the weather.", "prompt": "You are the checker.",
        "tools": ["get_weather"]}}}))
    hold = threading.Event()
    scripts: dict[str, list[Script]] = defaultdict(list)
    scripts["main"] += [script.tool_calls([("delegate", {"agent": "checker",
                                                         "prompt": "Weather in Oslo?"})]),
                        script.text("It is sunny in Oslo, says the checker.")]
    scripts["checker"] += [
        Script([*script.text("Let me look.").steps[:4], Gate(hold, 30),
                *script.tool_calls([("get_weather", {"city": "Oslo"})]).steps[1:]]),
        script.text("Sunny and 21 °C in Oslo.")]
    routed(server, scripts)
    window = make_window()
    controller = use_server(window, server)
    send(qtbot, window, "What's the weather in Oslo?")
    qtbot.waitUntil(lambda: _card(window, "delegate") is not None
                    and _card(window, "delegate").subagent_view is not None, timeout=WAIT_MS)
    panel = _card(window, "delegate").subagent_view
    qtbot.waitUntil(lambda: "Let me look" in panel.run_view.toPlainText(), timeout=WAIT_MS)
    assert panel.expanded and "running…" in panel.detail_label.text()
    assert panel.header_button.text() == "Subagent checker"
    hold.set()
    # the subagent's call is asked in the dock, which says who asks
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not window.approval_dock.isHidden(), timeout=WAIT_MS)
    request = window.approvals.pending()[0]
    assert (request.tool_name, request.agent) == ("get_weather", "checker")
    assert "asked by the subagent “checker”" in window.approval_dock._title.text()
    assert window.statusBar().currentMessage().startswith("The subagent “checker” of “")
    window.approval_dock.allow_once()
    wait_idle(qtbot, controller)
    assert weather.calls == [{"city": "Oslo"}]
    card = _card(window, "delegate")
    qtbot.waitUntil(lambda: "request" in card.subagent_view.detail_label.text(),
                    timeout=WAIT_MS)
    figures = card.subagent_view.detail_label.text()
    assert figures.startswith("test-model · 2 requests") and "tokens" in figures
    assert "✓ get_weather" in card.subagent_view.run_view.toPlainText()
    assert not card.subagent_view.expanded  # folded once it finished
    assert card.output_text.startswith("Sunny and 21 °C in Oslo.")

    # reopened: the card shows the run as it ended, from the store
    conversation = controller.conversation_id
    closing = window.close_tab(window.tabs.indexOf(window.tab_for(conversation)))
    qtbot.waitUntil(closing.done, timeout=WAIT_MS)
    reopened = window.open_conversation(conversation)
    window.current_tab().ensure_loaded()
    QApplication.processEvents()
    card = _card(window, "delegate")
    assert reopened is not None and card is not None and card.subagent_view is not None
    assert card.subagent_view.detail_label.text() == figures
    assert "✓ get_weather" in card.subagent_view.run_view.toPlainText()
