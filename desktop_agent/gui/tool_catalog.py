"""Which tools a conversation may offer its model.

The window offers the built-in workdir tools (files, search, shell) confined
to the conversation's work folder, the tools of the MCP servers listed in
``config.json`` (started on first use, shared by every conversation, named
``<server>__<tool>``), and any tools the app was started with (the smoke test
and the tests add their own). A conversation's settings pick a subset by name
(``settings["tools"]``); without that key every tool is on. The core and the
MCP SDK are imported only when tools are first needed, after the window has
painted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from desktop_agent.core.mcp_tools import McpServerPool
    from desktop_agent.core.tools import Tool

log = logging.getLogger("desktop_agent.gui.tools")


class ToolCatalog:
    """Builds the tool list for a conversation.

    Args:
        extra_tools: Tools offered besides the built-in and MCP ones.
        include_builtin: Whether the built-in workdir tools are offered.
        include_mcp: Whether the MCP servers of ``config.json`` are offered.
        config_path: The config file (default: the data folder's ``config.json``).

    Attributes:
        problem: Why the MCP servers could not be read from the config, if so.
    """

    def __init__(self, extra_tools: Sequence[Tool] = (), *, include_builtin: bool = True,
                 include_mcp: bool = True, config_path: Path | None = None) -> None:
        self._extra = list(extra_tools)
        self._include_builtin = include_builtin
        self._include_mcp = include_mcp
        self._config_path = config_path
        self._pool: McpServerPool | None = None
        self._pool_loaded = False
        self._mcp_names: list[str] = []
        self._mcp_seen: dict[str, Tool] = {}
        self.problem: str | None = None

    def tool_names(self) -> list[str]:
        """Names of every tool a conversation could enable, for the settings dialog.

        MCP tools are listed once their servers have started (after a first turn).
        """
        names: list[str] = []
        if self._include_builtin:
            from desktop_agent.core.builtin_tools import BUILTIN_TOOL_NAMES

            names.extend(BUILTIN_TOOL_NAMES)
        names.extend(t.name for t in self._extra if t.name not in names)
        names.extend(n for n in self._mcp_names if n not in names)
        return names

    async def tools_for(self, conversation_id: str, settings: dict[str, Any]) -> list[Tool]:
        """The tools enabled in ``settings``, bound to the conversation's work folder."""
        wanted = settings.get("tools")
        enabled = set(wanted) if isinstance(wanted, list) else None
        tools: list[Tool] = []
        if self._include_builtin:
            from desktop_agent.core.builtin_tools import BUILTIN_TOOL_NAMES, builtin_tools

            include = tuple(n for n in BUILTIN_TOOL_NAMES if enabled is None or n in enabled)
            if include:
                from desktop_agent.command_sandbox import sandbox_policy

                tools.extend(builtin_tools(self.workdir(conversation_id, settings),
                                           include=include, sandbox=sandbox_policy(settings)))
        tools.extend(t for t in self._extra if enabled is None or t.name in enabled)
        taken = {t.name for t in tools}
        tools.extend(t for t in await self._mcp_tools(enabled)
                     if (enabled is None or t.name in enabled) and t.name not in taken)
        return tools

    def mcp_problems(self) -> list[str]:
        """One sentence per configured MCP server that is not running, and why."""
        problems = [self.problem] if self.problem else []
        if self._pool is not None:
            for status in self._pool.status():
                if status.error:
                    problems.append(f"MCP server {status.name}: {status.error}")
        return problems

    async def aclose(self) -> None:
        """Stop the MCP servers this catalog started."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.aclose()

    async def _mcp_tools(self, enabled: set[str] | None = None) -> list[Tool]:
        """Tools of the MCP servers the conversation uses (all, when it names no tools).

        Only those servers are started: a conversation that enables none of a
        server's tools never runs it.
        """
        if not self._include_mcp:
            return []
        if not self._pool_loaded:
            self._pool_loaded = True
            from desktop_agent.core.tool_config import ToolConfigError, load_tool_config

            try:
                config = load_tool_config(self._config_path)
            except ToolConfigError as exc:
                self.problem = f"MCP servers are off: {exc}"
                log.warning("%s", self.problem)
                return []
            if not any(s.enabled for s in config.mcp_servers.values()):
                return []
            from desktop_agent.core.mcp_tools import McpServerPool

            self._pool = McpServerPool.from_config(config)
        if self._pool is None:
            return []
        servers = None
        if enabled is not None:
            from desktop_agent.core.mcp_tools.server_usage import servers_used

            servers = servers_used(enabled, self._pool.server_names)
            if not servers:
                return []
        tools = await self._pool.list_tools(servers)
        self._mcp_names = sorted({*self._mcp_names, *(t.name for t in tools)})
        self._mcp_seen.update((t.name, t) for t in tools)
        return tools

    def schema_costs(self) -> list[Any]:
        """What each offered tool's schema costs per request (MCP tools once started).

        Returns:
            :class:`~desktop_agent.core.schema_cost.SchemaCost` entries, in the
            order of :meth:`tool_names`.
        """
        import tempfile

        from desktop_agent.core.schema_cost import schema_costs

        tools: list[Tool] = []
        if self._include_builtin:
            from desktop_agent.core.builtin_tools import builtin_tools

            tools.extend(builtin_tools(tempfile.gettempdir()))  # the folder does not change them
        tools.extend(self._extra)
        tools.extend(self._mcp_seen[name] for name in self._mcp_names if name in self._mcp_seen)
        return schema_costs(tools)

    @staticmethod
    def workdir(conversation_id: str, settings: dict[str, Any]) -> Path:
        """The conversation's work folder (its own under the data folder by default)."""
        chosen = settings.get("workdir")
        if chosen:
            folder = Path(str(chosen)).expanduser()
        else:
            from desktop_agent.paths import workdirs_dir

            folder = workdirs_dir() / conversation_id
        folder.mkdir(parents=True, exist_ok=True)
        return folder
