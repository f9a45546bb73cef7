"""The tools config file and the permission rule lists behind the approval dock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from desktop_agent.core.tooling.config import (
    McpServerConfig,
    SecretRef,
    ToolConfig,
    ToolConfigError,
    add_rule,
    always_allow_rule,
    effective_rules,
    parse_tool_config,
    remove_rule,
    resolve_values,
    rules_from_list,
)
from desktop_agent.core.tooling.permissions import PermissionRule, evaluate_rules
from desktop_agent.session.settings.permission_rules import RULES_KEY as CONVERSATION_RULES_KEY
from desktop_agent.session.settings.permission_rules import (
    parse_conversation_rules as conversation_rules,
)
from desktop_agent.session.settings.permission_rules import with_conversation_rules
from desktop_agent.session.tools.config import load_config_file as load_tool_config
from desktop_agent.session.tools.config import save_config_file as save_tool_config
from desktop_agent.session.tools.config import save_global_rule

EXAMPLE = {
    "mcpServers": {
        "time": {"command": "python", "args": ["-m", "mcp_server_time"]},
        "github": {"command": "github-mcp", "env": {"GITHUB_TOKEN": {"secret": "github"},
                                                    "LOG": "debug"}},
        "remote": {"url": "https://example.org/mcp",
                   "headers": {"Authorization": {"secret": "remote"}}, "timeout": 30},
        "off": {"command": "x", "disabled": True},
    },
    "permissions": [
        {"tool": "time__*", "decision": "allow"},
        {"tool": "bash", "decision": "deny", "arguments": {"command": "rm -rf*"}},
    ],
    "theme": "dark",
}


def test_loads_the_usual_shape(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(EXAMPLE))
    config = load_tool_config(path)
    assert list(config.mcp_servers) == ["time", "github", "remote", "off"]
    time = config.mcp_servers["time"]
    assert (time.transport, time.command, time.args) == ("stdio", "python",
                                                         ("-m", "mcp_server_time"))
    github = config.mcp_servers["github"]
    assert github.env == {"GITHUB_TOKEN": SecretRef("github"), "LOG": "debug"}
    assert github.secret_names() == ["github"]
    remote = config.mcp_servers["remote"]
    assert (remote.transport, remote.url, remote.timeout) == ("http", "https://example.org/mcp",
                                                              30.0)
    assert config.mcp_servers["off"].enabled is False
    assert config.permissions[1] == PermissionRule("bash", "deny", {"command": "rm -rf*"})


def test_save_round_trips_and_keeps_other_keys_and_secret_references(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(EXAMPLE))
    config = load_tool_config(path)
    config.permissions = add_rule(config.permissions, always_allow_rule("github__search"))
    save_tool_config(config, path)
    saved = json.loads(path.read_text())
    assert saved["theme"] == "dark"
    assert saved["mcpServers"] == EXAMPLE["mcpServers"] | {
        "remote": {"url": "https://example.org/mcp",
                   "headers": {"Authorization": {"secret": "remote"}}, "timeout": 30.0}}
    assert saved["permissions"][-1] == {"tool": "github__search", "decision": "allow"}
    assert load_tool_config(path).mcp_servers == config.mcp_servers
    assert not list(tmp_path.glob(".config-*"))  # no temp file left behind


def test_missing_or_empty_file_is_an_empty_config(tmp_path: Path) -> None:
    assert load_tool_config(tmp_path / "absent.json") == ToolConfig()
    (tmp_path / "empty.json").write_text("  \n")
    assert load_tool_config(tmp_path / "empty.json") == ToolConfig()


def test_default_path_is_in_the_data_folder(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # The data folder is the app's naming: the session layer's AppConfig knows it,
    # the core's parser is always given a path.
    from desktop_agent.session.tools.config import AppConfig

    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", str(tmp_path))
    app_config = AppConfig()
    save_tool_config(ToolConfig(mcp_servers={"t": McpServerConfig("t", command="x")}),
                     app_config.file)
    assert json.loads((tmp_path / "config.json").read_text())["mcpServers"] == {
        "t": {"command": "x"}}
    assert list(app_config.load().mcp_servers) == ["t"]


def test_invalid_json_names_the_file_and_place_and_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"mcpServers": {\n  "a": {"command": "x",}\n}}')
    with pytest.raises(ToolConfigError, match=r"config.json is not valid JSON \(line 2, column"):
        load_tool_config(path)
    assert path.read_text().startswith('{"mcpServers"')


def test_duplicate_server_name_is_reported_not_last_wins(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"mcpServers": {"ev": {"command": "one"}, "ev": {"command": "two"}}}')
    with pytest.raises(ToolConfigError, match=r"has the key 'ev' more than once"):
        load_tool_config(path)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "must hold a JSON object"),
        ({"mcpServers": []}, "\"mcpServers\" must be an object"),
        ({"mcpServers": {"a": {}}}, "mcpServers.a needs either a \"command\" or a \"url\""),
        ({"mcpServers": {"a": {"command": "x", "url": "http://h"}}}, "has both"),
        ({"mcpServers": {"a": {"command": "x", "args": "-v"}}}, "args must be a list of strings"),
        ({"mcpServers": {"a": {"command": "x", "env": {"K": 3}}}}, "env.K must be a string"),
        ({"mcpServers": {"a": {"url": "ftp://h"}}}, "must be an http"),
        ({"mcpServers": {"a": {"command": "x", "type": "sse"}}}, '"type": "sse" needs a "url"'),
        ({"mcpServers": {"a/b": {"command": "x"}}}, "server names use"),
        ({"mcpServers": {"a": {"command": "x", "timeout": -1}}}, "positive number of seconds"),
        ({"permissions": {"tool": "x"}}, "permissions must be a list"),
        ({"permissions": [{"tool": "x", "decision": "maybe"}]},
         r"permissions\[0\].decision must be"),
        ({"permissions": [{"decision": "allow"}]}, r"permissions\[0\].tool must be"),
        ({"permissions": [{"tool": "x", "decision": "allow", "arguments": {"a": 1}}]},
         "arguments must map"),
    ],
)
def test_malformed_entries_get_a_clear_message(data: object, message: str) -> None:
    with pytest.raises(ToolConfigError, match=message):
        parse_tool_config(data, "config.json")


@pytest.mark.parametrize(
    ("data", "sentence"),
    [
        ({"mcpServers": {"a": {"command": "x", "startupTimeout": True}}},
         "mcpServers.a.startupTimeout must be a positive number of seconds"),
        ({"mcpServers": {"a": {"url": "http://h", "transport": "websocket"}}},
         "mcpServers.a.transport must be \"stdio\", \"http\" or \"sse\": 'websocket' is not "
         "supported; use a command (stdio), a streamable HTTP url, or \"sse\" for the older "
         "HTTP+SSE transport"),
        ({"mcpServers": {"a": {"command": "x", "headers": {"Auth": {"secret": ""}}}}},
         "mcpServers.a.headers.Auth must be a string or {\"secret\": \"<keyring name>\"}"),
        ({"mcpServers": {"a": {"command": "x", "env": ["K=v"]}}},
         "mcpServers.a.env must be an object of names to values"),
        ({"mcpServers": {"a": {"command": "   "}}},
         "mcpServers.a.command must be a non-empty string"),
        ({"mcpServers": {"a": {"command": "x", "disabled": "yes"}}},
         "mcpServers.a.disabled must be true or false"),
        ({"mcpServers": {"a": 3}}, "mcpServers.a must be an object"),
        ({"permissions": [{"tool": "x", "decision": "allow"}, "x"]},
         "permissions[1] must be an object"),
        ({"permissions": [{"tool": "x", "decision": "allow", "read_only": "no"}]},
         "permissions[0].read_only must be true, false or absent"),
    ],
)
def test_a_malformed_file_is_told_in_one_sentence_naming_the_file_and_the_place(
        tmp_path: Path, data: object, sentence: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ToolConfigError) as caught:
        load_tool_config(path)
    assert str(caught.value) == f"{path}: {sentence}"


def test_unknown_keys_in_a_server_entry_are_ignored_and_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="desktop_agent.tool_config"):
        config = parse_tool_config({"mcpServers": {"t": {"command": "x", "autoApprove": ["a"],
                                                         "description": "clock"}}}, "c.json")
    assert config.mcp_servers["t"] == McpServerConfig("t", command="x")
    assert "c.json: mcpServers.t: ignoring unknown keys ['autoApprove']" in caplog.text


def test_secret_references_resolve_at_start_and_missing_ones_are_named() -> None:
    values = {"TOKEN": SecretRef("gh"), "PLAIN": "v"}
    assert resolve_values(values, {"gh": "s3cret"}.get) == {"TOKEN": "s3cret", "PLAIN": "v"}
    with pytest.raises(ToolConfigError, match="the secret 'gh' for TOKEN is not stored") as err:
        resolve_values(values, lambda name: None, server="github")
    assert "github" in str(err.value)


def test_conversation_and_global_rules_combine_deny_first() -> None:
    global_rules = rules_from_list([{"tool": "*", "decision": "allow", "read_only": True},
                                    {"tool": "bash", "decision": "ask"}])
    settings = with_conversation_rules({"model": "m"}, [
        PermissionRule("bash", "deny", {"command": "rm *"}),
        PermissionRule("bash", "allow", {"command": "ls*"}),
    ])
    assert settings["model"] == "m"
    assert settings[CONVERSATION_RULES_KEY][0] == {"tool": "bash", "decision": "deny",
                                                   "arguments": {"command": "rm *"}}
    rules = effective_rules(conversation_rules(settings), global_rules)
    assert evaluate_rules(rules, "bash", {"command": "rm -rf /"}).decision == "deny"
    assert evaluate_rules(rules, "bash", {"command": "ls -l"}).decision == "ask"
    assert evaluate_rules(rules, "read_file", {"path": "a"}, read_only=True).decision == "allow"
    assert evaluate_rules(rules, "write_file", {"path": "a"}).decision is None


def test_always_allow_writes_a_rule_that_matches_exactly_what_was_approved() -> None:
    rule = always_allow_rule("bash", {"command": "ls *.py [x]"}, keys=["command"])
    assert rule.to_dict() == {"tool": "bash", "decision": "allow",
                              "arguments": {"command": "ls [*].py [[]x]"}}
    assert rule.matches("bash", {"command": "ls *.py [x]"}, False)
    assert not rule.matches("bash", {"command": "ls secret.py [x]"}, False)
    whole_tool = always_allow_rule("time__get_current_time")
    assert whole_tool.matches("time__get_current_time", {"timezone": "UTC"}, True)


def test_add_rule_replaces_the_old_decision_and_remove_rule_removes() -> None:
    ask = PermissionRule("github__*", "ask")
    other = PermissionRule("bash", "deny")
    allow = PermissionRule("github__*", "allow")
    rules = add_rule([ask, other], allow)
    assert rules == [other, allow]
    assert remove_rule(rules, other) == [allow]


def test_the_example_config_loads() -> None:
    example = Path(__file__).parents[2] / "examples" / "mcp_config.json"
    config = load_tool_config(example)
    assert config.mcp_servers["time"].enabled
    assert config.mcp_servers["github"].secret_names() == ["mcp:github"]
    assert [r.decision for r in config.permissions] == ["allow", "allow", "deny", "ask"]


def test_always_allow_everywhere_is_saved_to_the_file_keeping_hand_edits(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(EXAMPLE))
    save_global_rule(always_allow_rule("github__search"), path)
    saved = json.loads(path.read_text())
    assert saved["theme"] == "dark"
    assert saved["permissions"][-1] == {"tool": "github__search", "decision": "allow"}
    assert len(saved["permissions"]) == 3
    path.write_text("{broken")
    with pytest.raises(ToolConfigError):
        save_global_rule(always_allow_rule("x"), path)
    assert path.read_text() == "{broken"


def test_an_sse_server_entry_is_read_and_written_back() -> None:
    config = McpServerConfig.from_dict("old", {"url": "http://h/sse", "type": "sse"})
    assert (config.kind, config.transport) == ("sse", "sse")
    assert config.to_dict() == {"url": "http://h/sse", "type": "sse"}
    with pytest.raises(ToolConfigError, match='"type": "sse" needs a "url"'):
        McpServerConfig("x", command="run", kind="sse")
