"""Asking the conversation's own model to summarise its oldest messages.

The same model and server as the conversation, so nothing else has to be
configured or loaded: one short extra request when compaction is due. The
messages are rendered as a plain transcript (a tool call and its result read
as lines), each clipped, so the summary request itself fits the context.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from desktop_agent.core.context.result_budget import head_within
from desktop_agent.core.context.tokens import count_text_tokens
from desktop_agent.core.wire.side_request import read_whole_reply
from desktop_agent.core.wire.wire_settings import WireSettings

#: The system prompt of a summary request (tests recognise summary requests by it).
SUMMARY_INSTRUCTIONS = (
    "You compress conversations. Summarise the conversation below so that an assistant can "
    "continue it without seeing it: the user's goals and requests, facts learned, file names, "
    "decisions, results of tool calls, and what is still to do. Be brief and factual; write "
    "plain sentences, no preamble.")
_PER_MESSAGE_TOKENS = 200
_FRAME_TOKENS = 120  # instructions, headers and the chat template around them


def render_transcript(messages: Sequence[dict[str, Any]], previous: str | None,
                      budget: int) -> str:
    """The messages as lines of text within ``budget`` tokens (the oldest go first)."""
    lines: list[str] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content or "")
        if role == "assistant":
            calls = [f"{(c.get('function') or {}).get('name')}"
                     f"({(c.get('function') or {}).get('arguments') or ''})"
                     for c in message.get("tool_calls") or ()]
            if calls:
                text = (text + "\n" if text else "") + "Called " + "; ".join(calls)
            line = f"Assistant: {text}"
        elif role == "tool":
            line = f"Result of {message.get('name') or 'the tool'}: {text}"
        else:
            line = f"{str(role).capitalize()}: {text}"
        if count_text_tokens(line) > _PER_MESSAGE_TOKENS:
            line = head_within(line, _PER_MESSAGE_TOKENS) + " [...]"
        lines.append(line)
    head = f"Summary so far: {previous}\n\n" if previous else ""
    budget -= count_text_tokens(head)
    sizes = [count_text_tokens(line) + 1 for line in lines]
    while lines and sum(sizes) > budget:
        lines.pop(0)
        sizes.pop(0)
    if len(lines) < len(messages):
        head += "[The oldest messages are left out here.]\n"
    return head + "\n".join(lines)


async def summarise(http: Any, options: WireSettings, messages: Sequence[dict[str, Any]],
                    previous: str | None, max_tokens: int, context: int) -> str:
    """The model's summary of ``messages`` (after ``previous``, an earlier summary).

    Raises:
        APIError: The request failed; the caller falls back to dropping messages.
    """
    transcript = render_transcript(messages, previous,
                                   max(200, context - max_tokens - _FRAME_TOKENS))
    request: dict[str, Any] = {
        "model": options.model,
        "messages": [{"role": "system", "content": SUMMARY_INSTRUCTIONS},
                     {"role": "user", "content": transcript}],
        "stream": True,
        "max_tokens": max_tokens,
        "temperature": 0.2,
    }
    aggregator = await read_whole_reply(http, request, options)
    return aggregator.text.strip()
