"""Settings -> AgentOptions in one place: defaults, extra_body, rules, keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.appdata import secrets
from desktop_agent.session.settings import defaults
from desktop_agent.session.settings.conversation_settings import (
    ConversationSettings,
    SettingsError,
    asks_before_tools,
    checked_changes,
    stored_settings,
)
from desktop_agent.session.tools.config import AppConfig
from desktop_agent.session.tools.tool_catalog import ToolCatalog
from desktop_agent.session.turn.options import MissingApiKeyError, SessionEnvironment, build_options

BASE = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}


def write_config(data_dir: Path, config: dict[str, object]) -> None:
    (data_dir / "config.json").write_text(json.dumps(config), encoding="utf-8")


def environment(data_dir: Path) -> SessionEnvironment:
    config = AppConfig(data_dir / "config.json")
    return SessionEnvironment(tools=ToolCatalog(config=config, workdirs_root=data_dir / "w"),
                              config=config)


async def test_one_set_of_defaults(data_dir: Path) -> None:
    options = await build_options("c1", BASE, environment(data_dir), None)
    assert options.max_tool_iterations == defaults.DEFAULT_MAX_TOOL_ITERATIONS == 10
    assert options.max_tokens == 4096 and options.temperature == 0.7
    assert {"read_file", "bash"} <= {t.name for t in options.tools}  # no key: every tool
    assert options.api_key == defaults.NO_API_KEY
    assert options.approval_timeout == defaults.DEFAULT_APPROVAL_TIMEOUT + 30
    none = await build_options("c1", {**BASE, "tools": []}, environment(data_dir), None)
    assert none.tools == []
    assert options.tool_decision is False  # the model is not asked first unless chosen
    asked = await build_options("c1", {**BASE, "tool_decision": True}, environment(data_dir),
                                None)
    assert asked.tool_decision is True


async def test_extra_body_rules_and_secrets_reach_the_options(data_dir: Path) -> None:
    write_config(data_dir, {"permissions": [{"tool": "bash", "decision": "deny"}]})
    secrets.set_secret("conv:c2:GITHUB_TOKEN", "ghp-secret-value-1")
    settings = {**BASE, "extra_body": {"cache_prompt": True}, "max_tool_iterations": 3,
                "permission_rules": [{"tool": "read_file", "decision": "allow"}]}
    options = await build_options("c2", settings, environment(data_dir), None)
    assert dict(options.extra_body) == {"cache_prompt": True}
    assert options.max_tool_iterations == 3
    assert [(r.tool, r.decision) for r in options.permission_rules] == [
        ("read_file", "allow"), ("bash", "deny"), ("update_plan", "allow")]
    assert "ghp-secret-value-1" in options.secret_values


async def test_a_named_key_that_is_not_stored_is_a_clear_error(data_dir: Path) -> None:
    with pytest.raises(MissingApiKeyError, match="No API key named “api:gone”"):
        await build_options("c3", {**BASE, "api_key_name": "api:gone"},
                            environment(data_dir), None)
    secrets.set_secret("api:here", "sk-test-here-123456")
    options = await build_options("c3", {**BASE, "api_key_name": "api:here"},
                                  environment(data_dir), None)
    assert options.api_key == "sk-test-here-123456"


def test_the_schema_checks_known_keys_and_keeps_unknown_ones() -> None:
    assert stored_settings({**BASE, "n_ctx": 4096})["n_ctx"] == 4096
    with pytest.raises(SettingsError, match="temperature"):
        checked_changes({"temperature": 5})
    with pytest.raises(SettingsError, match="sandbox"):
        stored_settings({"sandbox": "none"})
    assert checked_changes({"temperature": None}) == {"temperature": None}
    assert "extra_body" in ConversationSettings.model_fields


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/v1", "http://host name/v1", "http://",
                                 "127.0.0.1:1234/v1", "http://127.0.0.1/v1\n"])
def test_a_server_address_must_be_a_web_address_without_spaces(url: str) -> None:
    with pytest.raises(SettingsError, match=r"'base_url'.*http:// or https://"):
        checked_changes({"base_url": url})
    assert checked_changes({"base_url": "https://llm.example:8443/v1"})
    # the REST API's schema still shows the rule
    schema = ConversationSettings.model_json_schema()["properties"]["base_url"]
    assert schema["pattern"] == r"^https?://[^\s]+$"


def test_confirmation_mode_has_one_meaning() -> None:
    assert asks_before_tools({})
    assert not asks_before_tools({"auto_execute": True})
    assert not asks_before_tools({"confirm_tools": False})
    assert asks_before_tools({"confirm_tools": True, "auto_execute": True})


async def test_mcp_tool_names_are_known_by_their_configured_server(data_dir: Path) -> None:
    write_config(data_dir, {"mcpServers": {"time": {"command": "no-such-server"}}})
    catalog = environment(data_dir).tools
    assert catalog.unknown(["time__now", "read_file", "other__x"]) == ["other__x"]


def test_the_store_refuses_what_the_settings_schema_refuses(store: Any) -> None:
    # The session layer installs its schema in the store: a window, a server or the
    # CLI writing straight through the store cannot save a value the app refuses.
    import desktop_agent.session.settings.conversation_settings  # noqa: F401 - installs the schema

    record = store.create_conversation(title="Typed", settings={"temperature": 0.5})
    with pytest.raises(ValueError, match=r"temperature.*nothing was saved"):
        store.patch_settings(record.id, {"temperature": 7})
    with pytest.raises(ValueError, match="constrained_tool_calls"):
        store.patch_settings(record.id, {"constrained_tool_calls": "sometimes"})
    with pytest.raises(ValueError, match="tool_decision"):
        store.patch_settings(record.id, {"tool_decision": "sometimes"})
    with pytest.raises(ValueError, match="max_tool_iterations"):
        store.create_conversation(title="Bad", settings={"max_tool_iterations": 1000})
    assert store.get_conversation(record.id).settings == {"temperature": 0.5}
    # a key the patch does not touch is not checked again (an older file's value)
    assert store.patch_settings(record.id, {"model": "m"}) == {"temperature": 0.5, "model": "m"}
