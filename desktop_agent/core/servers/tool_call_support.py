"""What a server says about one model's tool calls: native, or by grammar.

The SDK's default tool-call mode (:mod:`~desktop_agent.core.tooling.tool_call_mode`)
needs two facts a plain ``/v1/models`` does not give:

* whether the server compiles ``response_format`` JSON schemas to a grammar
  (llama.cpp, LM Studio, Ollama and vLLM do; which of them answers is told by
  each one's own endpoint);
* whether the model is *known* to call tools natively: Ollama's
  ``capabilities`` lists ``tools`` for models whose template has them, LM
  Studio's ``capabilities`` lists ``tool_use`` for models trained for it,
  LiteLLM's ``supports_function_calling``. llama.cpp only tells whether its
  chat template *accepts* tools, not whether the model writes calls (measured:
  SmolLM2-135M under a tool-aware template never wrote one), so a llama.cpp
  model is not known to call natively.

The endpoints are asked in parallel with a short timeout, once per model and
process; nothing here raises.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx

from desktop_agent.core.servers.model_details import get_json

#: Servers whose OpenAI-compatible route turns ``response_format`` into a grammar.
GRAMMAR_SERVERS = ("llama.cpp", "LM Studio", "Ollama", "vLLM")


@dataclass(frozen=True, slots=True)
class ToolCallSupport:
    """What the server said (None: it did not say).

    Attributes:
        server: The server's name when one of the known kinds answered.
        grammar: Whether it turns ``response_format`` JSON schemas into a grammar.
        native: Whether the model is known to write native tool calls.
    """

    server: str | None = None
    grammar: bool | None = None
    native: bool | None = None


def _root(base_url: str) -> str:
    url = base_url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


async def _llamacpp(http: httpx.AsyncClient, root: str, model: str) -> ToolCallSupport | None:
    props = await get_json(http, f"{root}/props")
    if not isinstance(props, dict) or "default_generation_settings" not in props:
        return None
    return ToolCallSupport("llama.cpp", True, None)


async def _ollama(http: httpx.AsyncClient, root: str, model: str) -> ToolCallSupport | None:
    response = await http.post(f"{root}/api/show", json={"model": model})
    response.raise_for_status()
    info = response.json()
    capabilities = info.get("capabilities") if isinstance(info, dict) else None
    if not isinstance(capabilities, list):
        return None
    return ToolCallSupport("Ollama", True, "tools" in capabilities)


async def _lmstudio(http: httpx.AsyncClient, root: str, model: str) -> ToolCallSupport | None:
    data = await get_json(http, f"{root}/api/v0/models")
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    entry = next((e for e in entries if isinstance(e, dict) and e.get("id") == model), None)
    capabilities = entry.get("capabilities") if entry else None
    native = "tool_use" in capabilities if isinstance(capabilities, list) else None
    return ToolCallSupport("LM Studio", True, native)


async def _litellm(http: httpx.AsyncClient, root: str, model: str) -> ToolCallSupport | None:
    data = await get_json(http, f"{root}/v1/model/info")
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    for entry in entries:
        if isinstance(entry, dict) and entry.get("model_name") == model:
            info = entry.get("model_info")
            native = info.get("supports_function_calling") if isinstance(info, dict) else None
            return ToolCallSupport("LiteLLM", None,
                                   native if isinstance(native, bool) else None)
    return ToolCallSupport("LiteLLM", None, None)


async def _vllm(http: httpx.AsyncClient, root: str, model: str) -> ToolCallSupport | None:
    data = await get_json(http, f"{root}/v1/models")
    entries = data.get("data") if isinstance(data, dict) else None
    if isinstance(entries, list) and any(
            isinstance(e, dict) and e.get("owned_by") == "vllm" for e in entries):
        return ToolCallSupport("vLLM", True, None)
    return None


_READERS = (_llamacpp, _ollama, _lmstudio, _litellm, _vllm)


async def tool_call_support(base_url: str, model: str, api_key: str | None = None,
                            timeout: float = 3.0) -> ToolCallSupport:
    """Ask the server's own endpoints about ``model``; unknown when none answers."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    root = _root(base_url)

    async def ask(reader: Any, http: httpx.AsyncClient) -> ToolCallSupport | None:
        try:
            found: ToolCallSupport | None = await reader(http, root, model)
        except (httpx.HTTPError, ValueError, AttributeError, OSError):
            return None
        return found

    try:
        async with httpx.AsyncClient(timeout=timeout, headers=headers) as http:
            answers = await asyncio.gather(*(ask(r, http) for r in _READERS))
    except (httpx.HTTPError, OSError):
        return ToolCallSupport()
    return next((a for a in answers if a is not None), ToolCallSupport())
