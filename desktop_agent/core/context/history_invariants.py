"""History invariants: every assistant ``tool_calls`` entry gets its answers.

Servers reject (or templates crash on) a conversation where a tool call has
no result, so every path that ends a turn early answers the open calls with
a short "not executed" message instead of leaving them dangling.
"""

from __future__ import annotations

from typing import Any

NOT_EXECUTED_LIMIT = "Not executed: the tool iteration limit for this turn was reached."
NOT_EXECUTED_LOOP = "Not executed: the same call was repeated too many times in a row."
NOT_EXECUTED_MAX_TURNS = "Not executed: the max_turns limit of model requests was reached."
NOT_EXECUTED_INTERRUPT = "Not executed: the user interrupted the turn."
NOT_EXECUTED_UNANSWERED = "Not executed: no result was provided for this call."


def tool_message(call_id: str, name: str | None, content: str) -> dict[str, Any]:
    """A ``tool`` message answering ``call_id``."""
    message: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": content}
    if name:
        message["name"] = name
    return message


def open_calls(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls of the last assistant message that have no result yet."""
    answered: set[str] = set()
    for message in reversed(history):
        role = message.get("role")
        if role == "tool":
            answered.add(message.get("tool_call_id", ""))
        elif role == "assistant":
            return [c for c in message.get("tool_calls") or [] if c.get("id") not in answered]
        else:
            return []
    return []


def answer_open_calls(history: list[dict[str, Any]], text: str) -> None:
    """Append a ``text`` result for every open call (in place)."""
    for call in open_calls(history):
        history.append(tool_message(call["id"], call["function"]["name"], text))


def history_call_ids(history: list[dict[str, Any]]) -> set[str]:
    """Every tool-call id already in ``history`` (a new call may not reuse one)."""
    return {call["id"] for message in history if message.get("role") == "assistant"
            for call in message.get("tool_calls") or () if isinstance(call, dict)
            and isinstance(call.get("id"), str)}
