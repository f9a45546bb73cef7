"""Tool results a script hands back itself (manual mode), even mid-stream.

The seed's scripts answer a ``ToolUseBlock`` inside the ``async for`` that
yielded it, before the reply has finished and entered the history. Such
answers are held here and written right after the assistant message that
holds their calls, so the history keeps every call before its result.
``add_tool_result`` also works with or without ``await`` (the seed's was a
plain method): it does its work at once and returns :data:`DONE`.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from typing import Any

from desktop_agent.core.context.history_invariants import tool_message


class _Done:
    """An awaitable that is already finished (``await`` on it returns None)."""

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield  # makes this a generator


DONE = _Done()


def result_message(tool_call_id: str, content: Any, name: str | None,
                   is_error: bool) -> dict[str, Any]:
    """The ``tool`` message for a result given as text or any JSON-able value."""
    text = content if isinstance(content, str) else json.dumps(content, default=str)
    return tool_message(tool_call_id, name, f"Error: {text}" if is_error else text)


class EarlyResults:
    """Results for calls streamed in the running turn but not yet in history."""

    def __init__(self) -> None:
        self.streamed: dict[str, str] = {}  # call id -> tool name, this reply
        self.released = False  # some results were written during this turn
        self._held: dict[str, dict[str, Any]] = {}

    def reset(self, new_turn: bool = False) -> None:
        """Forget the previous reply's calls (and, for a new turn, the released flag)."""
        self.streamed.clear()
        self._held.clear()
        if new_turn:
            self.released = False

    def hold(self, message: dict[str, Any]) -> None:
        """Keep ``message`` until its call is in history."""
        self._held[message["tool_call_id"]] = message

    def release(self, history: list[dict[str, Any]]) -> None:
        """Append held results whose calls the last assistant message holds, in call order."""
        if not self._held or not history or history[-1].get("role") != "assistant":
            return
        for call in history[-1].get("tool_calls") or ():
            held = self._held.pop(call.get("id"), None)
            if held is not None:
                if "name" not in held and call.get("function", {}).get("name"):
                    held["name"] = call["function"]["name"]
                history.append(held)
                self.released = True
        self._held.clear()
