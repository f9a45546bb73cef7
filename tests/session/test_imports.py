"""An import is checked against the one settings schema (the window's File > Import path)."""

from __future__ import annotations

import json
from pathlib import Path

from desktop_agent.gui.window.conversation_transfer import import_files
from desktop_agent.store import Store
from desktop_agent.store.export_json import export_json_text


def test_an_imported_setting_the_app_refuses_is_removed_with_a_note(
        store: Store, tmp_path: Path) -> None:
    record = store.create_conversation(title="Old chat", settings={
        "model": "m", "temperature": 0.5, "system_prompt": "Be brief."})
    store.add_message(record.id, {"role": "user", "content": "hi"})
    data = json.loads(export_json_text(store, [record.id]))
    data["conversations"][0]["settings"].update({"temperature": 5, "max_tool_iterations": 1000})
    file = tmp_path / "edited.json"
    file.write_text(json.dumps(data), encoding="utf-8")

    result = import_files(store, [file])
    assert result.ok, result.message
    (imported,) = result.imported
    settings = store.get_conversation(imported.id).settings
    assert "temperature" not in settings and "max_tool_iterations" not in settings
    assert settings["system_prompt"] == "Be brief." and settings["model"] == "m"
    assert "max_tool_iterations, temperature" in result.message
