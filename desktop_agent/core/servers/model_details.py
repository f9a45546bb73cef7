"""What each kind of server says about its models beyond ``/v1/models``.

``/v1/models`` gives ids only. The servers people run each have a richer
endpoint, and its *type* fields are trusted before any guess from a model's
name (a name says little: ``qwen2.5-vl`` sees, ``bge-m3`` embeds, LLMock's
``gpt-image-1`` draws):

* LM Studio ``/api/v0/models``: ``type`` (``llm``, ``vlm``, ``embeddings``) and
  the loaded context length;
* Ollama ``/api/show``: ``capabilities`` (``completion``, ``vision``,
  ``embedding``), the Modelfile's ``num_ctx`` and ``<arch>.context_length``;
  ``/api/ps``: the window of a loaded model;
* llama.cpp ``/props``: the per-slot ``n_ctx`` and ``modalities.vision``;
* LiteLLM ``/v1/model/info``: ``mode``, ``max_input_tokens``, ``supports_vision``.

The context figure is always the window the server applies (read by
:mod:`.context_window`), with the trained length and the figure's source beside it.

Every reader returns ``{model id: ModelDetail}`` and never raises: a server
without the endpoint gives ``{}``. Each takes the server's ``AsyncOpenAI``
(the one its chats use, see :mod:`~desktop_agent.core.wire.model_client`) and
sends through it with retries off and the prober's short timeout, or, for a
server on this machine, a :class:`~.local_json.LocalJsonClient`: discovery
then lists it without loading the SDK (which this module therefore imports
only when a request goes through it).
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from desktop_agent.core.servers.context_window import (
    ContextWindow,
    litellm_window,
    llamacpp_window,
    lmstudio_window,
    ollama_window,
)
from desktop_agent.core.servers.local_json import (
    LocalJsonClient,
    LocalRequestError,
    LocalStatusError,
)

if TYPE_CHECKING:
    import openai

    ServerHttp = openai.AsyncOpenAI | LocalJsonClient
    """Who carries a request: the server's SDK client, or the light one for a local server."""

ModelKind = Literal["chat", "embedding", "image", "unknown"]

_EMBEDDING_HINTS = ("embed", "bge-", "e5-", "gte-", "minilm", "nomic-embed", "rerank")
# image generators answer /images, not /chat/completions (OpenAI-style mocks list them)
_IMAGE_HINTS = ("gpt-image", "dall-e", "stable-diffusion", "sdxl", "flux.")


@dataclass(frozen=True, slots=True)
class ModelDetail:
    """What a server's own endpoint said about one model (None: it did not say).

    Attributes:
        context_length: The window the server *applies* to the model's requests
            (see :mod:`.context_window`), never only the trained length.
        trained_context: The length the model was trained for, where told.
        context_source: Where ``context_length`` came from, in words.
    """

    kind: ModelKind | None = None
    context_length: int | None = None
    vision: bool | None = None
    trained_context: int | None = None
    context_source: str | None = None

    @classmethod
    def with_window(cls, kind: ModelKind | None, window: ContextWindow | None,
                    vision: bool | None = None) -> ModelDetail:
        """A detail whose context figures are ``window``'s."""
        if window is None:
            return cls(kind, None, vision)
        return cls(kind, window.applied, vision, window.trained, window.source)


def kind_from_name(model_id: str) -> ModelKind:
    """Guess a model's kind from its id, used only when the server gives no type."""
    lowered = model_id.lower()
    if any(hint in lowered for hint in _IMAGE_HINTS):
        return "image"
    return "embedding" if any(h in lowered for h in _EMBEDDING_HINTS) else "chat"


def request_errors() -> tuple[type[Exception], ...]:
    """What a request to a server may raise: status and connection errors, bad JSON.

    The SDK's errors are among them once the SDK is imported; before that no
    request has gone through it (a local server is asked with
    :class:`~.local_json.LocalJsonClient`, whose errors are always among them).
    """
    openai = sys.modules.get("openai")
    sdk_error = getattr(openai, "APIError", None)  # None: not imported (or still importing)
    sdk = (sdk_error,) if isinstance(sdk_error, type) else ()
    return (*sdk, LocalRequestError, ValueError)


def status_errors() -> tuple[type[Exception], ...]:
    """The errors of :func:`request_errors` that mean the server answered an error status.

    Each has ``status_code``.
    """
    openai = sys.modules.get("openai")
    sdk_error = getattr(openai, "APIStatusError", None)
    return (*((sdk_error,) if isinstance(sdk_error, type) else ()), LocalStatusError)


async def get_json(http: ServerHttp, url: str, timeout: float | None = None,
                   body: Any = None) -> Any:
    """GET ``url`` (POST ``body`` when given) through the server's client; the decoded JSON.

    Raises:
        openai.APIStatusError: The server answered an error status (the SDK's client);
            LocalStatusError through a ``LocalJsonClient``.
        openai.APIConnectionError: It could not be reached or did not answer in time;
            LocalRequestError through a ``LocalJsonClient``.
        ValueError: The answer was not JSON.
    """
    if isinstance(http, LocalJsonClient):
        return await http.get_json(url, timeout, body)
    import httpx2

    options: Any = {"max_retries": 0}
    if timeout is not None:
        options["timeout"] = httpx2.Timeout(timeout)
    if body is None:
        response: httpx2.Response = await http.get(url, cast_to=httpx2.Response,
                                                   options=options)
    else:
        response = await http.post(url, cast_to=httpx2.Response, body=body, options=options)
    return response.json()


async def lmstudio_details(http: ServerHttp, root: str,
                           timeout: float | None = None) -> dict[str, ModelDetail]:
    try:
        data = await get_json(http, f"{root}/api/v0/models", timeout)
    except request_errors():
        return {}
    details: dict[str, ModelDetail] = {}
    for entry in data.get("data", []) if isinstance(data, dict) else []:
        if not isinstance(entry, dict):
            continue
        model_type = str(entry.get("type", ""))
        kind: ModelKind = {"embeddings": "embedding", "llm": "chat",
                           "vlm": "chat"}.get(model_type, "unknown")  # type: ignore[assignment]
        vision = True if model_type == "vlm" else (False if model_type == "llm" else None)
        details[str(entry.get("id"))] = ModelDetail.with_window(
            kind, lmstudio_window(entry), vision)
    return details


async def ollama_details(http: ServerHttp, root: str,
                         timeout: float | None = None) -> dict[str, ModelDetail]:
    """Ollama's models: ``/api/tags``, ``/api/show`` for each, ``/api/ps`` and ``/api/version``."""
    try:
        data = await get_json(http, f"{root}/api/tags", timeout)
    except request_errors():
        return {}
    names = [str(m.get("name") or m.get("model")) for m in data.get("models", [])
             if isinstance(m, dict)] if isinstance(data, dict) else []
    running, version = await asyncio.gather(get_or_none(http, f"{root}/api/ps", timeout),
                                            get_or_none(http, f"{root}/api/version", timeout))

    async def show(name: str) -> tuple[str, ModelDetail]:
        try:
            info = await get_json(http, f"{root}/api/show", timeout, body={"model": name})
        except request_errors():
            return name, ModelDetail()
        window = ollama_window(name, info, running, version)
        capabilities = info.get("capabilities") if isinstance(info, dict) else None
        if not capabilities:
            return name, ModelDetail.with_window(None, window)
        kind: ModelKind = "chat" if "completion" in capabilities else (
            "embedding" if "embedding" in capabilities else "unknown")
        return name, ModelDetail.with_window(kind, window, "vision" in capabilities)

    return dict(await asyncio.gather(*(show(n) for n in names)))


async def get_or_none(http: ServerHttp, url: str, timeout: float | None = None,
                      body: Any = None) -> Any:
    """:func:`get_json`, or None when the server does not answer it."""
    try:
        return await get_json(http, url, timeout, body)
    except request_errors():
        return None


async def llamacpp_props(http: ServerHttp, root: str,
                         timeout: float | None = None, models: Any = None) -> ModelDetail | None:
    """The one model a llama.cpp server runs: its per-slot context size and whether it sees.

    ``models`` is the server's ``/v1/models`` answer when already read (its
    ``meta.n_ctx_train`` is the trained length); it is asked here otherwise.
    """
    props, models = await asyncio.gather(
        get_or_none(http, f"{root}/props", timeout),
        get_or_none(http, f"{root}/v1/models", timeout) if models is None
        else asyncio.sleep(0, models))
    if not isinstance(props, dict):
        return None
    entries = models.get("data") if isinstance(models, dict) else None
    entry = entries[0] if isinstance(entries, list) and len(entries) == 1 else None
    modalities = props.get("modalities")
    vision = modalities.get("vision") if isinstance(modalities, dict) else None
    return ModelDetail.with_window(None, llamacpp_window(props, entry),
                                   vision if isinstance(vision, bool) else None)


async def litellm_details(http: ServerHttp, root: str,
                          timeout: float | None = None) -> dict[str, ModelDetail]:
    """LiteLLM's ``/v1/model/info``: one entry per deployment, keyed by ``model_name``."""
    try:
        data = await get_json(http, f"{root}/v1/model/info", timeout)
    except request_errors():
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
        details.setdefault(str(entry["model_name"]), ModelDetail.with_window(
            kind, litellm_window(info), vision if isinstance(vision, bool) else None))
    return details
