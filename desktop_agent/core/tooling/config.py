"""An MCP tools config (servers and permission rules) as data, and rule lists.

The shape is the one people already write for other MCP clients::

    {
      "mcpServers": {
        "time":   {"command": "uvx", "args": ["mcp-server-time"]},
        "github": {"command": "github-mcp", "env": {"GITHUB_TOKEN": {"secret": "github"}}},
        "remote": {"url": "http://127.0.0.1:8000/mcp",
                   "headers": {"Authorization": {"secret": "remote-token"}}}
      },
      "permissions": [{"tool": "time__*", "decision": "allow"}]
    }

An env or header value may be a plain string or ``{"secret": "<name>"}``;
secrets are looked up through the caller's lookup only when the server starts,
so the config never holds them. Keys this module does not know are kept in
:attr:`ToolConfig.extra`. Malformed data raises :class:`ToolConfigError`
naming the place.

Where such a config lives, how it is read and written, and where a
conversation keeps its own rules are the app's business
(:mod:`desktop_agent.session.config`); the SDK only parses and applies.
:func:`effective_rules` joins rule lists (the deny > ask > allow order is
applied by :func:`~desktop_agent.core.tooling.permissions.evaluate_rules`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from desktop_agent.core.errors import ConfigurationError
from desktop_agent.core.tooling.permissions import PermissionRule

log = logging.getLogger("desktop_agent.tool_config")


_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$")
_SERVER_KEYS = {"command", "args", "env", "cwd", "url", "headers", "type", "transport",
                "disabled", "enabled", "timeout", "startupTimeout", "description", "trusted"}


class ToolConfigError(ConfigurationError):
    """The tools config (file or settings) is malformed; the message says where."""


@dataclass(frozen=True, slots=True)
class SecretRef:
    """An env or header value kept in the keyring under ``name``."""

    name: str


EnvValue = str | SecretRef
SecretLookup = Callable[[str], "str | None"]


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """How to reach one MCP server: a command (stdio) or a URL (streamable HTTP).

    Attributes:
        name: The server's name; its tools are called ``<name>__<tool>``.
        command: Program to run for a stdio server.
        args: Its arguments.
        env: Extra environment variables (values may be :class:`SecretRef`).
        cwd: Folder to start the command in.
        url: Endpoint of a streamable HTTP server.
        headers: HTTP headers for ``url`` (values may be :class:`SecretRef`).
        enabled: False keeps the entry but never starts it.
        timeout: Seconds one tool call may take (None: the pool's default).
        startup_timeout: Seconds to start and list tools (None: the pool's default).
        trusted: The person vouches for this server: its tools' ``readOnlyHint``
            is believed (a ``read_only: true`` allow rule may then run them).
            Untrusted (the default), the hint is only a hint: the MCP spec says
            clients must not rely on it from servers they do not trust.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, EnvValue] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, EnvValue] = field(default_factory=dict)
    enabled: bool = True
    timeout: float | None = None
    startup_timeout: float | None = None
    trusted: bool = False

    def __post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise ToolConfigError(
                f"MCP server {self.name!r} needs either a \"command\" or a \"url\" (not both)"
            )

    @property
    def transport(self) -> str:
        """``"stdio"`` or ``"http"``."""
        return "stdio" if self.command is not None else "http"

    def secret_names(self) -> list[str]:
        """Keyring names this server needs at start."""
        values = [*self.env.values(), *self.headers.values()]
        return [v.name for v in values if isinstance(v, SecretRef)]

    def to_dict(self) -> dict[str, Any]:
        """The entry as written under ``mcpServers`` (secrets stay references)."""
        data: dict[str, Any] = {}
        if self.command is not None:
            data["command"] = self.command
            if self.args:
                data["args"] = list(self.args)
            if self.cwd:
                data["cwd"] = self.cwd
            if self.env:
                data["env"] = _values_to_json(self.env)
        else:
            data["url"] = self.url
            if self.headers:
                data["headers"] = _values_to_json(self.headers)
        if not self.enabled:
            data["disabled"] = True
        if self.timeout is not None:
            data["timeout"] = self.timeout
        if self.startup_timeout is not None:
            data["startupTimeout"] = self.startup_timeout
        if self.trusted:
            data["trusted"] = True
        return data

    @classmethod
    def from_dict(cls, name: str, data: Any, where: str = "config") -> McpServerConfig:
        """Read one ``mcpServers`` entry; raise :class:`ToolConfigError` saying what is wrong."""
        here = f"{where}: mcpServers.{name}"
        if not isinstance(name, str) or not _SERVER_NAME.match(name):
            raise ToolConfigError(
                f"{here}: server names use letters, digits, spaces, '.', '_' or '-' "
                "(at most 64 characters)"
            )
        if not isinstance(data, Mapping):
            raise ToolConfigError(f"{here} must be an object")
        unknown = set(data) - _SERVER_KEYS
        if unknown:
            log.info("%s: ignoring unknown keys %s", here, sorted(unknown))
        kind = data.get("type", data.get("transport"))
        if kind not in (None, "stdio", "http", "streamable-http", "streamableHttp"):
            raise ToolConfigError(
                f"{here}: transport {kind!r} is not supported; use a command (stdio) "
                "or a streamable HTTP url"
            )
        command = data.get("command")
        url = data.get("url")
        if command is not None and (not isinstance(command, str) or not command.strip()):
            raise ToolConfigError(f"{here}.command must be a non-empty string")
        if url is not None and (not isinstance(url, str)
                                or not url.startswith(("http://", "https://"))):
            raise ToolConfigError(f"{here}.url must be an http:// or https:// address")
        if command is None and url is None:
            raise ToolConfigError(f"{here} needs either a \"command\" or a \"url\"")
        if command is not None and url is not None:
            raise ToolConfigError(f"{here} has both \"command\" and \"url\"; keep one")
        args = data.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ToolConfigError(f"{here}.args must be a list of strings")
        cwd = data.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ToolConfigError(f"{here}.cwd must be a string")
        disabled = data.get("disabled", False)
        enabled = data.get("enabled", True)
        if not isinstance(disabled, bool) or not isinstance(enabled, bool):
            raise ToolConfigError(f"{here}: \"disabled\" / \"enabled\" must be true or false")
        trusted = data.get("trusted", False)
        if not isinstance(trusted, bool):
            raise ToolConfigError(f"{here}.trusted must be true or false")
        return cls(
            name=name,
            command=command,
            args=tuple(args),
            env=_values_from_json(data.get("env", {}), f"{here}.env"),
            cwd=cwd,
            url=url,
            headers=_values_from_json(data.get("headers", {}), f"{here}.headers"),
            enabled=enabled and not disabled,
            timeout=_seconds(data.get("timeout"), f"{here}.timeout"),
            startup_timeout=_seconds(data.get("startupTimeout"), f"{here}.startupTimeout"),
            trusted=trusted,
        )


def _seconds(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ToolConfigError(f"{where} must be a positive number of seconds")
    return float(value)


def _values_from_json(data: Any, where: str) -> dict[str, EnvValue]:
    if not isinstance(data, Mapping):
        raise ToolConfigError(f"{where} must be an object of names to values")
    values: dict[str, EnvValue] = {}
    for key, value in data.items():
        if isinstance(value, str):
            values[str(key)] = value
        elif (isinstance(value, Mapping) and set(value) == {"secret"}
              and isinstance(value["secret"], str) and value["secret"]):
            values[str(key)] = SecretRef(value["secret"])
        else:
            raise ToolConfigError(
                f"{where}.{key} must be a string or {{\"secret\": \"<keyring name>\"}}"
            )
    return values


def _values_to_json(values: Mapping[str, EnvValue]) -> dict[str, Any]:
    return {k: ({"secret": v.name} if isinstance(v, SecretRef) else v) for k, v in values.items()}


def resolve_values(
    values: Mapping[str, EnvValue], lookup: SecretLookup | None = None, *, server: str = ""
) -> dict[str, str]:
    """Replace secret references by their values from the keyring.

    Args:
        values: Env or header values from a server entry.
        lookup: ``name -> value or None``: the app's secret store, which the
            core does not know (the session layer passes the keyring's).
        server: The server's name, for the error message.

    Raises:
        ToolConfigError: A referenced secret is not stored (the message names
            the secret, never a value).
    """
    resolved: dict[str, str] = {}
    for key, value in values.items():
        if isinstance(value, SecretRef):
            secret = lookup(value.name) if lookup is not None else None
            if secret is None:
                raise ToolConfigError(
                    f"MCP server {server!r}: the secret {value.name!r} for {key} is not stored; "
                    "add it in the settings"
                )
            resolved[key] = secret
        else:
            resolved[key] = value
    return resolved


@dataclass
class ToolConfig:
    """The parsed tools config.

    Attributes:
        mcp_servers: Servers by name, in file order.
        permissions: The global permission rules.
        extra: Top-level keys this module does not own, kept for saving.
    """

    mcp_servers: dict[str, McpServerConfig] = field(default_factory=dict)
    permissions: list[PermissionRule] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The whole file as JSON-ready data."""
        data = dict(self.extra)
        data["mcpServers"] = {name: server.to_dict() for name, server in self.mcp_servers.items()}
        data["permissions"] = rules_to_list(self.permissions)
        return data


def parse_tool_config(data: Any, where: str = "config") -> ToolConfig:
    """Build a :class:`ToolConfig` from decoded JSON; ``where`` prefixes error messages."""
    if not isinstance(data, Mapping):
        raise ToolConfigError(f"{where} must hold a JSON object")
    servers_data = data.get("mcpServers", {})
    if servers_data is None:
        servers_data = {}
    if not isinstance(servers_data, Mapping):
        raise ToolConfigError(f"{where}: \"mcpServers\" must be an object of server entries")
    servers = {name: McpServerConfig.from_dict(name, entry, where)
               for name, entry in servers_data.items()}
    rules = rules_from_list(data.get("permissions", []) or [], f"{where}: permissions")
    extra = {k: v for k, v in data.items() if k not in ("mcpServers", "permissions")}
    return ToolConfig(mcp_servers=servers, permissions=rules, extra=extra)


# -- permission rule lists ---------------------------------------------------------------------

def rule_from_dict(data: Any, where: str = "rule") -> PermissionRule:
    """One rule dict (``tool``, ``decision``, optional ``arguments`` and ``read_only``)."""
    if not isinstance(data, Mapping):
        raise ToolConfigError(f"{where} must be an object")
    tool_name = data.get("tool")
    if not isinstance(tool_name, str) or not tool_name:
        raise ToolConfigError(f"{where}.tool must be a tool name or glob")
    decision = data.get("decision")
    if decision not in ("allow", "ask", "deny"):
        raise ToolConfigError(f"{where}.decision must be \"allow\", \"ask\" or \"deny\"")
    arguments = data.get("arguments", {})
    if not isinstance(arguments, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in arguments.items()
    ):
        raise ToolConfigError(f"{where}.arguments must map argument names to glob strings")
    read_only = data.get("read_only")
    if read_only is not None and not isinstance(read_only, bool):
        raise ToolConfigError(f"{where}.read_only must be true, false or absent")
    return PermissionRule(tool_name, decision, dict(arguments), read_only)


def rules_from_list(items: Any, where: str = "permissions") -> list[PermissionRule]:
    """A list of rule dicts; raise :class:`ToolConfigError` naming the bad entry."""
    if not isinstance(items, list):
        raise ToolConfigError(f"{where} must be a list of rules")
    return [rule_from_dict(item, f"{where}[{i}]") for i, item in enumerate(items)]


def rules_to_list(rules: Iterable[PermissionRule]) -> list[dict[str, Any]]:
    """Rules as JSON-ready dicts."""
    return [rule.to_dict() for rule in rules]


def effective_rules(
    conversation: Iterable[PermissionRule], global_rules: Iterable[PermissionRule]
) -> list[PermissionRule]:
    """All rules that apply to a conversation (deny beats ask beats allow across both)."""
    return [*conversation, *global_rules]


def always_allow_rule(
    tool_name: str, tool_input: Mapping[str, Any] | None = None, keys: Iterable[str] = ()
) -> PermissionRule:
    """The rule an "Always allow" click writes.

    Args:
        tool_name: The tool that was approved.
        tool_input: The approved input; with ``keys``, the rule only allows calls
            whose arguments equal these values (glob characters are escaped).
        keys: Which arguments to pin; empty allows every call of the tool.
    """
    arguments: dict[str, str] = {}
    for key in keys:
        if tool_input is None or key not in tool_input:
            continue
        value = tool_input[key]
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        arguments[key] = _escape_glob(text)
    return PermissionRule(_escape_glob(tool_name), "allow", arguments)


def _escape_glob(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def add_rule(rules: Iterable[PermissionRule], rule: PermissionRule) -> list[PermissionRule]:
    """``rules`` plus ``rule``, replacing a rule for the same calls with another decision."""
    kept = [r for r in rules if (r.tool, dict(r.arguments), r.read_only)
            != (rule.tool, dict(rule.arguments), rule.read_only)]
    return [*kept, rule]


def remove_rule(rules: Iterable[PermissionRule], rule: PermissionRule) -> list[PermissionRule]:
    """``rules`` without ``rule``."""
    return [r for r in rules if r != rule]
