"""Running an MCP server's sampling request on the agent's own model.

One short request to the same server and model as the conversation, with
the server's messages, system prompt and limits, no tools: what the server
asked for and nothing of the conversation (``includeContext`` is not
honoured; the spec leaves it to the client). The server's ``maxTokens`` is
kept within the agent's own ``max_tokens``.
"""

from __future__ import annotations

from typing import Any

from desktop_agent.core.tooling.mcp.server_requests import SamplingReply, SamplingRequest
from desktop_agent.core.wire.side_request import read_whole_reply
from desktop_agent.core.wire.wire_settings import WireSettings


def sampling_messages(request: SamplingRequest) -> list[dict[str, Any]]:
    """The request's messages as chat messages (pictures as image parts)."""
    messages: list[dict[str, Any]] = []
    if request.system_prompt:
        messages.append({"role": "system", "content": request.system_prompt})
    for message in request.messages:
        role = "assistant" if message.role == "assistant" else "user"
        if message.images and role == "user":
            parts: list[dict[str, Any]] = [{"type": "text", "text": message.text}]
            parts += [{"type": "image_url", "image_url": {"url": u}} for u in message.images]
            messages.append({"role": role, "content": parts})
        else:
            messages.append({"role": role, "content": message.text})
    return messages


async def sample_with(http: Any, options: WireSettings, request: SamplingRequest,
                      temperature: float | None = None) -> SamplingReply:
    """The model's answer to ``request``.

    Raises:
        APIError: The request failed (the server that asked is told so).
    """
    limit = request.max_tokens
    if options.max_tokens is not None:
        limit = min(limit, options.max_tokens)
    body: dict[str, Any] = {"model": options.model, "messages": sampling_messages(request),
                            "stream": True, "max_tokens": max(1, limit)}
    chosen = request.temperature if request.temperature is not None else temperature
    if chosen is not None:
        body["temperature"] = chosen
    if request.stop_sequences:
        body["stop"] = list(request.stop_sequences)[:4]
    aggregator = await read_whole_reply(http, body, options)
    stop = {"length": "maxTokens", "stop": "endTurn"}.get(aggregator.finish_reason or "stop",
                                                         "endTurn")
    return SamplingReply(aggregator.text.strip(), options.model, stop)
