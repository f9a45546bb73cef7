"""Find local model servers and list their chat models.

Probes the usual ports in parallel with a short timeout, so a window that
asks on start never hangs on a machine with nothing running:

* LM Studio on :1234 (its ``/api/v0/models`` adds type and context length),
* Ollama on :11434 (``/api/tags`` and ``/api/show`` add context length and
  capabilities, so embedding models are filtered out),
* llama.cpp's ``llama-server`` on :8080 and on :9931, its announced new
  default (``/props`` gives ``n_ctx`` and whether the model sees),
* vLLM on :8000 (``max_model_len`` in ``/v1/models``),
* a LiteLLM proxy on :4000 (``/v1/model/info`` gives ``max_input_tokens``).

The app's own ``desktop-agent serve`` (also :8000 by default) is recognised by
its ``/alive`` answer and left out: it serves conversations, not a model.
Server-reported types come first (:mod:`.model_details`); a model's name is
only a fallback guess.

A local address where nothing listens is told by a refused TCP connection
(:mod:`.port_check`), and a server that does listen on a loopback address with
no proxy in between is asked with :class:`~.local_json.LocalJsonClient`: so the
search never loads the SDK stack for the servers on this machine (about 17 MB
of an idle window, which the SDK's first turn loads anyway once the person
writes). Any other server's requests go through its ``AsyncOpenAI``: the one in
the ``pool`` given (the same client the server's chats use), or one made for
the probe and closed after it; this module imports the SDK, in a worker thread,
only then.

``DESKTOP_AGENT_BASE_URL`` adds a server to probe; ``DESKTOP_AGENT_MODEL``
names the preferred model (see :func:`preferred_server_and_model`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from desktop_agent.core.servers.local_json import LocalJsonClient
from desktop_agent.core.servers.port_check import reached_directly, refuses_connections
from desktop_agent.core.wire import http_backend
from desktop_agent.core.wire.model_client import cause_chain, load_sdk, new_openai_client

if TYPE_CHECKING:
    import openai

    from desktop_agent.core.servers.model_details import ModelKind, ServerHttp
    from desktop_agent.core.wire.connection_pool import ConnectionPool

#: What ``desktop-agent serve`` answers on ``GET /alive`` (``service``).
OWN_SERVICE = "desktop-agent"


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A model a server offers.

    Attributes:
        context_length: The window the server applies to the model's requests
            (not only what it was trained for; see
            :mod:`~desktop_agent.core.servers.context_window`), None when unknown.
        vision: Whether it reads images, where the server says (LM Studio
            ``vlm``, Ollama's ``vision`` capability, llama.cpp's
            ``modalities``, LiteLLM's ``supports_vision``); None when unknown.
        trained_context: The length the model was trained for, where told.
        context_source: Where ``context_length`` came from, in words.
    """

    id: str
    context_length: int | None = None
    kind: ModelKind = "chat"
    owned_by: str | None = None
    vision: bool | None = None
    trained_context: int | None = None
    context_source: str | None = None


@dataclass(slots=True)
class ServerInfo:
    """The result of probing one server.

    Attributes:
        own: This app's own REST server (``desktop-agent serve``), not a model server.
    """

    kind: str
    name: str
    base_url: str
    up: bool = False
    models: list[ModelInfo] = field(default_factory=list)
    error: str | None = None
    own: bool = False

    @property
    def chat_models(self) -> list[ModelInfo]:
        """The models usable for chat (embedding and image-generation models filtered out)."""
        return [m for m in self.models if m.kind in ("chat", "unknown")]


KNOWN_SERVERS: tuple[tuple[str, str, str], ...] = (
    ("lmstudio", "LM Studio", "http://127.0.0.1:1234/v1"),
    ("ollama", "Ollama", "http://127.0.0.1:11434/v1"),
    ("llamacpp", "llama.cpp", "http://127.0.0.1:8080/v1"),
    ("llamacpp", "llama.cpp", "http://127.0.0.1:9931/v1"),
    ("vllm", "vLLM", "http://127.0.0.1:8000/v1"),
    ("litellm", "LiteLLM", "http://127.0.0.1:4000/v1"),
)


def _root(base_url: str) -> str:
    url = base_url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


@contextlib.asynccontextmanager
async def server_client(base_url: str, api_key: str | None,
                        pool: ConnectionPool | None) -> AsyncIterator[openai.AsyncOpenAI]:
    """The server's client: the pool's (left open) or one of its own, closed after use."""
    if pool is not None:
        yield pool.client(base_url, api_key)
        return
    client = new_openai_client(base_url, api_key)
    try:
        yield client
    finally:
        await client.close()


async def list_models(base_url: str, api_key: str | None = None, *, kind: str = "openai",
                      timeout: float = 2.0, pool: ConnectionPool | None = None,
                      ) -> list[ModelInfo]:
    """The models of one server, with context lengths where the server tells them.

    Raises:
        openai.APIError: the server could not be reached or answered an error.
        ValueError: it answered something other than JSON.
    """
    async with server_client(base_url, api_key, pool) as http:
        return await _list_models(http, base_url.rstrip("/"), kind, timeout)


@contextlib.asynccontextmanager
async def probe_client(base_url: str, api_key: str | None,
                       pool: ConnectionPool | None) -> AsyncIterator[ServerHttp]:
    """Who asks a server found on a probe: the light client for a local one, else the SDK's."""
    if reached_directly(base_url):
        yield LocalJsonClient(api_key)
        return
    await load_sdk()  # in a worker thread: about a second of CPU the first time
    async with server_client(base_url, api_key, pool) as http:
        yield http


async def _list_models(http: ServerHttp, base_url: str, kind: str,
                       timeout: float) -> list[ModelInfo]:
    from desktop_agent.core.servers.context_window import listed_window
    from desktop_agent.core.servers.model_details import (
        ModelDetail,
        get_json,
        kind_from_name,
        litellm_details,
        llamacpp_props,
        lmstudio_details,
        ollama_details,
    )

    root = _root(base_url)
    extra: dict[str, ModelDetail] = {}
    if kind == "lmstudio":
        extra = await lmstudio_details(http, root, timeout)
    elif kind == "ollama":
        extra = await ollama_details(http, root, timeout)
    elif kind in ("litellm", "openai"):
        extra = await litellm_details(http, root, timeout)
    data = await get_json(http, f"{base_url}/models", timeout)
    entries = data.get("data", []) if isinstance(data, dict) else []
    props = await llamacpp_props(http, root, timeout, data) \
        if kind in ("llamacpp", "openai") else None
    models: list[ModelInfo] = []
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("id"):
            continue
        model_id = str(entry["id"])
        detail = extra.get(model_id) or props or ModelDetail()
        if detail.context_length is None:
            detail = ModelDetail.with_window(detail.kind, listed_window(entry), detail.vision)
        model_kind: ModelKind = detail.kind or kind_from_name(model_id)
        models.append(ModelInfo(model_id, detail.context_length, model_kind,
                                entry.get("owned_by"), detail.vision, detail.trained_context,
                                detail.context_source))
    return models


async def _is_own_server(http: ServerHttp, base_url: str, timeout: float) -> bool:
    """Whether ``desktop-agent serve`` answers at this address (its ``/alive``)."""
    from desktop_agent.core.servers.model_details import get_json, request_errors

    try:
        answer = await get_json(http, f"{_root(base_url)}/alive", timeout)
    except request_errors():
        return False
    return isinstance(answer, dict) and answer.get("service") == OWN_SERVICE


def _refused(exc: BaseException) -> bool:
    """Whether nothing listens at the address (as against a server that did not answer)."""
    refused = http_backend.refused_errors()
    return any(isinstance(e, refused) for e in cause_chain(exc))


async def probe_server(base_url: str, *, kind: str = "openai", name: str | None = None,
                       api_key: str | None = None, timeout: float = 0.6,
                       pool: ConnectionPool | None = None) -> ServerInfo:
    """Probe one server; never raises, the error is kept in ``ServerInfo.error``.

    Args:
        base_url: The server's OpenAI-compatible root URL.
        kind: Which server it is (``lmstudio``, ``ollama``, ...: which detail
            endpoints to ask); ``openai`` tries the generic ones.
        name: The name to show (the URL when None).
        api_key: Sent with every request.
        timeout: Seconds per request.
        pool: Where the server's shared client is (None: a client for this probe only).
    """
    info = ServerInfo(kind, name or base_url, base_url.rstrip("/"))
    if await refuses_connections(info.base_url, timeout):
        info.error = "not running"
        return info
    from desktop_agent.core.servers.model_details import request_errors, status_errors

    async with probe_client(info.base_url, api_key, pool) as http:
        # after the client: the SDK's errors are among them once it is loaded for one
        failures: tuple[type[BaseException], ...] = (*request_errors(), OSError)
        try:
            info.models = await _list_models(http, info.base_url, kind, timeout)
            info.up = True
        except status_errors() as exc:
            if await _is_own_server(http, info.base_url, timeout):
                info.own = True
                info.error = "this app's own REST server (desktop-agent serve), not a model server"
                return info
            info.up = True  # it answered; the key may be wrong
            status = getattr(exc, "status_code", 0)
            info.error = ("needs an API key" if status in (401, 403)
                          else f"answered {status} to /v1/models")
        except failures as exc:
            info.error = "not running" if _refused(exc) else \
                f"no answer ({_failure_name(exc)})"
    return info


def _failure_name(exc: BaseException) -> str:
    """The name of what went wrong: the light client's cause (its own error says nothing)."""
    from desktop_agent.core.servers.local_json import LocalRequestError

    if type(exc) is LocalRequestError and exc.__cause__ is not None:
        return type(exc.__cause__).__name__
    return type(exc).__name__


async def discover_servers(timeout: float = 0.6, api_key: str | None = None,
                           extra_urls: tuple[str, ...] = (),
                           known: Sequence[tuple[str, str, str]] = KNOWN_SERVERS,
                           pool: ConnectionPool | None = None) -> list[ServerInfo]:
    """Probe the known local servers (and any extra URLs) in parallel.

    One row per server name: of llama.cpp's two default ports the one that
    answers is shown (the first when neither does). The app's own REST
    server is left out.

    Args:
        timeout: Seconds per probe.
        api_key: Sent to every server probed.
        extra_urls: More servers to probe (kind ``openai``).
        known: ``(kind, name, base_url)`` of the default places to look
            (tests move them to free ports).
        pool: Where each server's shared client is (None: one client per probe).
    """
    targets = list(known)
    env_url = os.environ.get("DESKTOP_AGENT_BASE_URL")
    urls = [*extra_urls, *([env_url] if env_url else [])]
    places = {url for _, _, url in targets}
    targets += [("openai", url, url) for url in urls if url.rstrip("/") not in places]
    found = await asyncio.gather(*(
        probe_server(url, kind=kind, name=name, api_key=api_key, timeout=timeout, pool=pool)
        for kind, name, url in targets))
    return _one_per_name([s for s in found if not s.own])


def _one_per_name(servers: list[ServerInfo]) -> list[ServerInfo]:
    kept: list[ServerInfo] = []
    for server in servers:
        twin = next((k for k in kept if k.name == server.name), None)
        if twin is None:
            kept.append(server)
        elif server.up and not twin.up:
            kept[kept.index(twin)] = server
        elif server.up:
            kept.append(server)  # both answer: show both
    return kept


def preferred_server_and_model(servers: list[ServerInfo]) -> tuple[ServerInfo, ModelInfo] | None:
    """The server and model to preselect: env overrides first, else the first chat model."""
    wanted_url = (os.environ.get("DESKTOP_AGENT_BASE_URL") or "").rstrip("/")
    wanted_model = os.environ.get("DESKTOP_AGENT_MODEL")
    up = [s for s in servers if s.up and s.chat_models]
    ordered = sorted(up, key=lambda s: s.base_url != wanted_url)
    for server in ordered:
        for model in server.chat_models:
            if not wanted_model or model.id == wanted_model:
                return server, model
    if ordered:
        return ordered[0], ordered[0].chat_models[0]
    return None
