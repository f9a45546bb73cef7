"""The app's MCP servers as a person looks them over: state, what each offers, its log.

One object for every front end (the window's MCP servers panel, the REST
server's ``/mcp/servers`` routes): a widget or a route shows what
:meth:`McpServerBoard.overview` says and calls the methods here, it never reads
the pool itself. A server's log messages stay here and in the app's log; they
are never part of a conversation, so no model reads them.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from desktop_agent.core.tooling.mcp.server_log import LOG_LEVELS, LogEntry
from desktop_agent.session.mcp.conversation_mcp import NoMcpServers

if TYPE_CHECKING:
    from desktop_agent.core.tooling.mcp.server_connection import McpServerStatus
    from desktop_agent.core.tooling.mcp.server_pool import McpServerPool
    from desktop_agent.session.tools.tool_catalog import ToolCatalog

#: What each core state means to a person (``crashed`` servers restart on their next use).
STATE_WORDS = {"idle": "not started", "starting": "connecting", "running": "connected",
               "crashed": "reconnecting", "failed": "failed", "stopped": "stopped",
               "disabled": "disabled"}
_TRANSPORT_WORDS = {"stdio": "stdio", "http": "streamable HTTP", "sse": "HTTP+SSE"}


class UnknownServer(ValueError):
    """No configured MCP server has that name; the message says which exist."""


@dataclass(frozen=True, slots=True)
class McpServerView:
    """One configured server as the panel shows it.

    Attributes:
        name: Its name in config.json.
        state: ``connected``, ``connecting``, ``reconnecting``, ``failed``,
            ``stopped``, ``disabled`` or ``not started``.
        reason: Why it failed or stopped, as a sentence (secrets blanked), or None.
        transport: ``stdio``, ``streamable HTTP`` or ``HTTP+SSE``.
        tools: How many tools it offers.
        resources: How many resources it lists.
        templates: How many resource templates it lists.
        prompts: How many prompts it offers.
        tool_list: The last change of its tool list, in words, or None.
        log_level: The log level asked of it, or None (its own default).
        log_lines: How many of its log messages are kept.
    """

    name: str
    state: str
    reason: str | None
    transport: str
    tools: int
    resources: int
    templates: int
    prompts: int
    tool_list: str | None
    log_level: str | None
    log_lines: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "state": self.state, "reason": self.reason,
                "transport": self.transport, "tools": self.tools,
                "resources": self.resources, "templates": self.templates,
                "prompts": self.prompts, "tool_list": self.tool_list,
                "log_level": self.log_level, "log_lines": self.log_lines}


def log_line(entry: LogEntry) -> str:
    """One log message as a line: ``HH:MM:SS level (logger) text``."""
    stamp = time.strftime("%H:%M:%S", time.localtime(entry.time))
    source = f" ({entry.logger})" if entry.logger else ""
    return f"{stamp} {entry.level}{source}: {entry.text}"


class McpServerBoard:
    """The MCP servers of config.json, shared by every conversation.

    Args:
        tools: The app's tool catalog (it holds the servers).
    """

    def __init__(self, tools: ToolCatalog) -> None:
        self._tools = tools
        self._counted: dict[str, tuple[int, int, int, int]] = {}

    async def _pool(self) -> McpServerPool:
        pool = await self._tools.mcp_pool()
        if pool is None:
            raise NoMcpServers(self._tools.problem or "No MCP server is configured: add one "
                               "under mcpServers in config.json.")
        return pool

    async def overview(self, connect: bool = True) -> list[McpServerView]:
        """Every configured server with its state and what it offers.

        ``connect``: start the enabled servers not running yet (they start when a
        conversation first uses them otherwise) and ask each what it offers. Without
        it nothing is started or asked: the counts are those last asked (a panel
        refreshing its states sends the servers nothing).

        Raises:
            NoMcpServers: None is configured, or config.json cannot be read.
        """
        pool = await self._pool()
        if connect:
            names = [s.name for s in pool.status()]
            found = await asyncio.gather(*(self._counts(pool, n) for n in names))
            self._counted.update(zip(names, found, strict=True))
        return [self._view(status, self._counted.get(status.name) if status.state == "running"
                           else None) for status in pool.status()]

    @staticmethod
    async def _counts(pool: McpServerPool, name: str) -> tuple[int, int, int, int]:
        """Tools, resources, templates, prompts of one server (zeros when it is down)."""
        tools = await pool.list_tools([name])  # starts it, and lists changed tools anew
        listed = await asyncio.gather(pool.list_resources([name]),
                                      pool.list_resource_templates([name]),
                                      pool.list_prompts([name]))
        return (len(tools), *(len(found) for found in listed))  # type: ignore[return-value]

    @staticmethod
    def _view(status: McpServerStatus, counts: tuple[int, int, int, int] | None,
              ) -> McpServerView:
        _tools, resources, templates, prompts = counts or (0, 0, 0, 0)
        tools = len(status.tools) if status.tools else _tools  # the pool's list is the newest
        reason = status.error if status.state in ("failed", "stopped", "crashed") else None
        return McpServerView(status.name, STATE_WORDS.get(status.state, status.state), reason,
                             _TRANSPORT_WORDS.get(status.transport, status.transport),
                             tools, resources, templates, prompts, status.tool_list,
                             status.log_level, status.log_lines)

    async def log(self, server: str, at_least: str | None = None) -> list[LogEntry]:
        """A server's kept log messages, oldest first (``at_least``: that level and above).

        Raises:
            NoMcpServers: None is configured.
            UnknownServer: No server has that name.
        """
        pool = await self._pool()
        self._known(pool, server)
        return pool.server_log(server, at_least)

    async def set_log_level(self, server: str, level: str) -> bool:
        """Ask ``server`` for its log messages at ``level`` and above (``logging/setLevel``).

        Returns False when the server declares no logging.

        Raises:
            NoMcpServers: None is configured.
            UnknownServer: No server has that name.
            ValueError: ``level`` is not one of MCP's eight levels.
            McpServerError: The server is down or refused.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"{level!r} is not a log level; the levels are "
                             f"{', '.join(LOG_LEVELS)}.")
        pool = await self._pool()
        self._known(pool, server)
        return await pool.set_log_level(server, level)

    async def restart(self, server: str) -> None:
        """Stop and start a server again (a failed one gets a new try).

        Raises:
            NoMcpServers: None is configured.
            UnknownServer: No server has that name.
            McpServerError: It failed to start again (the reason is in the overview too).
        """
        pool = await self._pool()
        self._known(pool, server)
        await pool.restart(server)

    @staticmethod
    def _known(pool: McpServerPool, server: str) -> None:
        if server not in pool.server_names:
            names = ", ".join(pool.server_names) or "none"
            raise UnknownServer(f"No MCP server is named {server!r}; the servers are {names}.")


__all__ = ["LOG_LEVELS", "McpServerBoard", "McpServerView", "UnknownServer", "log_line"]
