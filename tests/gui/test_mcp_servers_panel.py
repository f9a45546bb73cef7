"""Server → MCP servers…: states, counts, log and level, against the real server-everything."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tier_policy import part_missing
from window_driver import WAIT_MS

EVERYTHING = Path(__file__).parents[2] / ".mcp-servers" / "node_modules" / ".bin" \
    / "mcp-server-everything"
SLOW_MS = 120_000  # node starts the server when the panel first opens


def everything_config(data_dir: Path) -> None:
    """config.json with server-everything as ``ev`` and a server whose program is missing."""
    if not EVERYTHING.exists():
        part_missing(f"{EVERYTHING} not found (bash .ci/install_mcp_servers.sh)")
    (data_dir / "config.json").write_text(json.dumps({"mcpServers": {
        "ev": {"command": str(EVERYTHING)},
        "broken": {"command": str(data_dir / "no-such-program")}}}), encoding="utf-8")


def test_the_panel_shows_each_servers_state_offers_and_log(
        qtbot: Any, make_window: Any, data_dir: Path) -> None:
    everything_config(data_dir)
    window = make_window()
    window.menu_actions.mcp_servers_action.trigger()
    from desktop_agent.gui.servers.mcp_servers_panel import McpServersPanel

    panel = window.findChild(McpServersPanel, "mcpServersPanel")
    assert panel is not None and panel.isVisible()
    qtbot.waitUntil(lambda: panel.servers.count() == 2, timeout=SLOW_MS)
    rows = [panel.servers.item(i).text() for i in range(panel.servers.count())]
    assert rows == ["ev — connected", "broken — failed"]

    panel.servers.setCurrentRow(1)
    assert panel.state.text().startswith("failed: ")
    assert "command not found" in panel.state.text()
    assert panel.offers.text() == "—" and not panel.level.isEnabled()

    panel.servers.setCurrentRow(0)
    assert panel.state.text() == "connected"
    assert panel.transport.text() == "stdio"
    ev = panel.view("ev")
    assert ev is not None and ev.tools > 5 and ev.resources == 7 and ev.templates == 2
    assert panel.offers.text().endswith("7 resources, 2 templates, 4 prompts")

    # a log message at the level chosen in the panel; server-everything sends one every
    # few seconds once its simulated logging is on
    async def start_logging() -> None:
        pool = await window.tools.mcp_pool()
        await pool.call_tool("ev", "toggle-simulated-logging", {})

    qtbot.waitUntil(lambda: not panel.busy(), timeout=WAIT_MS)
    started = asyncio.ensure_future(start_logging())  # what a turn's tool call would do
    qtbot.waitUntil(started.done, timeout=WAIT_MS)
    started.result()
    panel.level.setCurrentIndex(panel.level.findData("debug"))
    panel.level.activated.emit(panel.level.currentIndex())
    qtbot.waitUntil(lambda: panel.view("ev").log_level == "debug", timeout=WAIT_MS)
    qtbot.waitUntil(lambda: panel.log_view.toPlainText().strip() != "", timeout=SLOW_MS)
    first = panel.log_view.toPlainText().splitlines()[0]
    assert ": " in first and first.split()[1].rstrip(":") in (
        "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

    # the same panel is raised again, not a second one
    window.menu_actions.mcp_servers_action.trigger()
    assert len(window.findChildren(McpServersPanel)) == 1
    panel.close()
