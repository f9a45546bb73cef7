"""One MCP server: its session task, its stderr, its restart budget.

The SDK's transports are anyio context managers that must be entered and
left in one task, so each session lives inside one long-lived task
(:meth:`McpServerConnection._serve`) and requests reach it through a queue;
each request runs in that task's task group and answers through a future.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Literal

import anyio
import mcp_types
from mcp import Client as McpClient
from mcp import StdioServerParameters, stdio_client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from desktop_agent.core.errors import AgentError
from desktop_agent.core.secret_forms import replace_forms
from desktop_agent.core.tooling.config import (
    EnvValue,
    McpServerConfig,
    SecretLookup,
    SecretRef,
    resolve_values,
)
from desktop_agent.core.tooling.mcp.client_side import ClientSide
from desktop_agent.core.tooling.mcp.server_requests import current_caller
from desktop_agent.core.tooling.mcp.session_loss import SessionGone as _SessionGone
from desktop_agent.core.tooling.mcp.session_loss import session_gone as _session_gone
from desktop_agent.core.tooling.mcp.stderr_tail import StderrTail
from desktop_agent.core.wire.retry import RetryPolicy

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
#: A request an HTTP server answered "unknown session" is sent once more, at once,
#: on a new session: the server restarted while idle and is up, so waiting helps nothing.
SESSION_RENEWAL = RetryPolicy(max_retries=1, initial_delay=0.0, jitter=False)

#: ``(progress, total, message)`` from the server's progress notifications.
ProgressFn = Callable[[float, float | None, str | None], None]

ServerState = Literal["idle", "starting", "running", "crashed", "failed", "stopped", "disabled"]


class McpServerError(AgentError):
    """An MCP server could not start, stopped, or did not answer in time."""


@dataclass(frozen=True, slots=True)
class McpServerStatus:
    """What the window shows about one server.

    Attributes:
        name: The configured name.
        transport: ``"stdio"``, ``"http"`` (streamable HTTP) or ``"sse"`` (HTTP+SSE).
        state: idle (not started yet), starting, running, crashed (will be
            restarted on next use), failed, stopped or disabled.
        error: Why it failed or stopped, in words, or None.
        stderr: The last lines the server wrote to stderr (secrets blanked).
        tools: The core names of its tools.
        restarts: How many times it was restarted after a crash.
        tool_list: What the last change of its tool list did, in words
            (``notifications/tools/list_changed``), or None.
        log_level: The log level asked of it, or None (its own default).
        log_lines: How many log messages it sent that are kept.
    """

    name: str
    transport: str
    state: ServerState
    error: str | None
    stderr: list[str]
    tools: list[str]
    restarts: int
    tool_list: str | None = None
    log_level: str | None = None
    log_lines: int = 0


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


def _describe(exc: BaseException, command: str | None = None) -> str:
    """A one-line reason from an exception, unwrapping anyio's exception groups.

    ``command``: the program being started, named when the error does not say
    which file was missing (uvloop's spawn errors carry no file name).
    """
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or command or exc}"
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0] if text else type(exc).__name__


_TRANSPORT_NAMES = {"http": "streamable HTTP", "sse": "HTTP+SSE"}


async def _lists_resources(client: McpClient) -> bool:
    """True when the server has a resource or template to read.

    Declaring the resources capability is not enough: mcp-server-time and
    mcp-server-git declare it and list nothing, and a ``read_resource`` tool
    for them would only cost prompt tokens and invite calls that fail.
    """
    if client.server_capabilities.resources is None:
        return False
    for listing in (client.list_resources, client.list_resource_templates):
        try:
            page: Any = await listing()
        except Exception as exc:  # noqa: BLE001 - a server that cannot list offers nothing
            log.debug("listing resources failed: %s", _describe(exc))
            continue
        if getattr(page, "resources", None) or getattr(page, "resource_templates", None):
            return True
    return False


class McpServerConnection:
    """One configured server: its session task, its stderr and its restart budget."""

    def __init__(self, config: McpServerConfig, *, secret_lookup: SecretLookup | None,
                 startup_timeout: float, call_timeout: float, stderr_lines: int) -> None:
        self.config = config
        self.state: ServerState = "idle" if config.enabled else "disabled"
        self.error: str | None = None
        self.restarts = 0
        self.tools: list[mcp_types.Tool] = []
        self.has_resources = False  # the server lists something resources/read can read
        self.transport_used: str | None = None  # "http" or "sse" once a URL answered
        self.reconnects = 0  # HTTP sessions the server forgot (a restart while idle)
        self.startup_timeout = config.startup_timeout or startup_timeout
        self.call_timeout = config.timeout or call_timeout
        self._secret_lookup = secret_lookup
        self._stderr_lines = stderr_lines
        self._stderr: StderrTail | None = None
        self._secrets: list[str] = []
        self._task: asyncio.Task[None] | None = None
        self._jobs: asyncio.Queue[_Job | None] = asyncio.Queue()
        self._lost = False
        self._lock = asyncio.Lock()
        #: Its answers to the server's requests and what its notifications said.
        self.client_side = ClientSide(config.name, self._redact)
        #: What the server declared at start-up (None before).
        self.server_capabilities: mcp_types.ServerCapabilities | None = None

    @property
    def name(self) -> str:
        return self.config.name

    def stderr_tail(self) -> list[str]:
        """The last lines of the server's stderr, oldest first."""
        return self._stderr.snapshot() if self._stderr else []

    def status(self, tool_names: list[str]) -> McpServerStatus:
        state = self.state
        if state == "running" and self._is_dead():
            state = "crashed"  # noticed here already; the restart happens on next use
        side = self.client_side
        return McpServerStatus(self.name, self.transport_used or self.config.transport,
                               state, self.error,
                               self.stderr_tail(), tool_names, self.restarts,
                               side.tool_change_note, side.log.level, len(side.log.entries()))

    def _client_callbacks(self) -> dict[str, Any]:
        """The SDK callbacks: they make the client capabilities it declares (see ClientSide)."""
        side = self.client_side
        return {"sampling_callback": side.on_sampling,
                "elicitation_callback": side.on_elicitation,
                "list_roots_callback": side.on_list_roots,
                "logging_callback": side.on_log, "message_handler": side.on_message}

    def redact(self, text: str) -> str:
        """Blank out this server's secrets (env or header values) in ``text``."""
        return self._redact(text)

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            if len(secret) >= 3:
                text = replace_forms(text, secret, "[redacted]")
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
                    await self._last_words()
                    raise self._failure(self.error)
                self.restarts += 1
                log.warning("restarting MCP server %s after: %s", self.name, self.error)
            await self._stop_task()
            await self._start()

    async def _last_words(self) -> None:
        """Let the stderr reader take what a dead server wrote last (up to half a second).

        The process is gone, so the pipe's end is near; without this wait a busy
        machine reported the crash before its reason line was read.
        """
        if self._stderr is not None and not self._stderr.closed.is_set():
            await asyncio.to_thread(self._stderr.closed.wait, 0.5)

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
        except Exception as exc:  # noqa: BLE001 - any start failure is the server's state, in words
            await self._stop_task(cancel=True)
            self.state = "failed"
            self.error = f"could not start: {self._redact(_describe(exc, self.config.command))}"
            raise self._failure(self.error) from None
        self.state = "running"
        log.info("MCP server %s running with %d tools", self.name, len(self.tools))

    @contextlib.asynccontextmanager
    async def _stdio_transport(self, env: dict[str, str]) -> AsyncIterator[Any]:
        assert self.config.command is not None
        self._stderr = StderrTail(self._stderr_lines, self._secrets)
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
            self._secrets = _secret_values(config.env, env)
            transport: Any = self._stdio_transport(env)
        else:
            assert config.url is not None
            headers = resolve_values(config.headers, self._secret_lookup, server=self.name)
            self._secrets = _secret_values(config.headers, headers)
            return await self._open_url(stack, config.url, headers)
        client = McpClient(transport, read_timeout_seconds=self.startup_timeout,
                           client_info=_client_info(), **self._client_callbacks())
        return await stack.enter_async_context(client)

    async def _open_url(self, stack: contextlib.AsyncExitStack, url: str,
                        headers: dict[str, str]) -> McpClient:
        """Connect over streamable HTTP, or the older HTTP+SSE transport.

        ``"type": "sse"`` goes straight to HTTP+SSE; otherwise streamable HTTP
        is tried first and HTTP+SSE after it fails, as the MCP spec advises
        for servers of either age. When neither answers, the error names
        each transport tried and what it got.
        """
        tried: list[str] = []
        kinds: tuple[str, ...] = ("http", "sse")
        if self.config.kind is not None:
            kinds = (self.config.kind,)
        elif self.transport_used is not None:  # a reconnect: the one that answered before
            kinds = (self.transport_used,)
        for kind in kinds:
            attempt = contextlib.AsyncExitStack()
            try:
                transport = await self._url_transport(attempt, kind, url, headers)
                client = await attempt.enter_async_context(McpClient(
                    transport, read_timeout_seconds=self.startup_timeout,
                    client_info=_client_info(), **self._client_callbacks()))
            except Exception as exc:  # noqa: BLE001 - each failure is named in the error
                await attempt.aclose()
                tried.append(f"{_TRANSPORT_NAMES[kind]} ({_describe(exc)})")
                log.info("MCP server %s: %s failed at %s: %s", self.name, _TRANSPORT_NAMES[kind],
                         url, _describe(exc))
                continue
            await stack.enter_async_context(attempt)
            self.transport_used = kind
            return client
        raise McpServerError(f"{url} answered no MCP transport; tried " + " and ".join(tried))

    @staticmethod
    async def _url_transport(stack: contextlib.AsyncExitStack, kind: str, url: str,
                             headers: dict[str, str]) -> Any:
        if kind == "sse":
            return sse_client(url, headers=headers or None, timeout=30.0)
        http_client = None
        if headers:
            import httpx2  # the HTTP client the mcp SDK is built on

            http_client = await stack.enter_async_context(httpx2.AsyncClient(
                headers=headers, timeout=httpx2.Timeout(30.0, read=300.0)))
        return streamable_http_client(url, http_client=http_client)

    async def _serve(self, ready: asyncio.Future[list[mcp_types.Tool]]) -> None:
        """The session's whole life, in this one task."""
        in_flight: set[_Job] = set()
        ended = "the session ended"
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await self._open(stack)
                self.server_capabilities = client.server_capabilities
                self.has_resources = await _lists_resources(client)
                if self.client_side.log.level and client.server_capabilities.logging:
                    await _set_level(client, self.client_side.log.level)
                ready.set_result(await _all_tools(client))
                async with anyio.create_task_group() as group:
                    while (job := await self._jobs.get()) is not None:
                        in_flight.add(job)
                        group.start_soon(self._run_job, client, job, in_flight)
                    group.cancel_scope.cancel()
        except Exception as exc:  # noqa: BLE001 - handed to whoever waits for the session
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
                except Exception as exc:  # noqa: BLE001 - the caller's future gets it
                    if not job.future.done():
                        job.future.set_exception(exc)
                    return
            if not job.future.done() and not scope.cancelled_caught:
                job.future.set_result(result)
        finally:
            if job.future.done():
                in_flight.discard(job)
            # Otherwise the session itself is going down; _serve fails the job with the reason.

    async def call_tool(self, tool: str, arguments: dict[str, Any],
                        progress: ProgressFn | None = None) -> mcp_types.CallToolResult:
        """Call one tool; raise :class:`McpServerError` if the server fails or is slow.

        ``progress`` gets the server's progress notifications (a
        ``progressToken`` is sent with the call when it is given).
        """
        timeout = self.call_timeout

        report = progress

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if report is not None:
                report(progress, total, message)

        async def run(client: McpClient) -> mcp_types.CallToolResult:
            return await client.call_tool(
                tool, arguments, read_timeout_seconds=timeout,
                progress_callback=on_progress if progress is not None else None)

        result: mcp_types.CallToolResult = await self._request(run, tool, timeout)
        return result

    async def read_resource(self, uri: str) -> mcp_types.ReadResourceResult:
        """Read one resource (``resources/read``), e.g. a link a tool returned."""
        timeout = self.call_timeout

        async def run(client: McpClient) -> mcp_types.ReadResourceResult:
            return await client.read_resource(uri)

        result: mcp_types.ReadResourceResult = await self._request(run, f"read {uri}", timeout)
        return result

    async def _request(self, run: Callable[[McpClient], Awaitable[Any]], what: str,
                       timeout: float) -> Any:
        """Run one request in the session, reconnecting once if an HTTP session was lost.

        An HTTP server restarted while the app was idle has forgotten the
        session: it answers 404 (the spec) or 400 (server-everything). The
        request is then sent again on a new session, once, without counting
        as a crash.
        """
        caller = current_caller()
        was_running = self.state == "running" and not self._is_dead()
        tell_roots = self.client_side.enter(caller)
        try:
            return await self._renewing(run, what, timeout, tell_roots and was_running)
        finally:
            self.client_side.leave(caller)

    async def _renewing(self, run: Callable[[McpClient], Awaitable[Any]], what: str,
                        timeout: float, tell_roots: bool) -> Any:
        retries = SESSION_RENEWAL.begin()
        while True:
            await self.ensure_running()
            try:
                if tell_roots:
                    tell_roots = False
                    await self._send(_roots_changed, "roots/list_changed", timeout)
                return await self._send(run, what, timeout)
            except _SessionGone as gone:
                wait = retries.next_delay() if self.config.transport == "http" else None
                if wait is None:
                    raise self._failure(f"failed on {what}: {gone}") from None
                log.info("MCP server %s forgot its session (%s); reconnecting", self.name, gone)
                self.reconnects += 1
                async with self._lock:
                    await self._stop_task(cancel=True)
                    self.state = "idle"
                await asyncio.sleep(wait)

    async def request(self, run: Callable[[McpClient], Awaitable[Any]], what: str) -> Any:
        """Run one request of the server's session (``run`` gets the SDK client).

        Shares the call timeout, the reconnect of a forgotten HTTP session and
        the error words of tool calls; the caller of the moment is the one its
        sampling, elicitation and roots requests go to.
        """
        return await self._request(run, what, self.call_timeout)

    async def ready_for_caller(self) -> None:
        """Start the server if needed, as the current caller (whose roots it is then told)."""
        caller = current_caller()
        was_running = self.state == "running" and not self._is_dead()
        tell_roots = self.client_side.enter(caller)
        try:
            await self.ensure_running()
            if tell_roots and was_running:
                await self._send(_roots_changed, "roots/list_changed", self.call_timeout)
        finally:
            self.client_side.leave(caller)

    async def relist_tools(self) -> bool:
        """List the tools again after ``notifications/tools/list_changed``; True if they differ."""
        self.client_side.tools_stale = False
        tools: list[mcp_types.Tool] = await self._request(_all_tools, "tools/list",
                                                          self.call_timeout)
        changed = [t.model_dump() for t in tools] != [t.model_dump() for t in self.tools]
        self.tools = tools
        return changed

    async def apply_log_level(self) -> None:
        """Send the log level chosen for this server (``logging/setLevel``)."""
        level = self.client_side.log.level
        if level is None:
            return

        async def run(client: McpClient) -> Any:
            return await _set_level(client, level)

        await self._request(run, "logging/setLevel", self.call_timeout)

    async def _send(self, run: Callable[[McpClient], Awaitable[Any]], what: str,
                    timeout: float) -> Any:
        loop = asyncio.get_running_loop()
        job = _Job(run, loop.create_future())

        def cancel_job(future: asyncio.Future[Any]) -> None:
            if future.cancelled() and job.scope is not None:
                job.scope.cancel()

        job.future.add_done_callback(cancel_job)
        self._jobs.put_nowait(job)
        try:
            return await asyncio.wait_for(job.future, timeout + 1.0)
        except TimeoutError:
            raise self._failure(f"gave no answer to {what} within {timeout:g} s") from None
        except MCPError as exc:
            if exc.code == mcp_types.REQUEST_TIMEOUT:
                raise self._failure(f"gave no answer to {what} within {timeout:g} s") from None
            if self.config.transport == "http" and _session_gone(exc):
                raise _SessionGone(_describe(exc)) from None
            if exc.code == mcp_types.CONNECTION_CLOSED:
                self._lost = True
                self.state = "crashed"
                self.error = f"stopped while running {what}"
                raise self._failure(self.error) from None
            raise McpServerError(self._redact(
                f"MCP server {self.name!r} refused {what}: {exc}")) from None
        except McpServerError as exc:
            if self.config.transport == "http" and _session_gone(exc):
                raise _SessionGone(str(exc)) from None
            raise
        except Exception as exc:  # a malformed answer or a transport failure
            if self.config.transport == "http" and _session_gone(exc):
                raise _SessionGone(_describe(exc)) from None
            log.info("MCP request %s on %s failed", what, self.name, exc_info=True)
            raise self._failure(f"failed on {what}: {_describe(exc)}") from None

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
        except Exception as exc:  # noqa: BLE001 - the session already failed; gone either way
            log.debug("MCP server %s stopped with %s", self.name, exc)

    async def stop(self, state: ServerState = "stopped") -> None:
        """Shut the server down (bounded by :data:`STOP_TIMEOUT`)."""
        async with self._lock:
            await self._stop_task()
            if self.state != "disabled":
                self.state = state


async def _all_tools(client: McpClient) -> list[mcp_types.Tool]:
    """Every page of the server's tools (fresh: a list asked again follows a change)."""
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(100):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


async def _set_level(client: McpClient, level: str) -> Any:
    # send_request, not set_logging_level: the SDK marks logging deprecated for
    # 2026 servers, and the servers of today still take it
    return await client.session.send_request(
        mcp_types.SetLevelRequest(params=mcp_types.SetLevelRequestParams(level=level)),  # type: ignore[arg-type]
        mcp_types.EmptyResult)


async def _roots_changed(client: McpClient) -> None:
    await client.session.send_notification(mcp_types.RootsListChangedNotification())


def _secret_values(written: Mapping[str, EnvValue], resolved: Mapping[str, str]) -> list[str]:
    """The resolved values that were written as ``{"secret": name}``; plain values are not secret.

    Redacting a plain ``"GREETING_STYLE": "hello"`` turned every "hello" in the
    server's results into ``[redacted]``.
    """
    return [resolved[key] for key, value in written.items()
            if isinstance(value, SecretRef) and key in resolved]
