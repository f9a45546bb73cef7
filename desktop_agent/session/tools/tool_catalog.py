"""The one ToolCatalog: which tools a conversation offers its model.

Every front end offers the same tools: the built-in workdir tools (files,
search, shell) confined to the conversation's work folder and given its
secrets, the model's plan (``update_plan``,
:mod:`~desktop_agent.session.tools.plan`: offered with the built-ins, so only
where tools are on), the tools of the MCP servers in
``config.json`` (started on first use, shared by every conversation, named
``<server>__<tool>``), and any extra
tools the app was built with (scripts embedding the server, tests). A
conversation's ``tools`` setting picks a subset by name; without it every
tool is on (see :mod:`~desktop_agent.session.settings.defaults`). The core
and the MCP SDK are imported on first use so the window paints before they load.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_agent.session.tools.config import AppConfig

if TYPE_CHECKING:
    from desktop_agent.core.tooling.builtin import CommandPreviews
    from desktop_agent.core.tooling.mcp import McpServerPool
    from desktop_agent.core.tooling.tools import Tool

log = logging.getLogger("desktop_agent.session.tools")


class WorkdirError(Exception):
    """The conversation's work folder cannot be made or used; the message says why."""


def workdir_path(conversation_id: str, settings: Mapping[str, Any],
                 root: Path | None = None) -> Path:
    """The conversation's work folder: its ``workdir`` setting or its own under ``root``.

    Checked against :mod:`desktop_agent.appdata.workdir_rule` every time (not
    only when the setting was written or imported): a folder that became a
    symlink since, or that names the data folder, is refused here, before any
    tool or command uses it.

    Raises:
        WorkdirError: The folder breaks the rule; the message says how.
    """
    from desktop_agent.appdata.workdir_rule import WorkdirRefused, checked_workdir, own_workdir

    chosen = settings.get("workdir")
    if isinstance(chosen, str) and chosen.strip():
        folder = Path(chosen)
    else:
        if root is None:
            from desktop_agent.appdata.paths import workdirs_dir

            root = workdirs_dir()
        folder = own_workdir(root, conversation_id)
    try:
        return checked_workdir(folder, root)
    except WorkdirRefused as exc:
        raise WorkdirError(f"The conversation's work folder cannot be used: {exc}.") from exc


def _enabled(settings: Mapping[str, Any]) -> set[str] | None:
    """The tool names the ``tools`` setting picks; None when it picks none (all are on)."""
    wanted = settings.get("tools")
    return set(wanted) if isinstance(wanted, list) else None


class ToolCatalog:
    """Builds the tool list of a conversation's next turn.

    Args:
        extra_tools: Tools offered besides the built-in and MCP ones.
        config: The app's ``config.json`` (MCP servers).
        include_builtin: Whether the built-in workdir tools are offered.
        include_mcp: Whether the MCP servers of ``config.json`` are offered.
        workdirs_root: Parent of the default per-conversation work folders.

    Attributes:
        problem: Why the MCP servers could not be read from the config, if so.
    """

    def __init__(self, extra_tools: Sequence[Tool] = (), *, config: AppConfig | None = None,
                 include_builtin: bool = True, include_mcp: bool = True,
                 workdirs_root: Path | None = None) -> None:
        self._extra = list(extra_tools)
        self._config = config or AppConfig()
        self._include_builtin = include_builtin
        self._include_mcp = include_mcp
        self.workdirs_root = workdirs_root
        self._pool: McpServerPool | None = None
        self._pool_loaded = False
        self._mcp_names: list[str] = []
        self._mcp_seen: dict[str, Tool] = {}
        self.problem: str | None = None

    def tool_names(self) -> list[str]:
        """Names of every tool a conversation could enable (MCP ones once started)."""
        names: list[str] = []
        if self._include_builtin:
            from desktop_agent.core.tooling.builtin import BUILTIN_TOOL_NAMES
            from desktop_agent.session.tools.plan import PLAN_TOOL_NAME

            names.extend((*BUILTIN_TOOL_NAMES, PLAN_TOOL_NAME))
        names.extend(t.name for t in self._extra if t.name not in names)
        names.extend(n for n in self._mcp_names if n not in names)
        return names

    def unknown(self, names: Sequence[str]) -> list[str]:
        """Names no tool has: not built-in, not extra, and of no configured MCP server.

        An MCP tool is known by its server's prefix even before the server
        started, so a conversation made in the window with an MCP tool on can
        be changed over REST without the server being running.
        """
        from desktop_agent.core.tooling.mcp.server_usage import servers_used

        known = set(self.tool_names())
        servers = sorted(self._configured_servers())
        return [n for n in names if n not in known and not servers_used([n], servers)]

    def workdir(self, conversation_id: str, settings: Mapping[str, Any]) -> Path:
        """The conversation's work folder, created if missing.

        Raises:
            WorkdirError: It cannot be created.
        """
        folder = workdir_path(conversation_id, settings, self.workdirs_root)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WorkdirError(f"The conversation's work folder {folder} cannot be used: "
                               f"{exc}") from exc
        return folder

    def builtin_workdir(self, conversation_id: str, settings: Mapping[str, Any]) -> Path | None:
        """The folder the built-in tools will use, created now; None when none is on.

        Blocking (creating a folder is a disk write): the session calls it in a
        worker thread and hands the folder to :meth:`tools_for`.

        Raises:
            WorkdirError: It cannot be created.
        """
        if not self._builtin_names(settings):
            return None
        return self.workdir(conversation_id, settings)

    def _builtin_names(self, settings: Mapping[str, Any]) -> tuple[str, ...]:
        if not self._include_builtin:
            return ()
        from desktop_agent.core.tooling.builtin import BUILTIN_TOOL_NAMES

        enabled = _enabled(settings)
        return tuple(n for n in BUILTIN_TOOL_NAMES if enabled is None or n in enabled)

    async def tools_for(self, conversation_id: str, settings: Mapping[str, Any],
                        env_secrets: Mapping[str, str] | None = None,
                        workdir: Path | None = None,
                        previews: CommandPreviews | None = None) -> list[Tool]:
        """The tools enabled in ``settings``, bound to the conversation's folder and secrets.

        ``workdir``: the folder from :meth:`builtin_workdir` (made here when not given).
        ``previews``: the bash tool's preview mode (the conversation's previews part).
        """
        enabled = _enabled(settings)
        tools: list[Tool] = []
        include = self._builtin_names(settings)
        if include:
            from desktop_agent.core.tooling.builtin import builtin_tools
            from desktop_agent.session.settings.sandbox_settings import sandbox_policy

            tools.extend(builtin_tools(workdir or self.workdir(conversation_id, settings),
                                       include=include, env_secrets=env_secrets,
                                       sandbox=sandbox_policy(settings), previews=previews))
        if self._include_builtin:
            from desktop_agent.session.tools.plan import PLAN_TOOL_NAME, plan_tool

            if enabled is None or PLAN_TOOL_NAME in enabled:
                tools.append(plan_tool())
        taken = {t.name for t in tools}
        tools.extend(t for t in self._extra
                     if (enabled is None or t.name in enabled) and t.name not in taken)
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
        self._pool_loaded = False
        if pool is not None:
            await pool.aclose()

    def _configured_servers(self) -> set[str]:
        if not self._include_mcp:
            return set()
        if self._pool is not None:
            return set(self._pool.server_names)
        from desktop_agent.core.tooling.config import ToolConfigError

        try:
            return {name for name, server in self._config.load().mcp_servers.items()
                    if server.enabled}
        except ToolConfigError:
            return set()

    def _load_pool(self) -> McpServerPool | None:
        """The pool of config.json's MCP servers, made on first use (None: none enabled)."""
        if not self._pool_loaded:
            self._pool_loaded = True
            from desktop_agent.core.tooling.config import ToolConfigError

            try:
                config = self._config.load()
            except ToolConfigError as exc:
                self.problem = f"MCP servers are off: {exc}"
                log.warning("%s", self.problem)
                return None
            if not any(s.enabled for s in config.mcp_servers.values()):
                return None
            from desktop_agent.appdata.secrets import get_secret
            from desktop_agent.core.tooling.mcp import McpServerPool

            # {"secret": NAME} in a server's env or headers is read from the keyring
            self._pool = McpServerPool.from_config(config, secret_lookup=get_secret)
        return self._pool

    async def mcp_pool(self) -> McpServerPool | None:
        """The MCP servers (prompts, resources, logs...), None when none is configured.

        Reading config.json is a small file read, done in a worker thread the first time.
        """
        if not self._include_mcp:
            return None
        if not self._pool_loaded:
            return await asyncio.to_thread(self._load_pool)
        return self._pool

    def running_pool(self) -> McpServerPool | None:
        """The MCP servers if they were loaded already (never starts anything)."""
        return self._pool

    async def _mcp_tools(self, enabled: set[str] | None = None) -> list[Tool]:
        """Tools of the MCP servers the conversation uses (all, when it names no tools).

        Only those servers are started: a conversation that enables none of a
        server's tools never runs it.
        """
        if not self._include_mcp or self._load_pool() is None or self._pool is None:
            return []
        servers = None
        if enabled is not None:
            from desktop_agent.core.tooling.mcp.server_usage import servers_used

            servers = servers_used(enabled, self._pool.server_names)
            if not servers:
                return []
        tools = await self._pool.list_tools(servers)
        self._mcp_names = sorted({*self._mcp_names, *(t.name for t in tools)})
        self._mcp_seen.update((t.name, t) for t in tools)
        return tools

    def refresher(self, tools: Sequence[Tool], settings: Mapping[str, Any],
                  ) -> Callable[[], Awaitable[list[Tool] | None]] | None:
        """``AgentOptions.refresh_tools`` for a turn offered ``tools`` (None: no MCP servers).

        A server's changed tool list is offered from the next request on,
        filtered by the ``tools`` setting.
        """
        pool = self._pool
        if pool is None:
            return None
        servers = set(pool.server_names)
        kept = [t for t in tools if t.source not in servers]
        enabled = _enabled(settings)
        seen = pool.tools_generation

        async def refresh() -> list[Tool] | None:
            nonlocal seen
            await pool.refresh_tools()
            if pool.tools_generation == seen:
                return None
            seen = pool.tools_generation
            taken = {t.name for t in kept}
            fresh = [t for t in await self._mcp_tools(enabled)
                     if (enabled is None or t.name in enabled) and t.name not in taken]
            return [*kept, *fresh]

        return refresh

    def offered_tools(self) -> list[Tool]:
        """Every tool a conversation could enable (MCP ones once started), as sent.

        The built-ins are bound to a scratch folder: the folder does not
        change their schemas, which is what this is for (schema costs).
        """
        import tempfile

        tools: list[Tool] = []
        if self._include_builtin:
            from desktop_agent.core.tooling.builtin import builtin_tools
            from desktop_agent.session.tools.plan import plan_tool

            tools.extend(builtin_tools(tempfile.gettempdir()))
            tools.append(plan_tool())
        taken = {t.name for t in tools}
        tools.extend(t for t in self._extra if t.name not in taken)
        tools.extend(self._mcp_seen[n] for n in self._mcp_names if n in self._mcp_seen)
        return tools

    def schema_costs(self) -> list[Any]:
        """What each offered tool's schema costs per request (``SchemaCost`` entries)."""
        from desktop_agent.core.tooling.schema_cost import schema_costs

        return schema_costs(self.offered_tools())
