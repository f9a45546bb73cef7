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
process, through the server's ``AsyncOpenAI`` like every other request
(:func:`~desktop_agent.core.servers.discovery.server_client`); nothing here raises.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import openai

from desktop_agent.core.servers.model_details import get_json, request_errors
from desktop_agent.core.servers.template_tools import template_ignores_tools

if TYPE_CHECKING:
    from desktop_agent.core.wire.connection_pool import ConnectionPool

#: Servers whose OpenAI-compatible route turns ``response_format`` into a grammar.
GRAMMAR_SERVERS = ("llama.cpp", "LM Studio", "Ollama", "vLLM")


@dataclass(frozen=True, slots=True)
class ToolCallSupport:
    """What the server said (None: it did not say).

    Attributes:
        server: The server's name when one of the known kinds answered.
        grammar: Whether it turns ``response_format`` JSON schemas into a grammar.
        native: Whether the model is known to write native tool calls.
        reached: False when no endpoint answered at all (the server is down or
            unreachable): nothing was learnt, so nothing should be remembered.
        template_ignores_tools: llama.cpp's chat template drops ``tools``
            (:mod:`.template_tools`; None: not known).
    """

    server: str | None = None
    grammar: bool | None = None
    native: bool | None = None
    reached: bool = True
    template_ignores_tools: bool | None = None


def _root(base_url: str) -> str:
    url = base_url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


async def _llamacpp(http: openai.AsyncOpenAI, root: str, model: str, timeout: float,
                    ) -> ToolCallSupport | None:
    props = await get_json(http, f"{root}/props", timeout)
    if not isinstance(props, dict) or "default_generation_settings" not in props:
        return None
    ignored = await template_ignores_tools(http, root, props, timeout)
    return ToolCallSupport("llama.cpp", True, False if ignored else None,
                           template_ignores_tools=ignored)


async def _ollama(http: openai.AsyncOpenAI, root: str, model: str, timeout: float,
                    ) -> ToolCallSupport | None:
    info = await get_json(http, f"{root}/api/show", timeout, body={"model": model})
    capabilities = info.get("capabilities") if isinstance(info, dict) else None
    if not isinstance(capabilities, list):
        return None
    return ToolCallSupport("Ollama", True, "tools" in capabilities)


async def _lmstudio(http: openai.AsyncOpenAI, root: str, model: str, timeout: float,
                    ) -> ToolCallSupport | None:
    data = await get_json(http, f"{root}/api/v0/models", timeout)
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    entry = next((e for e in entries if isinstance(e, dict) and e.get("id") == model), None)
    capabilities = entry.get("capabilities") if entry else None
    native = "tool_use" in capabilities if isinstance(capabilities, list) else None
    return ToolCallSupport("LM Studio", True, native)


async def _litellm(http: openai.AsyncOpenAI, root: str, model: str, timeout: float,
                    ) -> ToolCallSupport | None:
    data = await get_json(http, f"{root}/v1/model/info", timeout)
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


async def _vllm(http: openai.AsyncOpenAI, root: str, model: str, timeout: float,
                    ) -> ToolCallSupport | None:
    data = await get_json(http, f"{root}/v1/models", timeout)
    entries = data.get("data") if isinstance(data, dict) else None
    if isinstance(entries, list) and any(
            isinstance(e, dict) and e.get("owned_by") == "vllm" for e in entries):
        return ToolCallSupport("vLLM", True, None)
    return None


Reader = Callable[["openai.AsyncOpenAI", str, str, float], Awaitable[ToolCallSupport | None]]
_READERS: tuple[Reader, ...] = (_llamacpp, _ollama, _lmstudio, _litellm, _vllm)
_FAILURES: tuple[type[BaseException], ...] = (*request_errors(), AttributeError, OSError)


async def tool_call_support(base_url: str, model: str, api_key: str | None = None,
                            timeout: float = 3.0, pool: ConnectionPool | None = None,
                            ) -> ToolCallSupport:
    """Ask the server's own endpoints about ``model``; unknown when none answers."""
    from desktop_agent.core.servers.discovery import server_client

    root = _root(base_url)

    reached: list[bool] = []

    async def ask(reader: Reader, http: openai.AsyncOpenAI) -> ToolCallSupport | None:
        try:
            found = await reader(http, root, model, timeout)
        except openai.APIStatusError:  # it answered: not this kind of server
            reached.append(True)
            return None
        except _FAILURES:
            return None
        reached.append(True)
        return found

    try:
        async with server_client(base_url, api_key, pool) as http:
            answers = await asyncio.gather(*(ask(r, http) for r in _READERS))
    except _FAILURES:
        return ToolCallSupport(reached=False)
    return next((a for a in answers if a is not None), ToolCallSupport(reached=bool(reached)))
