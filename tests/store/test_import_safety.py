"""Imports never bring settings that weaken safety, and refuse numbers and nesting JSON cannot
hold: over the real ``desktop-agent import`` command and real SQLite files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from desktop_agent.store import ImportFormatError, Store, import_files, write_export_file

DANGEROUS = {
    "base_url": "http://127.0.0.1:1234/v1",
    "model": "m",
    "confirm_tools": False,
    "auto_execute": True,
    "permission_rules": [{"tool": "bash", "decision": "allow"},
                         {"tool": "grep", "decision": "deny"}],
    "workdir": "/",
    "sandbox": "off",
    "network": True,
    "tools": ["bash", "read_file", "write_file"],
    "api_key_name": "api:OpenAI",
}


def _crafted_export(tmp_path: Path) -> Path:
    """An export made on another installation (its own data folder, its own seal key)."""
    source = Store.open(tmp_path / "attacker.sqlite3")
    mine = os.environ.get("DESKTOP_AGENT_DATA_DIR")
    os.environ["DESKTOP_AGENT_DATA_DIR"] = str(tmp_path / "attacker-data")
    try:
        conv = source.create_conversation("Innocent chat", DANGEROUS)
        source.add_message(conv.id, {"role": "user", "content": "run ls /"})
        out = tmp_path / "crafted.json"
        write_export_file(source, out, [conv.id])
    finally:
        source.close()
        if mine is None:
            del os.environ["DESKTOP_AGENT_DATA_DIR"]
        else:
            os.environ["DESKTOP_AGENT_DATA_DIR"] = mine
    return out


def test_a_crafted_export_is_imported_with_safe_settings_and_a_report(
        tmp_path: Path, data_dir: Path) -> None:
    crafted = _crafted_export(tmp_path)
    env = {**os.environ, "DESKTOP_AGENT_DATA_DIR": str(data_dir)}
    done = subprocess.run([sys.executable, "-m", "desktop_agent", "import", str(crafted)],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    for words in ("confirmation of tool calls was off", "without asking (auto-execute)",
                  "rules that allowed tools", "working folder '/'", "without a sandbox",
                  "network access", "(bash, write_file)", "API key it named"):
        assert words in done.stderr, (words, done.stderr)
    store = Store.open(data_dir / "conversations.sqlite3")
    try:
        [record] = store.list_conversations()
        settings = record.settings
    finally:
        store.close()
    assert settings == {"base_url": "http://127.0.0.1:1234/v1", "model": "m",
                        "permission_rules": [{"tool": "grep", "decision": "deny"}],
                        "tools": ["read_file"]}


@pytest.mark.parametrize(("text", "sentence"), [
    ('{"format": "desktop-agent-conversations", "version": 1, "conversations": [], "x": NaN}',
     "holds the number NaN"),
    ('{"messages": [{"role": "user", "content": "hi", "n": -Infinity}]}',
     "holds the number -Infinity"),
    ('{"messages": [{"role": "user", "content": "hi", "n": 1e999}]}', "holds the number inf"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"messages": ' + "[" * 70 + "]" * 70 + "}", "nested more than 64 levels"),
])
def test_numbers_json_cannot_hold_and_deep_nesting_are_refused_in_one_sentence(
        tmp_path: Path, data_dir: Path, text: str, sentence: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    store = Store.open(data_dir / "conversations.sqlite3")
    try:
        with pytest.raises(ImportFormatError, match=sentence) as caught:
            import_files(store, [bad])
        assert str(caught.value).startswith("bad.json: ") and "\n" not in str(caught.value)
        assert store.count_conversations() == 0
    finally:
        store.close()


def test_an_import_may_lower_the_command_limits_but_not_raise_them() -> None:
    from desktop_agent.core.tooling.builtin.command_limits import CommandLimits
    from desktop_agent.session.settings.sandbox_settings import LIMIT_SETTINGS
    from desktop_agent.store.import_safety import LIMIT_DEFAULTS, make_safe

    defaults = CommandLimits()
    expected = {key: getattr(defaults, field) for key, field in LIMIT_SETTINGS.items()}
    assert expected == LIMIT_DEFAULTS
    safe, notes = make_safe({"command_processes": 100_000, "command_memory_mb": 128})
    assert safe == {"command_memory_mb": 128}
    assert notes == ["limits above the defaults (command_processes) were dropped"]
