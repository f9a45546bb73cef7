"""Desktop Agent: local language models as tool-using agents, with a person approving.

The public SDK is re-exported from :mod:`desktop_agent.core`; the window, the
REST server and scripts all use it::

    from desktop_agent import AgentOptions, query, TextBlock

    async for message in query("Hello", AgentOptions(model="qwen2.5-7b",
                                                     base_url="http://localhost:1234/v1")):
        for block in message.content:
            if isinstance(block, TextBlock):
                print(block.text, end="")

A model on this computer, run by the app's own engine (llama.cpp in a child
process; the ``engine`` extra), is one more name::

    from desktop_agent import AgentOptions, LocalModel, query

    async with LocalModel("qwen3-1.7b-q4_k_m.gguf") as server:
        options = AgentOptions(base_url=server.base_url, model=server.model,
                               api_key=server.api_key)

The names load on first use (PEP 562): ``desktop-agent --version`` and the
window's first paint must not pay for the SDK's imports (jsonschema, asyncio
machinery) before they need them. The core knows no engine; ``LocalModel`` comes
from :mod:`desktop_agent.engine`, the layer beside it.
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

#: Names from the engine (``desktop_agent.engine``), not the core: the core runs no model.
_ENGINE_NAMES = ("LocalModel",)

__all__ = [*_SDK_NAMES, *_ENGINE_NAMES]

if TYPE_CHECKING:
    from .core import *  # noqa: F403
    from .engine.runner import LocalModel as LocalModel


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from .cli import app_version

        return app_version()
    if name in _SDK_NAMES:
        from . import core

        value = getattr(core, name)
        globals()[name] = value  # later look-ups skip this function
        return value
    if name in _ENGINE_NAMES:
        from . import engine

        value = getattr(engine, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'desktop_agent' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
