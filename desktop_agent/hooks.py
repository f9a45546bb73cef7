"""The seed's ``open_agent.hooks``: events, decisions and the hook names.

The events claude-agent-sdk adds (Stop, SubagentStop, PreCompact, SessionStart,
SessionEnd, Notification) are here too, for scripts that import hooks from here.
"""

from __future__ import annotations

from desktop_agent.core.tooling.hooks import (
    HOOK_NOTIFICATION,
    HOOK_POST_TOOL_USE,
    HOOK_PRE_COMPACT,
    HOOK_PRE_TOOL_USE,
    HOOK_SESSION_END,
    HOOK_SESSION_START,
    HOOK_STOP,
    HOOK_SUBAGENT_STOP,
    HOOK_USER_PROMPT_SUBMIT,
    HookDecision,
    NotificationEvent,
    PostToolUseEvent,
    PreCompactEvent,
    PreToolUseEvent,
    SessionEndEvent,
    SessionStartEvent,
    StopEvent,
    SubagentStopEvent,
    UserPromptSubmitEvent,
)

__all__ = ["HOOK_NOTIFICATION", "HOOK_POST_TOOL_USE", "HOOK_PRE_COMPACT", "HOOK_PRE_TOOL_USE",
           "HOOK_SESSION_END", "HOOK_SESSION_START", "HOOK_STOP", "HOOK_SUBAGENT_STOP",
           "HOOK_USER_PROMPT_SUBMIT", "HookDecision", "NotificationEvent", "PostToolUseEvent",
           "PreCompactEvent", "PreToolUseEvent", "SessionEndEvent", "SessionStartEvent",
           "StopEvent", "SubagentStopEvent", "UserPromptSubmitEvent"]
