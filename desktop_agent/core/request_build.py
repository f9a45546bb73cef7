"""From options and history to a chat request, and from a reply to a history entry.

Pure functions: what is sent and what is kept are the two places where the
history invariants (no reasoning sent back, every call kept with its id) are
decided, so they are written once and tested through the client.
"""

from __future__ import annotations

import json
from typing import Any

from desktop_agent.core.context.content_parts import check_vision, images_for_model
from desktop_agent.core.options import AgentOptions
from desktop_agent.core.tooling import constrained_calls, tool_call_mode, tool_match
from desktop_agent.core.tooling.plan_mode import PLAN_MODE_NOTE
from desktop_agent.core.types import ToolUseBlock, ToolUseError
from desktop_agent.core.wire.call_lists import Said
from desktop_agent.core.wire.stream import StreamAggregator


def build_request(options: AgentOptions, history: list[dict[str, Any]], *,
                  calls_only: bool = False, answer_only: bool = False,
                  max_tokens: int | None = None) -> dict[str, Any]:
    """The streaming chat-completions request for ``history`` under ``options``.

    ``calls_only`` holds the reply to calls of the offered tools (asking a
    reply in prose again); ``answer_only`` to an answer (asking a call of
    placeholders again; also when the person named no tool's job, see
    :mod:`.tooling.tool_match`); ``max_tokens`` replaces the options' limit
    (asking a cut reply again with more room).
    """
    o = options
    constrained = calls_only or constrained_calls.applies(o)
    limit = max_tokens or o.max_tokens
    messages: list[dict[str, Any]] = []
    system = o.system_prompt or ""
    if o.permission_mode == "plan":
        system = "\n\n".join(p for p in (system, PLAN_MODE_NOTE) if p)
    tools = list(o.tools)
    if constrained:
        # The prompt describes every tool, in the options' order, in every request:
        # the fixed prefix stays byte for byte the same, so a server's prefix cache
        # reuses it. Which tools the reply may call this time (the ones the person
        # named, most likely meant first; see tool_match) is the grammar's business,
        # which costs no prompt tokens.
        system = "\n\n".join(p for p in (system, constrained_calls.instructions(tools)) if p)
        tools = tool_match.offered(history, tools)
        if calls_only or not tools:  # asked again for a call, or held to an answer
            answer_only = answer_only or not tools
            tools = tool_match.by_request(list(o.tools), tool_match.last_request(history))
    if system:
        messages.append({"role": "system", "content": system})
    check_vision(history, o.vision, o.model)  # history set from a store
    messages.extend(images_for_model(history, o.vision))
    request: dict[str, Any] = {
        "model": o.model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if constrained:
        request["response_format"] = constrained_calls.response_format(
            tools, calls_only=calls_only, answer_only=answer_only, max_tokens=limit,
            digits=constrained_calls.digit_cap(Said(history).written))
    elif o.tools:
        request["tools"] = [t.to_openai_format() for t in o.tools]
    if limit is not None:
        request["max_tokens"] = limit
    if o.temperature is not None:
        request["temperature"] = o.temperature
    extra = dict(o.extra_body or {})
    if tool_call_mode.server_kind(o.base_url) == "llama.cpp":
        # Keep the slot's prompt cache (the default of recent builds; older ones had it
        # off): the fixed prefix is then processed once, not at every request.
        extra.setdefault("cache_prompt", True)
    if extra:
        request["extra_body"] = extra
    return request


def assistant_message(aggregator: StreamAggregator, calls: list[ToolUseBlock],
                      bad_calls: list[ToolUseError],
                      auto_execute_tools: bool) -> dict[str, Any] | None:
    """The history entry for one reply, or None when it said and called nothing."""
    tool_calls: list[dict[str, Any]] = [
        {"id": c.id, "type": "function",
         "function": {"name": c.name, "arguments": json.dumps(c.input, ensure_ascii=False)}}
        for c in calls
    ]
    if auto_execute_tools:
        # calls with unusable arguments stay in history (as {}) so that the
        # error result sent back has a call to answer
        tool_calls += [
            {"id": e.tool_use_id, "type": "function",
             "function": {"name": e.name, "arguments": "{}"}}
            for e in bad_calls
        ]
    if not aggregator.text and not tool_calls:
        return None
    message: dict[str, Any] = {"role": "assistant",
                               "content": aggregator.text or (None if tool_calls else "")}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


def append_reply(history: list[dict[str, Any]], aggregator: StreamAggregator,
                 calls: list[ToolUseBlock], bad_calls: list[ToolUseError],
                 auto_execute_tools: bool) -> None:
    """Add the reply's history entry to ``history``, unless it said and called nothing."""
    message = assistant_message(aggregator, calls, bad_calls, auto_execute_tools)
    if message is not None:
        history.append(message)
