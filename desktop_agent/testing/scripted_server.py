"""A local OpenAI-compatible server that plays scripted replies over real HTTP.

Tests, benchmarks and ``desktop-agent --smoke-test`` talk to it exactly as the
app talks to LM Studio or llama.cpp: real sockets on 127.0.0.1, chunked
HTTP/1.1, Server-Sent Events. It runs in its own thread with its own event
loop, so it serves the same way under pytest-asyncio, qasync or plain code.

It is written on bare asyncio streams rather than a web framework because the
tests need control a framework hides: dropping a connection mid-chunk,
sending malformed bytes, and streaming 20,000 chunks with no per-chunk cost of
its own that would blur the benchmark.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import threading
from collections.abc import Callable
from typing import Any

from desktop_agent.core.context.quick_count import quick_estimate_tokens

from . import script as scripts
from .script import Chunk, Drop, Gate, Hangup, Pause, Raw, Script, Status

Responder = Callable[[dict[str, Any]], Script]
RouteAnswer = tuple[int, Any]
Route = RouteAnswer | Callable[[Any], RouteAnswer]

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
            503: "Service Unavailable"}


class ScriptedServer:
    """An OpenAI-compatible chat server replaying queued scripts.

    Attributes:
        models: Model ids listed by ``GET /v1/models``.
        responder: Makes a script for a request when the queue is empty.
        requests: Chat-completion request bodies received, in order.
        request_targets: Every request line's target as sent, in order (the
            whole URL when the request came through it as a proxy).
        api_key: When set, requests must carry ``Authorization: Bearer <key>``.
        reject_stream_options: Answer 400 to requests with ``stream_options``,
            as some older servers do.
        routes: Extra JSON routes, ``{("GET", "/api/tags"): (200, {...})}``; a
            route may be a function of the decoded request body (None when
            it has none) giving the ``(status, payload)``.
        max_prompt_tokens: When set, a prompt (messages and tool schemas,
            counted with the app's own estimate) over this many tokens gets
            llama.cpp's 400 ``exceed_context_size_error`` instead of a reply.
        prompt_windows: ``{model: tokens}``: a prompt for that model over its
            window is cut as Ollama's OpenAI-compatible route cuts it, without
            an error: the oldest messages go (system messages and the last one
            stay, ``server/prompt.go``) and the usage counts what is left.
        prompt_tokens: The prompt size of each chat request as the server read
            it, in order (recorded with ``max_prompt_tokens`` or ``prompt_windows``).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self.models: list[str] = [scripts.DEFAULT_MODEL]
        self.responder: Responder | None = None
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self.request_targets: list[str] = []
        self.api_key: str | None = None
        self.reject_stream_options = False
        self.routes: dict[tuple[str, str], Route] = {}
        self.max_prompt_tokens: int | None = None
        self.prompt_windows: dict[str, int] = {}
        self.prompt_tokens: list[int] = []
        self.connections_opened = 0
        self._queue: collections.deque[Script] = collections.deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None

    # -- lifecycle -----------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """The OpenAI-compatible root, ``http://127.0.0.1:<port>/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def root_url(self) -> str:
        """The server root without ``/v1`` (for discovery-style probes)."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> ScriptedServer:
        """Start serving in a background thread; returns once the port is bound."""
        self._thread = threading.Thread(target=self._run, name="scripted-server", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._startup_error:
            raise self._startup_error
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        loop = self._loop
        if loop and loop.is_running():
            loop.call_soon_threadsafe(loop.stop)
        if self._thread:
            self._thread.join(5)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(self._handle, self.host, self.port)
            )
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as exc:  # noqa: BLE001 - reported to start()
            self._startup_error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            self._server.close()
            for task in asyncio.all_tasks(loop):
                task.cancel()
            with contextlib.suppress(Exception):
                loop.run_until_complete(asyncio.sleep(0))
            loop.close()

    # -- scripting -----------------------------------------------------------------
    def enqueue(self, *items: Script) -> None:
        """Queue replies; each chat request takes the next one."""
        self._queue.extend(items)

    @property
    def pending(self) -> int:
        """Scripts queued and not yet played."""
        return len(self._queue)

    def _next_script(self, body: dict[str, Any]) -> Script:
        try:
            return self._queue.popleft()
        except IndexError:
            pass
        if self.responder is not None:
            return self.responder(body)
        last_user = next(
            (m.get("content") for m in reversed(body.get("messages", []))
             if m.get("role") == "user"),
            "",
        )
        if isinstance(last_user, list):
            last_user = " ".join(p.get("text", "") for p in last_user if isinstance(p, dict))
        return scripts.text(f"You said: {last_user}", model=body.get("model") or "test-model")

    # -- HTTP ----------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections_opened += 1
        try:
            while True:
                request_line = await reader.readline()
                if not request_line:
                    return
                method, target, _ = request_line.decode("latin-1").split(" ", 2)
                self.request_targets.append(target)
                # A request sent through a proxy names the whole URL (absolute form).
                parts = target.split("/", 3)
                path = "/" + (parts[3] if len(parts) > 3 else "") if "://" in target else target
                headers: dict[str, str] = {}
                while True:
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0") or 0)
                raw_body = await reader.readexactly(length) if length else b""
                keep_open = await self._dispatch(method, path.split("?")[0], headers, raw_body,
                                                 writer)
                if not keep_open:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, ValueError,
                asyncio.CancelledError):
            return
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _dispatch(self, method: str, path: str, headers: dict[str, str],
                        raw_body: bytes, writer: asyncio.StreamWriter) -> bool:
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            await self._json(writer, 401, {"error": {"message": "Invalid API key",
                                                     "type": "authentication_error"}})
            return True
        if (method, path) in self.routes:
            route = self.routes[(method, path)]
            if callable(route):
                try:
                    request = json.loads(raw_body) if raw_body else None
                except json.JSONDecodeError:
                    request = None
                route = route(request)
            status, payload = route
            await self._json(writer, status, payload)
            return True
        if method == "GET" and path in ("/v1/models", "/models"):
            await self._json(writer, 200, {"object": "list", "data": [
                {"id": m, "object": "model", "owned_by": "scripted"} for m in self.models]})
            return True
        if method == "GET" and path == "/health":
            await self._json(writer, 200, {"status": "ok"})
            return True
        # any prefix: an Azure deployment's path is /openai/deployments/NAME/chat/completions
        if method == "POST" and path.endswith("/chat/completions"):
            try:
                body = json.loads(raw_body or b"{}")
            except json.JSONDecodeError:
                await self._json(writer, 400, {"error": {"message": "invalid JSON body"}})
                return True
            self.requests.append(body)
            self.request_headers.append(dict(headers))
            if self.reject_stream_options and "stream_options" in body:
                await self._json(writer, 400, {"error": {
                    "message": "Unrecognized request argument supplied: stream_options"}})
                return True
            if self.max_prompt_tokens is not None:
                size = _prompt_tokens(body)
                self.prompt_tokens.append(size)
                if size > self.max_prompt_tokens:
                    await self._json(writer, 400, {"error": {
                        "code": 400, "type": "exceed_context_size_error",
                        "message": "the request exceeds the available context size, try "
                                   "increasing it",
                        "n_prompt_tokens": size, "n_ctx": self.max_prompt_tokens}})
                    return True
            window = self.prompt_windows.get(str(body.get("model")))
            if window is not None:
                body = _cut_as_ollama(body, window)
                self.prompt_tokens.append(_read_tokens(body))
            return await self._play(self._next_script(body), body, writer)
        await self._json(writer, 404, {"error": {"message": f"no route {method} {path}"}})
        return True

    async def _json(self, writer: asyncio.StreamWriter, status: int, payload: Any,
                    extra_headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else (
            payload.encode() if isinstance(payload, str) else json.dumps(payload).encode())
        head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
                "Content-Type: application/json", f"Content-Length: {len(data)}"]
        head += [f"{k}: {v}" for k, v in (extra_headers or {}).items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
        await writer.drain()

    async def _play(self, reply: Script, body: dict[str, Any],
                    writer: asyncio.StreamWriter) -> bool:
        steps = list(reply.steps)
        if steps and isinstance(steps[0], Hangup):
            writer.transport.abort()
            return False
        if steps and isinstance(steps[0], Status):
            first = steps[0]
            await self._json(writer, first.status, first.body, first.headers)
            return True
        if not body.get("stream"):
            await self._json(writer, 200, _collapse(steps, body))
            return True
        want_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n")
        pending = 0
        for step in steps:
            if isinstance(step, Chunk):
                if "usage" in step.data and not step.data.get("choices") and not want_usage:
                    continue
                data = _counted(step, body)
                payload = b"data: " + json.dumps(data, separators=(",", ":")).encode() \
                    + b"\n\n"
                writer.write(b"%x\r\n%s\r\n" % (len(payload), payload))
                pending += 1
                if reply.delay:
                    await writer.drain()
                    await asyncio.sleep(reply.delay)
                elif pending >= 64:
                    pending = 0
                    await writer.drain()
            elif isinstance(step, Raw):
                writer.write(b"%x\r\n%s\r\n" % (len(step.data), step.data))
            elif isinstance(step, Pause):
                await writer.drain()
                await asyncio.sleep(step.seconds)
            elif isinstance(step, Gate):
                await writer.drain()
                await asyncio.get_running_loop().run_in_executor(
                    None, step.event.wait, step.timeout)
            elif isinstance(step, Drop):
                await writer.drain()
                writer.transport.abort()
                return False
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


def _prompt_tokens(body: dict[str, Any]) -> int:
    from desktop_agent.core.context.tokens import estimate_tokens

    messages = body.get("messages") or []
    return estimate_tokens(messages if isinstance(messages, list) else [],
                           tools=body.get("tools") or None)


def _read_tokens(body: dict[str, Any]) -> int:
    """The prompt's size as this server reads it (the quick count: no tokenizer to load)."""
    messages = body.get("messages") or []
    return quick_estimate_tokens(messages if isinstance(messages, list) else [],
                                 tools=body.get("tools") or None)


def _counted(step: Chunk, body: dict[str, Any]) -> dict[str, Any]:
    """The chunk's data, its usage counting the prompt read when the script asks so."""
    usage = step.data.get("usage")
    if not step.count_prompt or not isinstance(usage, dict) or \
            usage.get("prompt_tokens") is not None:
        return step.data
    usage = dict(usage)
    usage["prompt_tokens"] = _read_tokens(body)
    usage["total_tokens"] = usage["prompt_tokens"] + int(usage.get("completion_tokens") or 0)
    return {**step.data, "usage": usage}


def _cut_as_ollama(body: dict[str, Any], window: int) -> dict[str, Any]:
    """The request as Ollama reads it with ``num_ctx`` ``window``: oldest messages dropped.

    As ``chatPrompt`` in Ollama's ``server/prompt.go``: messages are dropped
    from the front until the rest fits, keeping the system messages among
    those dropped and always the last message.
    """
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    for start in range(len(messages)):
        kept = [m for m in messages[:start] if m.get("role") == "system"] + messages[start:]
        if start == len(messages) - 1 or _read_tokens({**body, "messages": kept}) <= window:
            return {**body, "messages": kept}
    return body


def _collapse(steps: list[Any], body: dict[str, Any]) -> dict[str, Any]:
    """Build a non-streaming completion from a script's chunks."""
    text_parts: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish = "stop"
    usage = None
    for step in steps:
        if not isinstance(step, Chunk):
            continue
        if step.data.get("usage"):
            usage = _counted(step, body)["usage"]
        for choice in step.data.get("choices", []):
            delta = choice.get("delta", {})
            if delta.get("content"):
                text_parts.append(delta["content"])
            for frag in delta.get("tool_calls") or []:
                call = calls.setdefault(frag["index"], {"id": None, "type": "function",
                                                        "function": {"name": "", "arguments": ""}})
                call["id"] = frag.get("id") or call["id"]
                fn = frag.get("function", {})
                call["function"]["name"] += fn.get("name") or ""
                call["function"]["arguments"] += fn.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text_parts) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {"id": "chatcmpl-scripted", "object": "chat.completion", "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage}
