"""Whether a llama.cpp server's chat template shows the model its tools at all.

A GGUF whose chat template has no tool section (SmolLM2's own, many
fine-tunes) makes llama.cpp drop ``tools`` without an error: the request
succeeds, the prompt is the same size with and without them, and the model
answers in prose because it never saw a tool. Nothing in the reply says so.

Two facts tell it, both from the server itself:

* ``/props`` has ``chat_template_caps.supports_tools`` (recent builds);
* ``/apply-template`` renders the same messages with and without ``tools``:
  the same prompt means the template ignores them. This is the measurement;
  the capability flag is used only when the route is missing.

Only llama.cpp has these routes; any other server gives None (not known).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import openai

from desktop_agent.core.servers.model_details import get_json, request_errors

if TYPE_CHECKING:
    from desktop_agent.core.wire.connection_pool import ConnectionPool

_MESSAGES = [{"role": "system", "content": "You are a helpful assistant."},
             {"role": "user", "content": "What is the weather in Paris?"}]
_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}

_FAILURES: tuple[type[BaseException], ...] = (*request_errors(), OSError)


@dataclass(frozen=True, slots=True)
class TemplateTools:
    """What the server's chat template does with ``tools``.

    Attributes:
        ignored: True: the template drops them (the model never sees a tool);
            False: it renders them; None: not known (not llama.cpp, or no answer).
        how: How it was found: ``rendered`` (``/apply-template`` with and
            without tools) or ``caps`` (``/props``' ``chat_template_caps``).
    """

    ignored: bool | None
    how: str | None = None

    @property
    def sentence(self) -> str | None:
        """What a person should read about it, or None when there is nothing to say."""
        if not self.ignored:
            return None
        return ("This model's chat template has no place for tools: llama.cpp drops them "
                "without an error, so the model never sees them. Tool calls go through "
                "constrained decoding instead (the tools are described in the system "
                "prompt and the reply is held to a call or an answer).")


def _root(base_url: str) -> str:
    url = base_url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


async def _rendered(http: openai.AsyncOpenAI, root: str, timeout: float) -> bool | None:
    """True when the template renders the same prompt with and without tools."""
    try:
        bare = await get_json(http, f"{root}/apply-template", timeout,
                              body={"messages": _MESSAGES})
        tooled = await get_json(http, f"{root}/apply-template", timeout,
                                body={"messages": _MESSAGES, "tools": [_TOOL]})
    except request_errors():
        return None
    prompts = [p.get("prompt") if isinstance(p, dict) else None for p in (bare, tooled)]
    if not all(isinstance(p, str) for p in prompts):
        return None
    return prompts[0] == prompts[1]


def _caps(props: Any) -> bool | None:
    caps = props.get("chat_template_caps") if isinstance(props, dict) else None
    supports = caps.get("supports_tools") if isinstance(caps, dict) else None
    return None if not isinstance(supports, bool) else not supports


async def template_ignores_tools(http: openai.AsyncOpenAI, root: str, props: Any,
                                 timeout: float) -> bool | None:
    """From a llama.cpp server's ``/props`` answer: whether its template drops ``tools``."""
    rendered = await _rendered(http, root, timeout)
    return rendered if rendered is not None else _caps(props)


async def template_tools(base_url: str, api_key: str | None = None, *, timeout: float = 3.0,
                         pool: ConnectionPool | None = None) -> TemplateTools:
    """Ask a llama.cpp server whether its chat template drops ``tools``; never raises."""
    from desktop_agent.core.servers.discovery import server_client

    root = _root(base_url)
    try:
        async with server_client(base_url, api_key, pool) as http:
            try:
                props = await get_json(http, f"{root}/props", timeout)
            except request_errors():
                return TemplateTools(None)
            if not isinstance(props, dict) or "default_generation_settings" not in props:
                return TemplateTools(None)  # not llama.cpp
            rendered = await _rendered(http, root, timeout)
    except _FAILURES:
        return TemplateTools(None)
    if rendered is not None:
        return TemplateTools(rendered, "rendered")
    caps = _caps(props)
    return TemplateTools(caps, "caps" if caps is not None else None)
