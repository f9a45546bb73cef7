"""Hooks: functions that may inspect, change or block prompts, tool calls and stops.

``AgentOptions(hooks={HOOK_PRE_TOOL_USE: [handler, ...]})``. Handlers run in
order; the first one that returns a :class:`HookDecision` (not None) decides,
and the rest are skipped. Handlers may be sync or async.

The events are claude-agent-sdk's, and either spelling names them
(``HOOK_STOP == "stop"`` or ``"Stop"``): ``PreToolUse``, ``PostToolUse``,
``UserPromptSubmit``, ``Stop`` (the agent is about to end its turn; blocking
it sends the reason to the model, which goes on), ``SubagentStop`` (the same
for a subagent), ``PreCompact`` (earlier messages are about to be compacted),
``SessionStart`` and ``SessionEnd`` (a Client starts, or is closed) and
``Notification`` (a tool call waits for approval). Each event's
:meth:`payload` is the JSON claude-agent-sdk hands its hooks, with its field
names (``hook_event_name``, ``session_id``, ``cwd``, ``permission_mode`` and the
event's own), which command hooks read on stdin
(:mod:`~desktop_agent.core.tooling.command_hooks`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Protocol, TypeVar

HOOK_PRE_TOOL_USE = "pre_tool_use"
HOOK_POST_TOOL_USE = "post_tool_use"
HOOK_USER_PROMPT_SUBMIT = "user_prompt_submit"
HOOK_STOP = "stop"
HOOK_SUBAGENT_STOP = "subagent_stop"
HOOK_PRE_COMPACT = "pre_compact"
HOOK_SESSION_START = "session_start"
HOOK_SESSION_END = "session_end"
HOOK_NOTIFICATION = "notification"
HOOK_EVENTS = (HOOK_PRE_TOOL_USE, HOOK_POST_TOOL_USE, HOOK_USER_PROMPT_SUBMIT, HOOK_STOP,
               HOOK_SUBAGENT_STOP, HOOK_PRE_COMPACT, HOOK_SESSION_START, HOOK_SESSION_END,
               HOOK_NOTIFICATION)
#: claude-agent-sdk's (and Claude Code's) name of each event -> ours.
CLAUDE_HOOK_NAMES: dict[str, str] = {
    "PreToolUse": HOOK_PRE_TOOL_USE, "PostToolUse": HOOK_POST_TOOL_USE,
    "UserPromptSubmit": HOOK_USER_PROMPT_SUBMIT, "Stop": HOOK_STOP,
    "SubagentStop": HOOK_SUBAGENT_STOP, "PreCompact": HOOK_PRE_COMPACT,
    "SessionStart": HOOK_SESSION_START, "SessionEnd": HOOK_SESSION_END,
    "Notification": HOOK_NOTIFICATION,
}
log = logging.getLogger("desktop_agent.hooks")
_OUR_TO_CLAUDE = {ours: theirs for theirs, ours in CLAUDE_HOOK_NAMES.items()}
#: Fields every event carries besides its own (claude-agent-sdk's ``BaseHookInput``).
_BASE_FIELDS = ("session_id", "cwd", "permission_mode")


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


class _Payload:
    """What every event shares: its claude-agent-sdk name and its JSON payload.

    Each event also has ``session_id`` (the conversation, when it has one),
    ``cwd`` (the working folder, when the agent has one) and
    ``permission_mode``, filled in by the agent that fires it.
    """

    __slots__ = ()
    name = ""

    def payload(self) -> dict[str, Any]:
        """The event as claude-agent-sdk's hook input (JSON-ready; no history)."""
        data: dict[str, Any] = {"hook_event_name": _OUR_TO_CLAUDE[self.name],
                                "transcript_path": None}
        for item in fields(self):  # type: ignore[arg-type]
            if item.name != "history":
                data[item.name] = getattr(self, item.name)
        return data


@dataclass(slots=True)
class PreToolUseEvent(_Payload):
    """A tool is about to run (after the model asked, before permissions)."""

    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str
    history: list[dict[str, Any]] = field(default_factory=list)
    session_id: str | None = None
    cwd: str | None = None
    permission_mode: str = "default"
    name = HOOK_PRE_TOOL_USE


@dataclass(slots=True)
class PostToolUseEvent(_Payload):
    """A tool has run (or failed); ``tool_result`` is what the model will see."""

    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str
    tool_result: Any
    is_error: bool = False
    history: list[dict[str, Any]] = field(default_factory=list)
    session_id: str | None = None
    cwd: str | None = None
    permission_mode: str = "default"
    name = HOOK_POST_TOOL_USE

    @property
    def tool_response(self) -> Any:
        """claude-agent-sdk's name for :attr:`tool_result`."""
        return self.tool_result

    def payload(self) -> dict[str, Any]:
        """The hook input, with the result also under claude-agent-sdk's ``tool_response``."""
        data = super(PostToolUseEvent, self).payload()
        data["tool_response"] = self.tool_result
        return data


@dataclass(slots=True)
class UserPromptSubmitEvent(_Payload):
    """The user is about to send a prompt; nothing has been sent yet."""

    prompt: str
    history: list[dict[str, Any]] = field(default_factory=list)
    session_id: str | None = None
    cwd: str | None = None
    permission_mode: str = "default"
    name = HOOK_USER_PROMPT_SUBMIT


@dataclass(slots=True)
class StopEvent(_Payload):
    """The agent is about to end its turn with this answer.

    Blocking it (``HookDecision(continue_=False, reason=...)``) sends the
    reason to the model as a user message and the turn goes on;
    ``stop_hook_active`` is then True at the next stop, so a hook can let it
    end (claude-agent-sdk's guard against a hook that never lets go).
    """

    stop_hook_active: bool = False
    last_message: str = ""
    history: list[dict[str, Any]] = field(default_factory=list)
    session_id: str | None = None
    cwd: str | None = None
    permission_mode: str = "default"
    name = HOOK_STOP


@dataclass(slots=True)
class SubagentStopEvent(_Payload):
    """A subagent is about to hand its answer back (blocking it makes it go on).

    Attributes:
        agent_name: The subagent's definition.
        agent_id: This run of it (child events carry the same id).
    """

    agent_name: str = ""
    agent_id: str = ""
    stop_hook_active: bool = False
    last_message: str = ""
    history: list[dict[str, Any]] = field(default_factory=list)
    session_id: str | None = None
    cwd: str | None = None
    permission_mode: str = "default"
    name = HOOK_SUBAGENT_STOP


@dataclass(slots=True)
class PreCompactEvent(_Payload):
    """Earlier messages are about to be summarised or dropped from the request.

    Attributes:
        trigger: ``auto`` (the request neared the context) or ``manual``.
        custom_instructions: Instructions for the summary (None: the default).
        messages: History messages in the request before compacting.
        tokens_before: Its estimated prompt size.
    """

    trigger: Literal["auto", "manual"] = "auto"
    custom_instructions: str | None = None
    messages: int = 0
    tokens_before: int = 0
    session_id: str | None = None
    cwd: str | None = None
    permission_mode: str = "default"
    name = HOOK_PRE_COMPACT


@dataclass(slots=True)
class SessionStartEvent(_Payload):
    """A Client starts: ``startup`` (no history yet) or ``resume`` (a stored one)."""

    source: Literal["startup", "resume"] = "startup"
    session_id: str | None = None
    cwd: str | None = None
    permission_mode: str = "default"
    name = HOOK_SESSION_START


@dataclass(slots=True)
class SessionEndEvent(_Payload):
    """A Client was closed (``reason`` is claude-agent-sdk's ``other``)."""

    reason: str = "other"
    session_id: str | None = None
    cwd: str | None = None
    permission_mode: str = "default"
    name = HOOK_SESSION_END


@dataclass(slots=True)
class NotificationEvent(_Payload):
    """A tool call waits for approval (claude-agent-sdk's ``permission_prompt``)."""

    message: str = ""
    title: str | None = None
    tool_name: str | None = None
    tool_use_id: str | None = None
    notification_type: str = "permission_prompt"
    session_id: str | None = None
    cwd: str | None = None
    permission_mode: str = "default"
    name = HOOK_NOTIFICATION


HookEvent = (PreToolUseEvent | PostToolUseEvent | UserPromptSubmitEvent | StopEvent
             | SubagentStopEvent | PreCompactEvent | SessionStartEvent | SessionEndEvent
             | NotificationEvent)
HookHandler = Callable[[Any], "HookDecision | Awaitable[HookDecision | None] | None"]
Hooks = Mapping[str, Sequence[HookHandler]]


E = TypeVar("E", bound=_Payload)


class HookContext(Protocol):
    """What an event is stamped with: the agent's settings (``AgentOptions`` has these)."""

    @property
    def session_id(self) -> str | None: ...

    @property
    def cwd(self) -> str | None: ...

    @property
    def permission_mode(self) -> str: ...


def stamped(event: E, options: HookContext) -> E:
    """``event`` with the agent's conversation, folder and permission mode filled in."""
    event.session_id = options.session_id  # type: ignore[attr-defined]
    event.cwd = options.cwd  # type: ignore[attr-defined]
    event.permission_mode = options.permission_mode  # type: ignore[attr-defined]
    return event


def validate_hooks(hooks: Hooks | None) -> None:
    """Raise ValueError for unknown hook names or non-callable handlers."""
    if not hooks:
        return
    for name, handlers in hooks.items():
        if name not in HOOK_EVENTS and name not in CLAUDE_HOOK_NAMES:
            raise ValueError(f"unknown hook {name!r}; expected one of {', '.join(HOOK_EVENTS)} "
                             f"(or {', '.join(CLAUDE_HOOK_NAMES)})")
        for handler in handlers:
            if not callable(handler):
                raise ValueError(f"hook handler for {name!r} is not callable: {handler!r}")


def hook_handlers(hooks: Hooks | None, name: str) -> list[HookHandler]:
    """The handlers for event ``name`` under either spelling, ours first."""
    if not hooks:
        return []
    return [*hooks.get(name, ()), *hooks.get(_OUR_TO_CLAUDE.get(name, ""), ())]


def merge_hooks(*sets: Hooks | None) -> dict[str, list[HookHandler]]:
    """Several hook sets as one, by our names, each set's handlers after the previous'."""
    merged: dict[str, list[HookHandler]] = {}
    for hooks in sets:
        for name, handlers in (hooks or {}).items():
            merged.setdefault(CLAUDE_HOOK_NAMES.get(name, name), []).extend(handlers)
    return merged


async def run_hooks(hooks: Hooks | None, name: str, event: HookEvent) -> HookDecision | None:
    """Run the handlers for ``name`` in order; return the first decision."""
    if not hooks:
        return None
    for handler in hook_handlers(hooks, name):
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


async def tell_hooks(hooks: Hooks | None, name: str, event: HookEvent) -> None:
    """Tell the handlers of an event that decides nothing (a notice, a start, an end).

    A handler that fails is logged, not raised: a hook that only listens
    must not stop the agent it listens to.
    """
    if not hook_handlers(hooks, name):
        return
    try:
        await run_hooks(hooks, name, event)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - a listening hook's bug is logged, not raised
        log.warning("a %s hook failed: %s", _OUR_TO_CLAUDE.get(name, name), exc)
