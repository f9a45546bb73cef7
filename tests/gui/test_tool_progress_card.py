"""A tool card shows a running call's progress and the content meant for the person only."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from PySide6.QtCore import Qt
from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.core.tooling.output import ToolOutput
from desktop_agent.core.tooling.progress import report_progress
from desktop_agent.core.tooling.tools import tool
from desktop_agent.testing import script


def _card(window: Any, name: str) -> Any:
    from desktop_agent.gui.transcript.tool_card import ToolCard

    window.current_tab().transcript.flush()
    cards = [c for c in window.current_tab().findChildren(ToolCard) if c.tool_name == name]
    assert cards, f"no card for {name}"
    return cards[-1]


def test_progress_and_person_only_content_on_the_card(qtbot: Any, make_window: Any,
                                                      server: Any) -> None:
    release = threading.Event()

    @tool("long_job", "A job that reports progress", {})
    async def long_job(args: dict[str, Any]) -> ToolOutput:
        report_progress(1, 3, "reading")
        while not release.is_set():
            await asyncio.sleep(0.02)
        report_progress(3, 3)
        return ToolOutput("job finished", user_text="Your report is ready.")

    window = make_window(tools=[long_job])
    controller = use_server(window, server)
    server.enqueue(script.tool_calls([("long_job", {})]), script.text("All done."))
    send(qtbot, window, "Run the job")
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=WAIT_MS)
    qtbot.mouseClick(window.approval_dock.allow_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "1/3 (33%): reading" in _card(window, "long_job")
                    .detail_label.text(), timeout=WAIT_MS)
    release.set()
    wait_idle(qtbot, controller)

    card = _card(window, "long_job")
    assert card.detail_label.text() == "done"
    assert card.output_text == "job finished\n\nFor you: Your report is ready."
    # the model got the result, never the words meant for the person
    tool_message = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert tool_message["content"] == "job finished"
    assert "Your report is ready" not in str(server.requests[1])
    # kept for the person (metadata, not the message), and shown again on reopening
    stored = controller.stored_messages()
    record = next(m for m in stored if m["role"] == "tool")
    assert record["message"]["content"] == "job finished"
    assert record["metadata"]["user_content"] == "Your report is ready."
    from itertools import count

    from desktop_agent.gui.transcript.items import ToolCallPart
    from desktop_agent.gui.transcript.stored_items import items_from_messages

    counter = count()
    parts = [p for item in items_from_messages(stored, lambda: f"k{next(counter)}")
             for p in getattr(item, "parts", []) if isinstance(p, ToolCallPart)]
    assert parts[0].result == "job finished\n\nFor you: Your report is ready."
