"""The seed's ``open_agent.hooks``: events, decisions and the hook names."""

from __future__ import annotations

from desktop_agent.core.tooling.hooks import (
    HOOK_POST_TOOL_USE,
    HOOK_PRE_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    HookDecision,
    PostToolUseEvent,
    PreToolUseEvent,
    UserPromptSubmitEvent,
)

__all__ = ["HOOK_POST_TOOL_USE", "HOOK_PRE_TOOL_USE", "HOOK_USER_PROMPT_SUBMIT",
           "HookDecision", "PostToolUseEvent", "PreToolUseEvent", "UserPromptSubmitEvent"]
