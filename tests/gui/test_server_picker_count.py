"""The server picker's summary counts every server it shows as up."""

from __future__ import annotations

from typing import Any

from desktop_agent.gui.servers.server_catalog import ModelChoice, ServerCatalog, ServerEntry
from desktop_agent.gui.servers.server_picker import ServerPicker


def test_count_includes_servers_without_a_chat_model(qtbot: Any, store: Any) -> None:
    catalog = ServerCatalog(store)
    picker = ServerPicker(catalog)
    qtbot.addWidget(picker)
    catalog.servers_changed.emit([
        ServerEntry("LM Studio", "http://127.0.0.1:1234/v1", True,
                    (ModelChoice("qwen", 8192),)),
        ServerEntry("vLLM", "http://127.0.0.1:8000/v1", True),
        ServerEntry("Ollama", "http://127.0.0.1:11434/v1", False, error="refused"),
    ])
    assert picker._status.text().startswith("2 server(s) running with 1 chat model(s)")
    catalog.servers_changed.emit([ServerEntry("vLLM", "http://127.0.0.1:8000/v1", True)])
    assert "none has a chat model loaded" in picker._status.text()
