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

``DESKTOP_AGENT_BASE_URL`` adds a server to probe; ``DESKTOP_AGENT_MODEL``
names the preferred model (see :func:`preferred_server_and_model`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import httpx

from desktop_agent.core.servers.model_details import (
    ModelDetail,
    ModelKind,
    get_json,
    kind_from_name,
    litellm_details,
    llamacpp_props,
    lmstudio_details,
    ollama_details,
)

#: What ``desktop-agent serve`` answers on ``GET /alive`` (``service``).
OWN_SERVICE = "desktop-agent"


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A model a server offers.

    Attributes:
        vision: Whether it reads images, where the server says (LM Studio
            ``vlm``, Ollama's ``vision`` capability, llama.cpp's
            ``modalities``, LiteLLM's ``supports_vision``); None when unknown.
    """

    id: str
    context_length: int | None = None
    kind: ModelKind = "chat"
    owned_by: str | None = None
    vision: bool | None = None


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


async def list_models(base_url: str, api_key: str | None = None, *, kind: str = "openai",
                      timeout: float = 2.0) -> list[ModelInfo]:
    """The models of one server, with context lengths where the server tells them.

    Raises:
        httpx.HTTPError: the server could not be reached or answered an error.
    """
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx.AsyncClient(timeout=timeout, headers=headers) as http:
        return await _list_models(http, base_url.rstrip("/"), kind)


async def _list_models(http: httpx.AsyncClient, base_url: str, kind: str) -> list[ModelInfo]:
    root = _root(base_url)
    extra: dict[str, ModelDetail] = {}
    if kind == "lmstudio":
        extra = await lmstudio_details(http, root)
    elif kind == "ollama":
        extra = await ollama_details(http, root)
    elif kind in ("litellm", "openai"):
        extra = await litellm_details(http, root)
    data = await get_json(http, f"{base_url}/models")
    entries = data.get("data", []) if isinstance(data, dict) else []
    props = await llamacpp_props(http, root) if kind in ("llamacpp", "openai") else None
    models: list[ModelInfo] = []
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("id"):
            continue
        model_id = str(entry["id"])
        detail = extra.get(model_id) or props or ModelDetail()
        context = detail.context_length or entry.get("max_model_len") \
            or entry.get("max_input_tokens") \
            or entry.get("context_length")
        model_kind: ModelKind = detail.kind or kind_from_name(model_id)
        models.append(ModelInfo(model_id, int(context) if context else None, model_kind,
                                entry.get("owned_by"), detail.vision))
    return models


async def _is_own_server(http: httpx.AsyncClient, base_url: str) -> bool:
    """Whether ``desktop-agent serve`` answers at this address (its ``/alive``)."""
    try:
        answer = await get_json(http, f"{_root(base_url)}/alive")
    except (httpx.HTTPError, ValueError):
        return False
    return isinstance(answer, dict) and answer.get("service") == OWN_SERVICE


async def probe_server(base_url: str, *, kind: str = "openai", name: str | None = None,
                       api_key: str | None = None, timeout: float = 0.6) -> ServerInfo:
    """Probe one server; never raises, the error is kept in ``ServerInfo.error``."""
    info = ServerInfo(kind, name or base_url, base_url.rstrip("/"))
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with httpx.AsyncClient(timeout=timeout, headers=headers) as http:
            info.models = await _list_models(http, info.base_url, kind)
        info.up = True
    except httpx.HTTPStatusError as exc:
        async with httpx.AsyncClient(timeout=timeout) as http:
            if await _is_own_server(http, info.base_url):
                info.own = True
                info.error = "this app's own REST server (desktop-agent serve), not a model server"
                return info
        info.up = True  # it answered; the key may be wrong
        status = exc.response.status_code
        info.error = ("needs an API key" if status in (401, 403)
                      else f"answered {status} to /v1/models")
    except (httpx.HTTPError, ValueError, OSError) as exc:
        info.error = "not running" if isinstance(exc, httpx.ConnectError) else \
            f"no answer ({type(exc).__name__})"
    return info


async def discover_servers(timeout: float = 0.6, api_key: str | None = None,
                           extra_urls: tuple[str, ...] = (),
                           known: Sequence[tuple[str, str, str]] = KNOWN_SERVERS,
                           ) -> list[ServerInfo]:
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
    """
    targets = list(known)
    env_url = os.environ.get("DESKTOP_AGENT_BASE_URL")
    urls = [*extra_urls, *([env_url] if env_url else [])]
    places = {url for _, _, url in targets}
    targets += [("openai", url, url) for url in urls if url.rstrip("/") not in places]
    found = await asyncio.gather(*(
        probe_server(url, kind=kind, name=name, api_key=api_key, timeout=timeout)
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
