"""Desktop Agent: local language models as tool-using agents, with a person approving.

The public SDK is re-exported from :mod:`desktop_agent.core`; the window, the
REST server and scripts all use it::

    from desktop_agent import AgentOptions, query, TextBlock

    async for message in query("Hello", AgentOptions(model="qwen2.5-7b",
                                                     base_url="http://localhost:1234/v1")):
        for block in message.content:
            if isinstance(block, TextBlock):
                print(block.text, end="")

The names load on first use (PEP 562): ``desktop-agent --version`` and the
window's first paint must not pay for the SDK's imports (jsonschema, asyncio
machinery) before they need them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

_SDK_NAMES = (
    "HOOK_POST_TOOL_USE", "HOOK_PRE_TOOL_USE", "HOOK_USER_PROMPT_SUBMIT",
    "APIError", "AgentError", "AgentOptions", "AssistantMessage", "AuthenticationError",
    "Client", "ConfigurationError", "ContextTooLongError", "HookDecision",
    "MaxTurnsExceededError", "ModelNotFoundError", "PermissionResultAllow",
    "PermissionResultDeny", "PermissionRule", "PostToolUseEvent", "PreToolUseEvent",
    "PromptBlockedError", "RateLimitError", "RequestTimeoutError", "RetryPolicy",
    "ServerConnectionError", "ServerError", "TextBlock", "ThinkingBlock", "Tool",
    "ToolInputError", "ToolPermissionContext", "ToolResultBlock", "ToolUseBlock",
    "ToolUseError", "TurnInProgressError", "Usage", "UserPromptSubmitEvent",
    "estimate_tokens", "query", "tool", "truncate_messages", "QueryRun", "StructuredOutputError",
    "HistoryStore", "MemoryHistory", "MemorySession", "PermissionResultDefer", "PendingApproval",
    "ApprovalsPendingError", "defer_approval",
    "VisionNotSupportedError", "image_part", "text_part", "IncompleteReplyError",
    "ToolProgressBlock", "ToolOutput", "report_progress",
    "AgentDefinition", "SubagentBlock",
    "fork_history",
    "ResultMessage", "FileCheckpointer",
    "HOOK_STOP", "HOOK_SUBAGENT_STOP", "HOOK_PRE_COMPACT", "HOOK_SESSION_START",
    "HOOK_SESSION_END", "HOOK_NOTIFICATION", "StopEvent", "SubagentStopEvent",
    "PreCompactEvent", "SessionStartEvent", "SessionEndEvent", "NotificationEvent",
    "PermissionMode",
)

__all__ = list(_SDK_NAMES)

if TYPE_CHECKING:
    from .core import *  # noqa: F403


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from .cli import app_version

        return app_version()
    if name in _SDK_NAMES:
        from . import core

        value = getattr(core, name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module 'desktop_agent' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
