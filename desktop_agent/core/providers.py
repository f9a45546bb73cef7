"""Find local model servers and list their chat models.

Probes the usual ports in parallel with a short timeout, so a window that
asks on start never hangs on a machine with nothing running:

* LM Studio on :1234 (its ``/api/v0/models`` adds type and context length),
* Ollama on :11434 (``/api/tags`` and ``/api/show`` add context length and
  let embedding models be filtered out),
* llama.cpp's ``llama-server`` on :8080 (``/props`` gives ``n_ctx``),
* vLLM on :8000 (``max_model_len`` in ``/v1/models``).

``DESKTOP_AGENT_BASE_URL`` adds a server to probe; ``DESKTOP_AGENT_MODEL``
names the preferred model (see :func:`preferred_server_and_model`).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

ModelKind = Literal["chat", "embedding", "image", "unknown"]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A model a server offers."""

    id: str
    context_length: int | None = None
    kind: ModelKind = "chat"
    owned_by: str | None = None


@dataclass(slots=True)
class ServerInfo:
    """The result of probing one server."""

    kind: str
    name: str
    base_url: str
    up: bool = False
    models: list[ModelInfo] = field(default_factory=list)
    error: str | None = None

    @property
    def chat_models(self) -> list[ModelInfo]:
        """The models usable for chat (embedding and image-generation models filtered out)."""
        return [m for m in self.models if m.kind in ("chat", "unknown")]


KNOWN_SERVERS: tuple[tuple[str, str, str], ...] = (
    ("lmstudio", "LM Studio", "http://127.0.0.1:1234/v1"),
    ("ollama", "Ollama", "http://127.0.0.1:11434/v1"),
    ("llamacpp", "llama.cpp", "http://127.0.0.1:8080/v1"),
    ("vllm", "vLLM", "http://127.0.0.1:8000/v1"),
)

_EMBEDDING_HINTS = ("embed", "bge-", "e5-", "gte-", "minilm", "nomic-embed", "rerank")


# image generators answer /images, not /chat/completions (OpenAI-style mocks list them)
_IMAGE_HINTS = ("gpt-image", "dall-e", "stable-diffusion", "sdxl", "flux.")


def _looks_like_embedding(model_id: str) -> bool:
    lowered = model_id.lower()
    return any(hint in lowered for hint in _EMBEDDING_HINTS)


def _kind_from_name(model_id: str) -> ModelKind:
    """Guess a model's kind from its id, used only when the server gives no type."""
    lowered = model_id.lower()
    if any(hint in lowered for hint in _IMAGE_HINTS):
        return "image"
    return "embedding" if _looks_like_embedding(model_id) else "chat"


def _root(base_url: str) -> str:
    url = base_url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


async def _get_json(http: httpx.AsyncClient, url: str) -> Any:
    response = await http.get(url)
    response.raise_for_status()
    return response.json()


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
    extra: dict[str, ModelInfo] = {}
    if kind == "lmstudio":
        extra = await _lmstudio_details(http, root)
    elif kind == "ollama":
        extra = await _ollama_details(http, root)
    data = await _get_json(http, f"{base_url}/models")
    entries = data.get("data", []) if isinstance(data, dict) else []
    n_ctx = await _llamacpp_context(http, root) if kind in ("llamacpp", "openai") else None
    models: list[ModelInfo] = []
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("id"):
            continue
        model_id = str(entry["id"])
        detail = extra.get(model_id)
        context = (detail.context_length if detail else None) or entry.get("max_model_len") \
            or entry.get("context_length") or n_ctx
        model_kind: ModelKind = detail.kind if detail else _kind_from_name(model_id)
        models.append(ModelInfo(model_id, int(context) if context else None, model_kind,
                                entry.get("owned_by")))
    return models


async def _lmstudio_details(http: httpx.AsyncClient, root: str) -> dict[str, ModelInfo]:
    try:
        data = await _get_json(http, f"{root}/api/v0/models")
    except (httpx.HTTPError, ValueError):
        return {}
    details: dict[str, ModelInfo] = {}
    for entry in data.get("data", []) if isinstance(data, dict) else []:
        model_type = str(entry.get("type", ""))
        kind: ModelKind = "embedding" if model_type == "embeddings" else (
            "chat" if model_type in ("llm", "vlm") else "unknown")
        context = entry.get("loaded_context_length") or entry.get("max_context_length")
        details[str(entry.get("id"))] = ModelInfo(str(entry.get("id")), context, kind)
    return details


async def _ollama_details(http: httpx.AsyncClient, root: str) -> dict[str, ModelInfo]:
    try:
        data = await _get_json(http, f"{root}/api/tags")
    except (httpx.HTTPError, ValueError):
        return {}
    names = [str(m.get("name") or m.get("model")) for m in data.get("models", [])]

    async def show(name: str) -> ModelInfo:
        try:
            response = await http.post(f"{root}/api/show", json={"model": name})
            response.raise_for_status()
            info = response.json()
        except (httpx.HTTPError, ValueError):
            return ModelInfo(name, None, "embedding" if _looks_like_embedding(name) else "chat")
        model_info = info.get("model_info") or {}
        context = next((v for k, v in model_info.items() if k.endswith(".context_length")), None)
        capabilities = info.get("capabilities") or []
        if capabilities:
            kind: ModelKind = "chat" if "completion" in capabilities else "embedding"
        else:
            kind = "embedding" if _looks_like_embedding(name) else "chat"
        return ModelInfo(name, context, kind)

    shown = await asyncio.gather(*(show(n) for n in names))
    return {m.id: m for m in shown}


async def _llamacpp_context(http: httpx.AsyncClient, root: str) -> int | None:
    try:
        props = await _get_json(http, f"{root}/props")
    except (httpx.HTTPError, ValueError):
        return None
    settings = props.get("default_generation_settings", {}) if isinstance(props, dict) else {}
    n_ctx = settings.get("n_ctx") or (props.get("n_ctx") if isinstance(props, dict) else None)
    return int(n_ctx) if isinstance(n_ctx, int) else None


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
        info.up = True  # it answered; the key may be wrong
        status = exc.response.status_code
        info.error = ("needs an API key" if status in (401, 403)
                      else f"answered {status} to /v1/models")
    except (httpx.HTTPError, ValueError, OSError) as exc:
        info.error = "not running" if isinstance(exc, httpx.ConnectError) else \
            f"no answer ({type(exc).__name__})"
    return info


async def discover_servers(timeout: float = 0.6, api_key: str | None = None,
                           extra_urls: tuple[str, ...] = ()) -> list[ServerInfo]:
    """Probe the known local servers (and any extra URLs) in parallel."""
    targets = [(kind, name, url) for kind, name, url in KNOWN_SERVERS]
    env_url = os.environ.get("DESKTOP_AGENT_BASE_URL")
    urls = [*extra_urls, *([env_url] if env_url else [])]
    known = {url for _, _, url in targets}
    targets += [("openai", url, url) for url in urls if url.rstrip("/") not in known]
    return list(await asyncio.gather(*(
        probe_server(url, kind=kind, name=name, api_key=api_key, timeout=timeout)
        for kind, name, url in targets)))


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
