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
:attr:`ToolConfig.extra`. The entries' shape is declared once, as pydantic
models, in :mod:`desktop_agent.core.tooling.config_schema`; malformed data
raises :class:`ToolConfigError` naming the file and the place in words.

Where such a config lives, how it is read and written, and where a
conversation keeps its own rules are the app's business
(:mod:`desktop_agent.session.tools.config`); the SDK only parses and applies.
:func:`effective_rules` joins rule lists (the deny > ask > allow order is
applied by :func:`~desktop_agent.core.tooling.permissions.evaluate_rules`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from desktop_agent.core.errors import ConfigurationError
from desktop_agent.core.tooling.permissions import PermissionRule

if TYPE_CHECKING:  # pydantic loads when a config is read or written, not with this module
    from desktop_agent.core.tooling.config_schema import SecretEntry

log = logging.getLogger("desktop_agent.tool_config")


_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$")


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
        url: Endpoint of an HTTP server (streamable HTTP, or the older HTTP+SSE).
        headers: HTTP headers for ``url`` (values may be :class:`SecretRef`).
        enabled: False keeps the entry but never starts it.
        timeout: Seconds one tool call may take (None: the pool's default).
        startup_timeout: Seconds to start and list tools (None: the pool's default).
        trusted: The person vouches for this server: its tools' ``readOnlyHint``
            is believed (a ``read_only: true`` allow rule may then run them).
            Untrusted (the default), the hint is only a hint: the MCP spec says
            clients must not rely on it from servers they do not trust.
        kind: For a ``url``: ``"http"`` (streamable HTTP only), ``"sse"`` (the
            older HTTP+SSE transport only), or None: streamable HTTP, then
            HTTP+SSE if that fails.
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
    kind: Literal["http", "sse"] | None = None

    def __post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise ToolConfigError(
                f"MCP server {self.name!r} needs either a \"command\" or a \"url\" (not both)"
            )
        if self.kind is not None and self.url is None:
            raise ToolConfigError(
                f"MCP server {self.name!r}: \"type\": \"{self.kind}\" needs a \"url\"")

    @property
    def transport(self) -> str:
        """``"stdio"``, ``"http"`` or ``"sse"`` (the configured one; a URL may fall back)."""
        return "stdio" if self.command is not None else (self.kind or "http")

    def secret_names(self) -> list[str]:
        """Keyring names this server needs at start."""
        values = [*self.env.values(), *self.headers.values()]
        return [v.name for v in values if isinstance(v, SecretRef)]

    def to_dict(self) -> dict[str, Any]:
        """The entry as written under ``mcpServers`` (secrets stay references).

        Written through :class:`~desktop_agent.core.tooling.config_schema.ServerEntry`,
        the model that reads it, so a key's spelling is declared once; what
        equals its default is left out, as a person would write it.
        """
        from desktop_agent.core.tooling.config_schema import ServerEntry

        stdio = self.command is not None
        entry = ServerEntry.model_construct(
            command=self.command, args=list(self.args), cwd=self.cwd if stdio else None,
            env=_values_to_entry(self.env) if stdio else {},
            url=self.url, headers=_values_to_entry(self.headers) if not stdio else {},
            disabled=not self.enabled, timeout=self.timeout,
            startup_timeout=self.startup_timeout, trusted=self.trusted)
        data: dict[str, Any] = entry.model_dump(by_alias=True, exclude_defaults=True,
                                                exclude={"kind", "enabled", "description"})
        if self.kind is not None:
            data["type"] = self.kind
        return data

    @classmethod
    def from_dict(cls, name: str, data: Any, where: str = "config") -> McpServerConfig:
        """Read one ``mcpServers`` entry; raise :class:`ToolConfigError` saying what is wrong.

        The shape is checked by :class:`~desktop_agent.core.tooling.config_schema.ServerEntry`;
        ``where`` (the file) starts the message, so a person knows which file to open.
        """
        from pydantic import ValidationError

        from desktop_agent.core.tooling.config_schema import ServerEntry, first_problem

        here = f"{where}: mcpServers.{name}"
        if not isinstance(name, str) or not _SERVER_NAME.match(name):
            raise ToolConfigError(
                f"{here}: server names use letters, digits, spaces, '.', '_' or '-' "
                "(at most 64 characters)"
            )
        try:
            entry = ServerEntry.model_validate(data)
        except ValidationError as exc:
            raise ToolConfigError(first_problem(exc, ServerEntry, here)) from None
        if entry.model_extra:
            log.info("%s: ignoring unknown keys %s", here, sorted(entry.model_extra))
        return cls(
            name=name,
            command=entry.command,
            args=tuple(entry.args),
            env=_values_from_entry(entry.env),
            cwd=entry.cwd,
            url=entry.url,
            headers=_values_from_entry(entry.headers),
            enabled=entry.enabled and not entry.disabled,
            timeout=entry.timeout,
            startup_timeout=entry.startup_timeout,
            trusted=entry.trusted,
            kind=_URL_KINDS.get(entry.kind or ""),
        )


#: ``type`` values naming one URL transport (the rest leave the choice to the client).
_URL_KINDS: dict[str, Literal["http", "sse"]] = {
    "http": "http", "streamable-http": "http", "streamableHttp": "http", "sse": "sse"}


def _values_from_entry(values: Mapping[str, str | SecretEntry]) -> dict[str, EnvValue]:
    from desktop_agent.core.tooling.config_schema import SecretEntry

    return {key: SecretRef(value.secret) if isinstance(value, SecretEntry) else value
            for key, value in values.items()}


def _values_to_entry(values: Mapping[str, EnvValue]) -> dict[str, str | SecretEntry]:
    from desktop_agent.core.tooling.config_schema import SecretEntry

    return {key: SecretEntry(secret=value.name) if isinstance(value, SecretRef) else value
            for key, value in values.items()}


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
    from pydantic import ValidationError

    from desktop_agent.core.tooling.config_schema import RuleEntry, first_problem

    try:
        entry = RuleEntry.model_validate(data)
    except ValidationError as exc:
        raise ToolConfigError(first_problem(exc, RuleEntry, where)) from None
    return PermissionRule(entry.tool, entry.decision, entry.arguments, entry.read_only)


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
