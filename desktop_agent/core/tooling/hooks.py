"""Hooks: functions that may inspect, change or block prompts and tool calls.

``AgentOptions(hooks={HOOK_PRE_TOOL_USE: [handler, ...]})``. Handlers run in
order; the first one that returns a :class:`HookDecision` (not None) decides,
and the rest are skipped. Handlers may be sync or async.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

HOOK_PRE_TOOL_USE = "pre_tool_use"
HOOK_POST_TOOL_USE = "post_tool_use"
HOOK_USER_PROMPT_SUBMIT = "user_prompt_submit"
HOOK_EVENTS = (HOOK_PRE_TOOL_USE, HOOK_POST_TOOL_USE, HOOK_USER_PROMPT_SUBMIT)


@dataclass(slots=True)
class HookDecision:
    """What a hook wants.

    Attributes:
        continue_: False blocks the prompt or the tool call.
        modified_input: Replacement tool input (PreToolUse).
        modified_prompt: Replacement prompt (UserPromptSubmit); ``""`` counts.
        reason: Why; shown to the user or sent to the model when blocking.
    """

    continue_: bool = True
    modified_input: dict[str, Any] | None = None
    modified_prompt: str | None = None
    reason: str | None = None


@dataclass(slots=True)
class PreToolUseEvent:
    """A tool is about to run (after the model asked, before permissions)."""

    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str
    history: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class PostToolUseEvent:
    """A tool has run (or failed); ``tool_result`` is what the model will see."""

    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str
    tool_result: Any
    is_error: bool = False
    history: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class UserPromptSubmitEvent:
    """The user is about to send a prompt; nothing has been sent yet."""

    prompt: str
    history: list[dict[str, Any]] = field(default_factory=list)


HookEvent = PreToolUseEvent | PostToolUseEvent | UserPromptSubmitEvent
HookHandler = Callable[[Any], "HookDecision | Awaitable[HookDecision | None] | None"]
Hooks = Mapping[str, Sequence[HookHandler]]


def validate_hooks(hooks: Hooks | None) -> None:
    """Raise ValueError for unknown hook names or non-callable handlers."""
    if not hooks:
        return
    for name, handlers in hooks.items():
        if name not in HOOK_EVENTS:
            raise ValueError(f"unknown hook {name!r}; expected one of {', '.join(HOOK_EVENTS)}")
        for handler in handlers:
            if not callable(handler):
                raise ValueError(f"hook handler for {name!r} is not callable: {handler!r}")


async def run_hooks(hooks: Hooks | None, name: str, event: HookEvent) -> HookDecision | None:
    """Run the handlers for ``name`` in order; return the first decision."""
    if not hooks:
        return None
    for handler in hooks.get(name, ()):
        result = handler(event)
        if inspect.isawaitable(result):
            result = await result
        if result is not None:
            if not isinstance(result, HookDecision):
                raise TypeError(
                    f"hook {getattr(handler, '__name__', handler)!r} returned {result!r}; "
                    "expected HookDecision or None"
                )
            return result
    return None
