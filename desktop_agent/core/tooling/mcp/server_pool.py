"""All configured MCP servers, offered to the agent as core tools."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from desktop_agent.core.errors import AgentError, ConfigurationError
from desktop_agent.core.tooling.config import McpServerConfig, SecretLookup, ToolConfig
from desktop_agent.core.tooling.mcp import server_features
from desktop_agent.core.tooling.mcp.mcp_items import (
    McpPrompt,
    McpResource,
    McpResourceTemplate,
    PromptText,
    ResourceContent,
)
from desktop_agent.core.tooling.mcp.server_connection import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_STARTUP_TIMEOUT,
    DEFAULT_STDERR_LINES,
    McpServerConnection,
    McpServerError,
    McpServerStatus,
    ProgressFn,
)
from desktop_agent.core.tooling.mcp.server_log import LogEntry
from desktop_agent.core.tooling.mcp.tool_mapping import (
    core_tool_name,
    render_contents,
    render_result,
)
from desktop_agent.core.tooling.output import ToolOutput
from desktop_agent.core.tooling.progress import progress_reporter
from desktop_agent.core.tooling.tools import Tool

log = logging.getLogger("desktop_agent.mcp")

#: The tool each server with resources gets, to read a resource by URI.
READ_RESOURCE = "read_resource"


class McpToolError(AgentError):
    """An MCP tool ran and reported an error (``isError``); the message is its output."""


class McpServerPool:
    """All configured MCP servers, offered to the agent as core tools.

    ``await pool.list_tools()`` starts every enabled server concurrently and
    returns the tools of those that came up; ``pool.status()`` tells why the
    others did not. Use ``async with McpServerPool(...)`` or call ``aclose()``.
    """

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig] | Iterable[McpServerConfig],
        *,
        secret_lookup: SecretLookup | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        stderr_lines: int = DEFAULT_STDERR_LINES,
    ) -> None:
        configs = list(servers.values()) if isinstance(servers, Mapping) else list(servers)
        self._connections: dict[str, McpServerConnection] = {}
        for config in configs:
            if config.name in self._connections:
                raise ConfigurationError(f"two MCP servers are named {config.name!r}")
            self._connections[config.name] = McpServerConnection(
                config, secret_lookup=secret_lookup, startup_timeout=startup_timeout,
                call_timeout=call_timeout, stderr_lines=stderr_lines)
        self._tools: dict[str, list[Tool]] = {}
        self._closed = False
        #: Moves on each change of any server's tool list (``tools/list_changed``).
        self.tools_generation = 0

    @classmethod
    def from_config(cls, config: ToolConfig, **options: Any) -> McpServerPool:
        """A pool for the servers of a loaded config file."""
        return cls(config.mcp_servers, **options)

    @property
    def server_names(self) -> list[str]:
        return list(self._connections)

    async def __aenter__(self) -> McpServerPool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _connection(self, server: str) -> McpServerConnection:
        if self._closed:
            raise McpServerError("the MCP servers have been shut down")
        try:
            return self._connections[server]
        except KeyError:
            raise McpServerError(f"no MCP server named {server!r} is configured") from None

    async def server_tools(self, server: str) -> list[Tool]:
        """The core tools of one server, starting it if needed."""
        connection = self._connection(server)
        await connection.ready_for_caller()
        if connection.client_side.tools_stale and server in self._tools:
            await self._relist(connection)
        if server not in self._tools:
            taken = {t.name for tools in self._tools.values() for t in tools}
            self._tools[server] = self._make_tools(connection, taken)
        return list(self._tools[server])

    async def _relist(self, connection: McpServerConnection) -> None:
        """Offer a server's tools anew after it said its list changed (and say what changed)."""
        before = {t.name for t in self._tools.get(connection.name, [])}
        if not await connection.relist_tools():
            return
        del self._tools[connection.name]
        taken = {t.name for tools in self._tools.values() for t in tools}
        made = self._make_tools(connection, taken)
        self._tools[connection.name] = made
        after = {t.name for t in made}
        words = [f"{label} {', '.join(sorted(names))}" for label, names in
                 (("added", after - before), ("removed", before - after)) if names]
        stamp = time.strftime("%H:%M:%S", time.localtime())
        connection.client_side.tool_change_note = (
            f"tool list changed at {stamp}: {'; '.join(words) or 'descriptions changed'}")
        self.tools_generation += 1
        log.info("MCP server %s: %s", connection.name, connection.client_side.tool_change_note)

    async def refresh_tools(self) -> bool:
        """List again the tools of running servers that said theirs changed; True if any did.

        Called before a model request, so a tool a server added is offered from
        the next request on.
        """
        generation = self.tools_generation
        for name, connection in self._connections.items():
            if connection.client_side.tools_stale and name in self._tools \
                    and connection.state == "running":
                try:
                    await self._relist(connection)
                except McpServerError as exc:
                    log.warning("MCP server %s: could not list its tools again: %s", name, exc)
        return self.tools_generation != generation

    async def list_tools(self, servers: Iterable[str] | None = None) -> list[Tool]:
        """Tools of every enabled server that starts; failures are logged and kept in status."""
        names = [n for n in (servers if servers is not None else self._connections)
                 if self._connection(n).config.enabled]
        results = await asyncio.gather(*(self.server_tools(n) for n in names),
                                       return_exceptions=True)
        tools: list[Tool] = []
        for name, result in zip(names, results, strict=True):
            if isinstance(result, BaseException):
                if not isinstance(result, Exception):
                    raise result
                log.warning("MCP server %s unavailable: %s", name, result)
                continue
            tools.extend(result)
        return tools

    def _make_tools(self, connection: McpServerConnection, taken: set[str]) -> list[Tool]:
        made: list[Tool] = []
        for remote in connection.tools:
            execution = getattr(remote, "execution", None)
            if getattr(execution, "task_support", None) == "required":
                # it only runs as a task (tasks/get polling), which this client does not
                # speak: offering it would fail every call with -32601
                log.info("not offering MCP tool %s of %s: it must run as a task",
                         remote.name, connection.name)
                continue
            name = core_tool_name(connection.name, remote.name, taken)
            if name in taken:
                # never hand one name to two tools: a rule for one would apply to the other
                log.warning("skipping MCP tool %s of %s: its name %s is already taken",
                            remote.name, connection.name, name)
                continue
            taken.add(name)
            schema = dict(remote.input_schema or {})
            schema.setdefault("type", "object")
            # readOnlyHint is the server's claim; only a trusted server's claim counts.
            read_only = bool(connection.config.trusted and remote.annotations
                             and remote.annotations.read_only_hint)
            try:
                made.append(Tool(
                    name=name,
                    description=remote.description or remote.title or remote.name,
                    input_schema=schema,
                    handler=self._handler(connection.name, remote.name),
                    read_only=read_only,
                    source=connection.name,
                    timeout=connection.call_timeout + 5.0,
                ))
            except ConfigurationError as exc:
                log.warning("skipping MCP tool %s of %s: %s", remote.name, connection.name, exc)
        if connection.has_resources:
            name = core_tool_name(connection.name, READ_RESOURCE, taken)
            if name not in taken:
                taken.add(name)
                made.append(Tool(
                    name=name,
                    description=(f"Read a resource of the MCP server {connection.name!r} by "
                                 "its URI (for example a resource link one of its tools "
                                 "returned)."),
                    input_schema={"type": "object", "properties": {"uri": {
                        "type": "string", "description": "The resource's URI."}},
                        "required": ["uri"]},
                    handler=self._reader(connection.name),
                    read_only=False,  # approved like any other tool
                    source=connection.name,
                    timeout=connection.call_timeout + 5.0,
                ))
        return made

    def _handler(self, server: str, tool: str) -> Callable[[dict[str, Any]], Awaitable[Any]]:
        async def call(arguments: dict[str, Any]) -> ToolOutput | str:
            return _plain(await self.call_tool(server, tool, arguments,
                                               progress=progress_reporter()))

        return call

    def _reader(self, server: str) -> Callable[[dict[str, Any]], Awaitable[Any]]:
        async def read(arguments: dict[str, Any]) -> ToolOutput | str:
            return _plain(await self.read_resource(server, str(arguments["uri"])))

        return read

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any], *,
                        progress: ProgressFn | None = None) -> ToolOutput:
        """Run ``tool`` on ``server``: its text and pictures for the model, notes for the person.

        Raises:
            McpToolError: The tool reported an error (its text is the message).
            McpServerError: The server failed, stopped or did not answer in time.
        """
        connection = self._connection(server)
        result = await connection.call_tool(tool, arguments, progress)
        output = _redacted(render_result(result), connection)
        if result.is_error:
            raise McpToolError(output.text or f"{tool} reported an error")
        return output

    async def read_resource(self, server: str, uri: str) -> ToolOutput:
        """Read a resource of ``server``: text decoded, pictures as image parts."""
        connection = self._connection(server)
        result = await connection.read_resource(uri)
        return _redacted(render_contents(result.contents), connection)

    def tool_refresher(self, extra: Iterable[Tool] = (), servers: Iterable[str] | None = None,
                       ) -> Callable[[], Awaitable[list[Tool] | None]]:
        """An ``AgentOptions.refresh_tools`` for ``extra`` tools plus these servers' tools.

        It answers None until a server's tool list changed, then the new whole list.
        """
        kept = list(extra)
        names = list(servers) if servers is not None else None
        seen = self.tools_generation

        async def refresh() -> list[Tool] | None:
            nonlocal seen
            await self.refresh_tools()
            if self.tools_generation == seen:
                return None
            seen = self.tools_generation
            return [*kept, *await self.list_tools(names)]

        return refresh

    # -- what servers offer besides tools (server_features.py) ----------------------------
    async def _each(self, servers: Iterable[str] | None, fetch: Callable[..., Awaitable[Any]],
                    ) -> list[Any]:
        names = [n for n in (servers if servers is not None else self._connections)
                 if self._connection(n).config.enabled]
        results = await asyncio.gather(*(fetch(self._connection(n)) for n in names),
                                       return_exceptions=True)
        items: list[Any] = []
        for name, result in zip(names, results, strict=True):
            if isinstance(result, BaseException):
                if not isinstance(result, Exception):
                    raise result
                log.info("MCP server %s listed nothing: %s", name, result)
                continue
            items.extend(result)
        return items

    async def list_prompts(self, servers: Iterable[str] | None = None) -> list[McpPrompt]:
        """The prompts of every (or the named) enabled server that starts."""
        return await self._each(servers, server_features.list_prompts)

    async def list_resources(self, servers: Iterable[str] | None = None) -> list[McpResource]:
        """The resources of every (or the named) enabled server that starts."""
        return await self._each(servers, server_features.list_resources)

    async def list_resource_templates(self, servers: Iterable[str] | None = None,
                                      ) -> list[McpResourceTemplate]:
        """The resource templates of every (or the named) enabled server that starts."""
        return await self._each(servers, server_features.list_templates)

    async def get_prompt(self, server: str, name: str,
                         arguments: Mapping[str, str] | None = None) -> PromptText:
        """A prompt's result as text to send (cut at ``PROMPT_TEXT_LIMIT``, saying so).

        Raises:
            McpServerError: The server failed or refused (unknown prompt, missing argument).
        """
        connection = self._connection(server)
        return await server_features.get_prompt(connection, name, dict(arguments or {}))

    async def complete(self, server: str, ref: tuple[str, str], argument: str, value: str,
                       context: Mapping[str, str] | None = None) -> list[str]:
        """Suggestions for one argument, from ``completion/complete``.

        ``ref``: ``("prompt", name)`` or ``("template", uri_template)``.
        """
        return await server_features.complete(self._connection(server), ref, argument, value,
                                              dict(context) if context else None)

    async def read_content(self, server: str, uri: str) -> list[ResourceContent]:
        """A resource read to attach to a message: text, pictures, binary named only."""
        return await server_features.read_content(self._connection(server), uri)

    async def subscribe(self, server: str, uri: str) -> bool:
        """Be told when a resource changes (:meth:`take_updated`); False when the server cannot."""
        return await server_features.subscribe(self._connection(server), uri)

    async def unsubscribe(self, server: str, uri: str) -> bool:
        """Stop being told of a resource's changes."""
        return await server_features.subscribe(self._connection(server), uri, on=False)

    def take_updated(self) -> list[tuple[str, str]]:
        """``(server, uri)`` of subscribed resources that changed since last asked."""
        return [(name, uri) for name, c in self._connections.items()
                for uri in c.client_side.take_updated()]

    async def set_log_level(self, server: str, level: str) -> bool:
        """Ask a server for log messages at ``level`` and above; False when it logs nothing."""
        return await server_features.set_log_level(self._connection(server), level)

    def server_log(self, server: str, at_least: str | None = None) -> list[LogEntry]:
        """A server's kept log messages, oldest first (never sent to a model)."""
        return self._connection(server).client_side.log.entries(at_least)

    def status(self) -> list[McpServerStatus]:
        """Every server's state, error and stderr tail, for the window."""
        return [c.status([t.name for t in self._tools.get(name, [])])
                for name, c in self._connections.items()]

    async def restart(self, server: str) -> None:
        """Stop and start a server again (the window's retry), resetting its restart budget."""
        connection = self._connection(server)
        await connection.stop()
        self._tools.pop(server, None)  # its tool list may have changed
        connection.restarts = 0
        connection.state = "idle"
        await connection.ensure_running()

    async def aclose(self) -> None:
        """Shut every server down, concurrently; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        await asyncio.gather(*(c.stop() for c in self._connections.values()),
                             return_exceptions=True)


def _redacted(output: ToolOutput, connection: McpServerConnection) -> ToolOutput:
    return ToolOutput(connection.redact(output.text), output.images,
                      connection.redact(output.user_text))


def _plain(output: ToolOutput) -> ToolOutput | str:
    """Text alone when that is all there is (what plain tools return)."""
    return output if output.images or output.user_text else output.text
