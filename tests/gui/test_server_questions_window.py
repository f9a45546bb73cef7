"""An MCP server's sampling request and form in the window, against the real server-everything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tier_policy import part_missing
from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.testing import script

EVERYTHING = Path(__file__).parents[2] / ".mcp-servers" / "node_modules" / ".bin" \
    / "mcp-server-everything"
SLOW_MS = 120_000  # the server (node) starts on the turn's first tool list


def test_sampling_and_a_form_are_answered_in_the_window(
        qtbot: Any, make_window: Any, server: Any, data_dir: Path) -> None:
    from PySide6.QtWidgets import QCheckBox, QLineEdit

    if not EVERYTHING.exists():
        part_missing(f"{EVERYTHING} not found (bash .ci/install_mcp_servers.sh)")
    (data_dir / "config.json").write_text(json.dumps(
        {"mcpServers": {"ev": {"command": str(EVERYTHING)}}}), encoding="utf-8")
    window = make_window()
    controller = use_server(window, server)
    controller.update_settings(auto_execute=True)
    tab = window.current_tab()
    server.enqueue(
        script.tool_calls([("ev__trigger-sampling-request", {"prompt": "Say hi"})], ids=["c1"]),
        script.text("Hi from the model"),
        script.tool_calls([("ev__trigger-elicitation-request", {})], ids=["c2"]),
        script.text("Done."))
    send(qtbot, window, "Go")
    qtbot.waitUntil(lambda: bool(tab.server_questions), timeout=SLOW_MS)
    [sampling] = tab.server_questions.values()
    assert sampling.isVisible() and sampling.windowTitle() == "ev asks to use the model"
    assert "Say hi" in sampling.findChild(object, "samplingMessages").toPlainText()
    allow = next(b for b in sampling.buttons.buttons() if b.text() == "Allow once")
    allow.click()
    qtbot.waitUntil(lambda: any(d is not sampling for d in tab.server_questions.values()),
                    timeout=WAIT_MS)
    [form] = tab.server_questions.values()
    assert form.windowTitle() == "ev asks for information"
    assert isinstance(form.inputs["check"], QCheckBox)
    accept = next(b for b in form.buttons.buttons() if b.text() == "Accept")
    accept.click()  # the required name is empty: said, and the form stays open
    assert form.isVisible() and "required" in form.problem.text()
    name = form.inputs["name"]
    assert isinstance(name, QLineEdit)
    name.setText("Ada")
    accept.click()
    wait_idle(qtbot, controller)
    assert not tab.server_questions
    results = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert "Hi from the model" in results[0] and '"name": "Ada"' in results[1]
