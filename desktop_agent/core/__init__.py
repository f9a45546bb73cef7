"""The agent SDK: talk to OpenAI-compatible local servers, run tools, stay Qt-free.

Front ends (the window, the REST server, scripts) call only this package;
nothing else talks to a model. Names load on first use (PEP 562), so that
importing one submodule (``desktop_agent.core.tool_config``, say) does not
pull in the client, jsonschema and the rest before the window has painted.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    'APIError': 'errors',
    'AgentError': 'errors',
    'AgentOptions': 'options',
    'AssistantMessage': 'types',
    'AuthenticationError': 'errors',
    'Client': 'client',
    'ConfigurationError': 'errors',
    'ConnectionPool': 'connection_pool',
    'ContextTooLongError': 'errors',
    'HOOK_POST_TOOL_USE': 'hooks',
    'HOOK_PRE_TOOL_USE': 'hooks',
    'HOOK_USER_PROMPT_SUBMIT': 'hooks',
    'HookDecision': 'hooks',
    'MaxTurnsExceededError': 'errors',
    'ModelNotFoundError': 'errors',
    'PermissionResultAllow': 'permissions',
    'PermissionResultDefer': 'permissions',
    'PendingApproval': 'deferred_approvals',
    'ApprovalsPendingError': 'deferred_approvals',
    'defer_approval': 'deferred_approvals',
    'PermissionResultDeny': 'permissions',
    'PermissionRule': 'permissions',
    'PostToolUseEvent': 'hooks',
    'PreToolUseEvent': 'hooks',
    'PromptBlockedError': 'errors',
    'RateLimitError': 'errors',
    'RequestTimeoutError': 'errors',
    'RetryPolicy': 'retry',
    'ServerConnectionError': 'errors',
    'ServerError': 'errors',
    'PromptProgressBlock': 'types',
    'TextBlock': 'types',
    'ThinkingBlock': 'types',
    'Tool': 'tools',
    'ToolInputError': 'errors',
    'ToolPermissionContext': 'permissions',
    'ToolResultBlock': 'types',
    'ToolUseBlock': 'types',
    'ToolUseError': 'types',
    'TurnInProgressError': 'errors',
    'Usage': 'types',
    'UserPromptSubmitEvent': 'hooks',
    'VisionNotSupportedError': 'errors',
    'IncompleteReplyError': 'errors',
    'ToolProgressBlock': 'types',
    'ToolOutput': 'tool_output',
    'report_progress': 'tool_progress',
    'image_part': 'content_parts',
    'text_part': 'content_parts',
    'estimate_tokens': 'context',
    'query': 'query_run',
    'QueryRun': 'query_run',
    'ConversationSession': 'sessions',
    'MemorySession': 'sessions',
    'StructuredOutputError': 'structured_output',
    'tool': 'tools',
    'truncate_messages': 'context',
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from .client import Client as Client
    from .connection_pool import ConnectionPool as ConnectionPool
    from .content_parts import image_part as image_part
    from .content_parts import text_part as text_part
    from .context import estimate_tokens as estimate_tokens
    from .context import truncate_messages as truncate_messages
    from .deferred_approvals import ApprovalsPendingError as ApprovalsPendingError
    from .deferred_approvals import PendingApproval as PendingApproval
    from .deferred_approvals import defer_approval as defer_approval
    from .errors import AgentError as AgentError
    from .errors import APIError as APIError
    from .errors import AuthenticationError as AuthenticationError
    from .errors import ConfigurationError as ConfigurationError
    from .errors import ContextTooLongError as ContextTooLongError
    from .errors import IncompleteReplyError as IncompleteReplyError
    from .errors import MaxTurnsExceededError as MaxTurnsExceededError
    from .errors import ModelNotFoundError as ModelNotFoundError
    from .errors import PromptBlockedError as PromptBlockedError
    from .errors import RateLimitError as RateLimitError
    from .errors import RequestTimeoutError as RequestTimeoutError
    from .errors import ServerConnectionError as ServerConnectionError
    from .errors import ServerError as ServerError
    from .errors import ToolInputError as ToolInputError
    from .errors import TurnInProgressError as TurnInProgressError
    from .errors import VisionNotSupportedError as VisionNotSupportedError
    from .hooks import HOOK_POST_TOOL_USE as HOOK_POST_TOOL_USE
    from .hooks import HOOK_PRE_TOOL_USE as HOOK_PRE_TOOL_USE
    from .hooks import HOOK_USER_PROMPT_SUBMIT as HOOK_USER_PROMPT_SUBMIT
    from .hooks import HookDecision as HookDecision
    from .hooks import PostToolUseEvent as PostToolUseEvent
    from .hooks import PreToolUseEvent as PreToolUseEvent
    from .hooks import UserPromptSubmitEvent as UserPromptSubmitEvent
    from .options import AgentOptions as AgentOptions
    from .permissions import PermissionResultAllow as PermissionResultAllow
    from .permissions import PermissionResultDefer as PermissionResultDefer
    from .permissions import PermissionResultDeny as PermissionResultDeny
    from .permissions import PermissionRule as PermissionRule
    from .permissions import ToolPermissionContext as ToolPermissionContext
    from .query_run import QueryRun as QueryRun
    from .query_run import query as query
    from .retry import RetryPolicy as RetryPolicy
    from .sessions import ConversationSession as ConversationSession
    from .sessions import MemorySession as MemorySession
    from .structured_output import StructuredOutputError as StructuredOutputError
    from .tool_output import ToolOutput as ToolOutput
    from .tool_progress import report_progress as report_progress
    from .tools import Tool as Tool
    from .tools import tool as tool
    from .types import AssistantMessage as AssistantMessage
    from .types import PromptProgressBlock as PromptProgressBlock
    from .types import TextBlock as TextBlock
    from .types import ThinkingBlock as ThinkingBlock
    from .types import ToolProgressBlock as ToolProgressBlock
    from .types import ToolResultBlock as ToolResultBlock
    from .types import ToolUseBlock as ToolUseBlock
    from .types import ToolUseError as ToolUseError
    from .types import Usage as Usage


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'desktop_agent.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
