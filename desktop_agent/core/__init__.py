"""The agent SDK: talk to OpenAI-compatible local servers, run tools, stay Qt-free.

Front ends (the window, the REST server, scripts) call only this package;
nothing else talks to a model. Heavy dependencies (the openai SDK, httpx)
load when a request is first made, not on import.
"""

from .client import Client, query
from .context import estimate_tokens, truncate_messages
from .errors import (
    AgentError,
    APIError,
    AuthenticationError,
    ConfigurationError,
    ContextTooLongError,
    MaxTurnsExceededError,
    ModelNotFoundError,
    PromptBlockedError,
    RateLimitError,
    RequestTimeoutError,
    ServerConnectionError,
    ServerError,
    ToolInputError,
    TurnInProgressError,
)
from .hooks import (
    HOOK_POST_TOOL_USE,
    HOOK_PRE_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    HookDecision,
    PostToolUseEvent,
    PreToolUseEvent,
    UserPromptSubmitEvent,
)
from .options import AgentOptions
from .permissions import (
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionRule,
    ToolPermissionContext,
)
from .retry import RetryPolicy
from .tools import Tool, tool
from .types import (
    AssistantMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseError,
    Usage,
)

__all__ = [
    "HOOK_POST_TOOL_USE", "HOOK_PRE_TOOL_USE", "HOOK_USER_PROMPT_SUBMIT",
    "APIError", "AgentError", "AgentOptions", "AssistantMessage", "AuthenticationError",
    "Client", "ConfigurationError", "ContextTooLongError", "HookDecision",
    "MaxTurnsExceededError", "ModelNotFoundError", "PermissionResultAllow",
    "PermissionResultDeny", "PermissionRule", "PostToolUseEvent", "PreToolUseEvent",
    "PromptBlockedError", "RateLimitError", "RequestTimeoutError", "RetryPolicy",
    "ServerConnectionError", "ServerError", "TextBlock", "ThinkingBlock", "Tool",
    "ToolInputError", "ToolPermissionContext", "ToolResultBlock", "ToolUseBlock",
    "ToolUseError", "TurnInProgressError", "Usage", "UserPromptSubmitEvent",
    "estimate_tokens", "query", "tool", "truncate_messages",
]
