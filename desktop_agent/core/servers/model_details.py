"""What each kind of server says about its models beyond ``/v1/models``.

``/v1/models`` gives ids only. The servers people run each have a richer
endpoint, and its *type* fields are trusted before any guess from a model's
name (a name says little: ``qwen2.5-vl`` sees, ``bge-m3`` embeds, LLMock's
``gpt-image-1`` draws):

* LM Studio ``/api/v0/models``: ``type`` (``llm``, ``vlm``, ``embeddings``) and
  the loaded context length;
* Ollama ``/api/show``: ``capabilities`` (``completion``, ``vision``,
  ``embedding``) and ``<arch>.context_length``;
* llama.cpp ``/props``: ``n_ctx`` and ``modalities.vision``;
* LiteLLM ``/v1/model/info``: ``mode``, ``max_input_tokens``, ``supports_vision``.

Every reader returns ``{model id: ModelDetail}`` and never raises: a server
without the endpoint gives ``{}``. Each takes the server's ``AsyncOpenAI``
(the one its chats use, see :mod:`~desktop_agent.core.wire.model_client`) and
sends through it with retries off and the prober's short timeout.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

import httpx2
import openai

ModelKind = Literal["chat", "embedding", "image", "unknown"]

_EMBEDDING_HINTS = ("embed", "bge-", "e5-", "gte-", "minilm", "nomic-embed", "rerank")
# image generators answer /images, not /chat/completions (OpenAI-style mocks list them)
_IMAGE_HINTS = ("gpt-image", "dall-e", "stable-diffusion", "sdxl", "flux.")


@dataclass(frozen=True, slots=True)
class ModelDetail:
    """What a server's own endpoint said about one model (None: it did not say)."""

    kind: ModelKind | None = None
    context_length: int | None = None
    vision: bool | None = None


def kind_from_name(model_id: str) -> ModelKind:
    """Guess a model's kind from its id, used only when the server gives no type."""
    lowered = model_id.lower()
    if any(hint in lowered for hint in _IMAGE_HINTS):
        return "image"
    return "embedding" if any(h in lowered for h in _EMBEDDING_HINTS) else "chat"


REQUEST_ERRORS: tuple[type[Exception], ...] = (openai.APIError, ValueError)
"""What a request to a server may raise: the SDK's status and connection errors, bad JSON."""


async def get_json(http: openai.AsyncOpenAI, url: str, timeout: float | None = None,
                   body: Any = None) -> Any:
    """GET ``url`` (POST ``body`` when given) through the server's client; the decoded JSON.

    Raises:
        openai.APIStatusError: The server answered an error status.
        openai.APIConnectionError: It could not be reached or did not answer in time.
        ValueError: The answer was not JSON.
    """
    options: Any = {"max_retries": 0}
    if timeout is not None:
        options["timeout"] = httpx2.Timeout(timeout)
    if body is None:
        response: httpx2.Response = await http.get(url, cast_to=httpx2.Response,
                                                   options=options)
    else:
        response = await http.post(url, cast_to=httpx2.Response, body=body, options=options)
    return response.json()


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


async def lmstudio_details(http: openai.AsyncOpenAI, root: str,
                           timeout: float | None = None) -> dict[str, ModelDetail]:
    try:
        data = await get_json(http, f"{root}/api/v0/models", timeout)
    except REQUEST_ERRORS:
        return {}
    details: dict[str, ModelDetail] = {}
    for entry in data.get("data", []) if isinstance(data, dict) else []:
        if not isinstance(entry, dict):
            continue
        model_type = str(entry.get("type", ""))
        kind: ModelKind = {"embeddings": "embedding", "llm": "chat",
                           "vlm": "chat"}.get(model_type, "unknown")  # type: ignore[assignment]
        vision = True if model_type == "vlm" else (False if model_type == "llm" else None)
        context = _int(entry.get("loaded_context_length")) or _int(
            entry.get("max_context_length"))
        details[str(entry.get("id"))] = ModelDetail(kind, context, vision)
    return details


async def ollama_details(http: openai.AsyncOpenAI, root: str,
                           timeout: float | None = None) -> dict[str, ModelDetail]:
    try:
        data = await get_json(http, f"{root}/api/tags", timeout)
    except REQUEST_ERRORS:
        return {}
    names = [str(m.get("name") or m.get("model")) for m in data.get("models", [])
             if isinstance(m, dict)] if isinstance(data, dict) else []

    async def show(name: str) -> tuple[str, ModelDetail]:
        try:
            info = await get_json(http, f"{root}/api/show", timeout, body={"model": name})
        except REQUEST_ERRORS:
            return name, ModelDetail()
        model_info = info.get("model_info") or {}
        context = next((_int(v) for k, v in model_info.items()
                        if k.endswith(".context_length")), None)
        capabilities = info.get("capabilities") or []
        if not capabilities:
            return name, ModelDetail(None, context)
        kind: ModelKind = "chat" if "completion" in capabilities else (
            "embedding" if "embedding" in capabilities else "unknown")
        return name, ModelDetail(kind, context, "vision" in capabilities)

    return dict(await asyncio.gather(*(show(n) for n in names)))


async def llamacpp_props(http: openai.AsyncOpenAI, root: str,
                           timeout: float | None = None) -> ModelDetail | None:
    """The one model a llama.cpp server runs: its context size and whether it sees."""
    try:
        props = await get_json(http, f"{root}/props", timeout)
    except REQUEST_ERRORS:
        return None
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings", {})
    n_ctx = (settings.get("n_ctx") if isinstance(settings, dict) else None) or props.get("n_ctx")
    modalities = props.get("modalities")
    vision = modalities.get("vision") if isinstance(modalities, dict) else None
    return ModelDetail(None, _int(n_ctx), vision if isinstance(vision, bool) else None)


async def litellm_details(http: openai.AsyncOpenAI, root: str,
                           timeout: float | None = None) -> dict[str, ModelDetail]:
    """LiteLLM's ``/v1/model/info``: one entry per deployment, keyed by ``model_name``."""
    try:
        data = await get_json(http, f"{root}/v1/model/info", timeout)
    except REQUEST_ERRORS:
        return {}
    details: dict[str, ModelDetail] = {}
    for entry in data.get("data", []) if isinstance(data, dict) else []:
        if not isinstance(entry, dict) or not entry.get("model_name"):
            continue
        raw_info = entry.get("model_info")
        info: dict[str, Any] = raw_info if isinstance(raw_info, dict) else {}
        mode = info.get("mode")
        kind: ModelKind | None = {
            "chat": "chat", "completion": "chat", "responses": "chat",
            "embedding": "embedding", "rerank": "embedding",
            "image_generation": "image"}.get(mode) if isinstance(mode, str) else None  # type: ignore[assignment]
        if isinstance(mode, str) and kind is None:
            kind = "unknown"
        vision = info.get("supports_vision")
        details.setdefault(str(entry["model_name"]), ModelDetail(
            kind, _int(info.get("max_input_tokens")),
            vision if isinstance(vision, bool) else None))
    return details
