"""MCP servers as tools: each configured server's tools become core :class:`Tool` s.

A tool ``search`` on server ``github`` is offered to the model as
``github__search``, with the server's input schema and description, its
``readOnlyHint`` as ``read_only`` and the server's name as ``source``, so it
passes through the same rules and approval dock as the built-in tools.

:class:`McpServerPool` owns the connections. Servers start lazily (on the first
``list_tools()`` or call), each in a task of its own: the SDK's transports are
anyio context managers that must be entered and left in one task, so every
session lives inside one long-lived task and calls reach it through a queue.
A server that dies is restarted once; after that it stays failed until
:meth:`McpServerPool.restart`. Each stdio server's stderr is kept (last lines,
secrets blanked) so the window can show why it failed. One broken server never
blocks the others, and ``aclose()`` stops them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import json
import logging
import os
import re
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Literal

import anyio
import mcp_types
from mcp import Client as McpClient
from mcp import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from .errors import AgentError, ConfigurationError
from .tool_config import McpServerConfig, SecretLookup, ToolConfig, resolve_values
from .tools import Tool

log = logging.getLogger("desktop_agent.mcp")

#: Seconds a server may take to start and list its tools.
DEFAULT_STARTUP_TIMEOUT = 60.0
#: Seconds one tool call may take.
DEFAULT_CALL_TIMEOUT = 120.0
#: Lines of each server's stderr that are kept.
DEFAULT_STDERR_LINES = 200
#: Times a crashed server is restarted before it is left failed.
MAX_RESTARTS = 1
#: Seconds a server may take to shut down before its task is cancelled.
STOP_TIMEOUT = 10.0
_MAX_NAME = 64

ServerState = Literal["idle", "starting", "running", "crashed", "failed", "stopped", "disabled"]


class McpServerError(AgentError):
    """An MCP server could not start, stopped, or did not answer in time."""


class McpToolError(AgentError):
    """An MCP tool ran and reported an error (``isError``); the message is its output."""


@dataclass(frozen=True, slots=True)
class McpServerStatus:
    """What the window shows about one server.

    Attributes:
        name: The configured name.
        transport: ``"stdio"`` or ``"http"``.
        state: idle (not started yet), starting, running, crashed (will be
            restarted on next use), failed, stopped or disabled.
        error: Why it failed or stopped, in words, or None.
        stderr: The last lines the server wrote to stderr (secrets blanked).
        tools: The core names of its tools.
        restarts: How many times it was restarted after a crash.
    """

    name: str
    transport: str
    state: ServerState
    error: str | None
    stderr: list[str]
    tools: list[str]
    restarts: int


def core_tool_name(server: str, tool: str, taken: Iterable[str] = ()) -> str:
    """``<server>__<tool>`` made safe for the model: allowed characters, at most 64 long."""
    name = f"{re.sub(r'[^A-Za-z0-9_-]', '_', server)}__{re.sub(r'[^A-Za-z0-9_-]', '_', tool)}"
    taken = set(taken)
    if len(name) <= _MAX_NAME and name not in taken:
        return name
    digest = hashlib.sha1(f"{server}\x00{tool}".encode()).hexdigest()[:8]
    return f"{name[:_MAX_NAME - 9]}_{digest}"


def render_result(result: mcp_types.CallToolResult) -> str:
    """The text the model gets from an MCP tool result.

    Text blocks are joined; images, audio and binary resources are described,
    not inlined. Structured content is used when the server sent no text (the
    spec asks servers to mirror it as text, so using both would repeat it).
    """
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            kind = "image" if isinstance(block, mcp_types.ImageContent) else "audio"
            parts.append(f"[{kind} {block.mime_type}, about {len(block.data) * 3 // 4} bytes]")
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, mcp_types.TextResourceContents):
                parts.append(f"[resource {resource.uri}]\n{resource.text}")
            else:
                parts.append(f"[resource {resource.uri}, {resource.mime_type or 'binary'}]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[link {block.name}: {block.uri}]")
    text = "\n".join(parts)
    if not parts and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    return text


class _StderrTail:
    """A pipe for a server's stderr and a thread keeping its last lines.

    A thread rather than an event-loop reader because it works the same on
    every platform and the loop never waits on it. EOF means every writer,
    normally the server process, has gone.
    """

    def __init__(self, lines: int, secrets: Iterable[str]) -> None:
        self.lines: deque[str] = deque(maxlen=lines)
        self.closed = threading.Event()
        self._secrets = [s for s in secrets if len(s) >= 3]
        read_fd, write_fd = os.pipe()
        self.writer: io.TextIOWrapper | None = open(  # noqa: SIM115 - handed to the child
            write_fd, "w", encoding="utf-8", errors="replace", closefd=True)
        self._reader = threading.Thread(target=self._read, args=(read_fd,), daemon=True,
                                        name="mcp-stderr")
        self._reader.start()

    def _read(self, fd: int) -> None:
        try:
            with open(fd, encoding="utf-8", errors="replace") as stream:
                for line in stream:
                    for secret in self._secrets:
                        line = line.replace(secret, "[redacted]")
                    self.lines.append(line.rstrip("\r\n"))
        except (OSError, ValueError):  # the pipe went away; nothing more to keep
            pass
        finally:
            self.closed.set()

    def close_writer(self) -> None:
        """Drop our copy of the write end, so EOF arrives when the server exits."""
        if self.writer is not None:
            with contextlib.suppress(OSError):
                self.writer.close()
            self.writer = None


@dataclass(eq=False)
class _Job:
    """One request for a session, run inside the session's task."""

    run: Callable[[McpClient], Awaitable[Any]]
    future: asyncio.Future[Any]
    scope: anyio.CancelScope | None = None


def _client_info() -> mcp_types.Implementation:
    try:
        version = metadata.version("desktop-agent")
    except metadata.PackageNotFoundError:
        version = "0"
    return mcp_types.Implementation(name="desktop-agent", version=version)


def _describe(exc: BaseException) -> str:
    """A one-line reason from an exception, unwrapping anyio's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0] if text else type(exc).__name__


class McpServerConnection:
    """One configured server: its session task, its stderr and its restart budget."""

    def __init__(self, config: McpServerConfig, *, secret_lookup: SecretLookup | None,
                 startup_timeout: float, call_timeout: float, stderr_lines: int) -> None:
        self.config = config
        self.state: ServerState = "idle" if config.enabled else "disabled"
        self.error: str | None = None
        self.restarts = 0
        self.tools: list[mcp_types.Tool] = []
        self.startup_timeout = config.startup_timeout or startup_timeout
        self.call_timeout = config.timeout or call_timeout
        self._secret_lookup = secret_lookup
        self._stderr_lines = stderr_lines
        self._stderr: _StderrTail | None = None
        self._secrets: list[str] = []
        self._task: asyncio.Task[None] | None = None
        self._jobs: asyncio.Queue[_Job | None] = asyncio.Queue()
        self._lost = False
        self._lock = asyncio.Lock()

    @property
    def name(self) -> str:
        return self.config.name

    def stderr_tail(self) -> list[str]:
        """The last lines of the server's stderr, oldest first."""
        return list(self._stderr.lines) if self._stderr else []

    def status(self, tool_names: list[str]) -> McpServerStatus:
        state = self.state
        if state == "running" and self._is_dead():
            state = "crashed"  # noticed here already; the restart happens on next use
        return McpServerStatus(self.name, self.config.transport, state, self.error,
                               self.stderr_tail(), tool_names, self.restarts)

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            if len(secret) >= 3:
                text = text.replace(secret, "[redacted]")
        return text

    def _failure(self, reason: str) -> McpServerError:
        tail = self.stderr_tail()[-5:]
        detail = ("; its last stderr lines: " + " | ".join(tail)) if tail else ""
        return McpServerError(self._redact(f"MCP server {self.name!r} {reason}{detail}"))

    async def ensure_running(self) -> None:
        """Start the server if needed, restarting it (once) if it died.

        A server that failed to start stays failed (each call answers at once
        with the reason) until :meth:`McpServerPool.restart`.
        """
        async with self._lock:
            if self.state == "running":
                if not self._is_dead():
                    return
                self.state = "crashed"
                self.error = self.error or "exited"
            if self.state == "disabled":
                raise McpServerError(f"MCP server {self.name!r} is disabled")
            if self.state == "failed":
                raise self._failure(self.error or "failed")
            if self.state == "crashed":
                if self.restarts >= MAX_RESTARTS:
                    self.state = "failed"
                    self.error = f"stopped again ({self.error}); not restarted automatically"
                    raise self._failure(self.error)
                self.restarts += 1
                log.warning("restarting MCP server %s after: %s", self.name, self.error)
            await self._stop_task()
            await self._start()

    def _is_dead(self) -> bool:
        if self._lost or (self._task is not None and self._task.done()):
            return True
        return self._stderr is not None and self._stderr.closed.is_set()

    async def _start(self) -> None:
        self.state = "starting"
        self.error = None
        self._lost = False
        self._jobs = asyncio.Queue()
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[list[mcp_types.Tool]] = loop.create_future()
        self._task = loop.create_task(self._serve(ready), name=f"mcp-server:{self.name}")
        try:
            self.tools = await asyncio.wait_for(asyncio.shield(ready), self.startup_timeout)
        except TimeoutError:
            await self._stop_task(cancel=True)
            self.state = "failed"
            self.error = f"did not start within {self.startup_timeout:g} s"
            raise self._failure(self.error) from None
        except asyncio.CancelledError:
            await self._stop_task(cancel=True)
            self.state = "stopped"
            raise
        except Exception as exc:
            await self._stop_task(cancel=True)
            self.state = "failed"
            self.error = f"could not start: {self._redact(_describe(exc))}"
            raise self._failure(self.error) from None
        self.state = "running"
        log.info("MCP server %s running with %d tools", self.name, len(self.tools))

    @contextlib.asynccontextmanager
    async def _stdio_transport(self, env: dict[str, str]) -> AsyncIterator[Any]:
        assert self.config.command is not None
        self._stderr = _StderrTail(self._stderr_lines, self._secrets)
        params = StdioServerParameters(command=self.config.command, args=list(self.config.args),
                                       env=env or None, cwd=self.config.cwd)
        try:
            assert self._stderr.writer is not None
            async with stdio_client(params, errlog=self._stderr.writer) as streams:
                self._stderr.close_writer()
                yield streams
        finally:
            self._stderr.close_writer()

    async def _open(self, stack: contextlib.AsyncExitStack) -> McpClient:
        config = self.config
        if config.command is not None:
            env = resolve_values(config.env, self._secret_lookup, server=self.name)
            self._secrets = list(env.values())
            transport: Any = self._stdio_transport(env)
        else:
            assert config.url is not None
            headers = resolve_values(config.headers, self._secret_lookup, server=self.name)
            self._secrets = list(headers.values())
            http_client = None
            if headers:
                import httpx2  # the HTTP client the mcp SDK is built on

                http_client = await stack.enter_async_context(httpx2.AsyncClient(
                    headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)))
            transport = streamable_http_client(config.url, http_client=http_client)
        client = McpClient(transport, read_timeout_seconds=self.startup_timeout,
                           client_info=_client_info())
        return await stack.enter_async_context(client)

    async def _serve(self, ready: asyncio.Future[list[mcp_types.Tool]]) -> None:
        """The session's whole life, in this one task."""
        in_flight: set[_Job] = set()
        ended = "the session ended"
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await self._open(stack)
                tools: list[mcp_types.Tool] = []
                cursor: str | None = None
                for _ in range(100):
                    page = await client.list_tools(cursor=cursor)
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if not cursor:
                        break
                ready.set_result(tools)
                async with anyio.create_task_group() as group:
                    while (job := await self._jobs.get()) is not None:
                        in_flight.add(job)
                        group.start_soon(self._run_job, client, job, in_flight)
                    group.cancel_scope.cancel()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                self._lost = True
                ended = self._redact(_describe(exc))
                self.error = f"stopped: {ended}"
                if self.state == "running":
                    self.state = "crashed"
                log.warning("MCP server %s session ended: %s", self.name, self.error)
        finally:
            pending = list(in_flight)
            while not self._jobs.empty():
                queued = self._jobs.get_nowait()
                if queued is not None:
                    pending.append(queued)
            for job in pending:
                if not job.future.done():
                    job.future.set_exception(self._failure(f"stopped before answering ({ended})"))

    async def _run_job(self, client: McpClient, job: _Job, in_flight: set[_Job]) -> None:
        try:
            if job.future.done():
                return
            with anyio.CancelScope() as scope:
                job.scope = scope
                try:
                    result = await job.run(client)
                except Exception as exc:
                    if not job.future.done():
                        job.future.set_exception(exc)
                    return
            if not job.future.done() and not scope.cancelled_caught:
                job.future.set_result(result)
        finally:
            if job.future.done():
                in_flight.discard(job)
            # Otherwise the session itself is going down; _serve fails the job with the reason.

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call one tool; raise :class:`McpServerError` if the server fails or is slow."""
        await self.ensure_running()
        timeout = self.call_timeout

        async def run(client: McpClient) -> mcp_types.CallToolResult:
            return await client.call_tool(tool, arguments, read_timeout_seconds=timeout)

        loop = asyncio.get_running_loop()
        job = _Job(run, loop.create_future())

        def cancel_job(future: asyncio.Future[Any]) -> None:
            if future.cancelled() and job.scope is not None:
                job.scope.cancel()

        job.future.add_done_callback(cancel_job)
        self._jobs.put_nowait(job)
        try:
            result: mcp_types.CallToolResult = await asyncio.wait_for(job.future, timeout + 1.0)
        except TimeoutError:
            raise self._failure(f"gave no answer to {tool} within {timeout:g} s") from None
        except MCPError as exc:
            if exc.code == mcp_types.REQUEST_TIMEOUT:
                raise self._failure(f"gave no answer to {tool} within {timeout:g} s") from None
            if exc.code == mcp_types.CONNECTION_CLOSED:
                self._lost = True
                self.state = "crashed"
                self.error = f"stopped while running {tool}"
                raise self._failure(self.error) from None
            raise McpServerError(self._redact(
                f"MCP server {self.name!r} refused {tool}: {exc}")) from None
        return result

    async def _stop_task(self, *, cancel: bool = False) -> None:
        """End the session task: politely via the queue, or by cancelling it.

        A task still starting up never reads the queue, so it is cancelled
        (``cancel=True``); the transports then stop the server in their own
        shielded cleanup.
        """
        task, self._task = self._task, None
        if task is None or task.done():
            return
        if cancel:
            task.cancel()
        else:
            self._jobs.put_nowait(None)
        try:
            await asyncio.wait_for(asyncio.shield(task), STOP_TIMEOUT)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
        except Exception as exc:  # the session already failed; it is gone either way
            log.debug("MCP server %s stopped with %s", self.name, exc)

    async def stop(self, state: ServerState = "stopped") -> None:
        """Shut the server down (bounded by :data:`STOP_TIMEOUT`)."""
        async with self._lock:
            await self._stop_task()
            if self.state != "disabled":
                self.state = state


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
        await connection.ensure_running()
        if server not in self._tools:
            taken = {t.name for tools in self._tools.values() for t in tools}
            self._tools[server] = self._make_tools(connection, taken)
        return list(self._tools[server])

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
            name = core_tool_name(connection.name, remote.name, taken)
            taken.add(name)
            schema = dict(remote.input_schema or {})
            schema.setdefault("type", "object")
            read_only = bool(remote.annotations and remote.annotations.read_only_hint)
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
        return made

    def _handler(self, server: str, tool: str) -> Callable[[dict[str, Any]], Awaitable[str]]:
        async def call(arguments: dict[str, Any]) -> str:
            return await self.call_tool(server, tool, arguments)

        return call

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any]) -> str:
        """Run ``tool`` on ``server`` and return its text for the model.

        Raises:
            McpToolError: The tool reported an error (its text is the message).
            McpServerError: The server failed, stopped or did not answer in time.
        """
        result = await self._connection(server).call_tool(tool, arguments)
        text = render_result(result)
        if result.is_error:
            raise McpToolError(text or f"{tool} reported an error")
        return text

    def status(self) -> list[McpServerStatus]:
        """Every server's state, error and stderr tail, for the window."""
        return [c.status([t.name for t in self._tools.get(name, [])])
                for name, c in self._connections.items()]

    async def restart(self, server: str) -> None:
        """Stop and start a server again (the window's retry), resetting its restart budget."""
        connection = self._connection(server)
        await connection.stop()
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
