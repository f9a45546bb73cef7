"""What ran is what the history says: a call's arguments after an edit.

When an approver (or a ``PreToolUse`` hook) changes a call's input, the tool
runs with the new input. The model must see that input in the history it is
sent next, or it reasons about a command that never ran; front ends must
show and store it too. The model's own arguments are handed back so a front
end can keep them as a note (the core keeps nothing the server would see).
"""

from __future__ import annotations

import json
from typing import Any


def replace_call_arguments(history: list[dict[str, Any]], call_id: str,
                           ran_input: dict[str, Any]) -> str | None:
    """Put ``ran_input`` into the newest assistant entry that holds ``call_id``.

    Returns:
        The model's original arguments text, or None when no entry holds the call.
    """
    for message in reversed(history):
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            if call.get("id") == call_id:
                function = call.setdefault("function", {})
                original = function.get("arguments")
                function["arguments"] = json.dumps(ran_input, ensure_ascii=False)
                return original if isinstance(original, str) else None
    return None
