"""The agent SDK: talk to OpenAI-compatible local servers, run tools, stay Qt-free.

Front ends (the window, the REST server, scripts) call only this package;
nothing else talks to a model. Names load on first use (PEP 562), so that
importing one submodule (``desktop_agent.core.tooling.config``, say) does not
pull in the client, jsonschema and the rest before the window has painted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from desktop_agent.lazy_exports import lazy_exports

_EXPORTS: dict[str, str] = {
    'SubagentBlock': 'types',
    'AgentDefinition': 'tooling.agent_definitions',
    'fork_history': 'context.history_stores',
    'FileCheckpointer': 'tooling.tooling_settings',
    'ResultMessage': 'types',
    'PermissionMode': 'tooling.permissions',
    'NotificationEvent': 'tooling.hooks',
    'SessionEndEvent': 'tooling.hooks',
    'SessionStartEvent': 'tooling.hooks',
    'PreCompactEvent': 'tooling.hooks',
    'SubagentStopEvent': 'tooling.hooks',
    'StopEvent': 'tooling.hooks',
    'HOOK_NOTIFICATION': 'tooling.hooks',
    'HOOK_SESSION_END': 'tooling.hooks',
    'HOOK_SESSION_START': 'tooling.hooks',
    'HOOK_PRE_COMPACT': 'tooling.hooks',
    'HOOK_SUBAGENT_STOP': 'tooling.hooks',
    'HOOK_STOP': 'tooling.hooks',
    'APIError': 'errors',
    'AgentError': 'errors',
    'AgentOptions': 'options',
    'AssistantMessage': 'types',
    'AuthenticationError': 'errors',
    'Client': 'client',
    'ConfigurationError': 'errors',
    'ConnectionPool': 'wire.connection_pool',
    'ContextTooLongError': 'errors',
    'HOOK_POST_TOOL_USE': 'tooling.hooks',
    'HOOK_PRE_TOOL_USE': 'tooling.hooks',
    'HOOK_USER_PROMPT_SUBMIT': 'tooling.hooks',
    'HookDecision': 'tooling.hooks',
    'MaxTurnsExceededError': 'errors',
    'ModelNotFoundError': 'errors',
    'PermissionResultAllow': 'tooling.permissions',
    'PermissionResultDefer': 'tooling.permissions',
    'PendingApproval': 'tooling.deferred_approvals',
    'ApprovalsPendingError': 'tooling.deferred_approvals',
    'defer_approval': 'tooling.deferred_approvals',
    'PermissionResultDeny': 'tooling.permissions',
    'PermissionRule': 'tooling.permissions',
    'PostToolUseEvent': 'tooling.hooks',
    'PreToolUseEvent': 'tooling.hooks',
    'PromptBlockedError': 'errors',
    'RateLimitError': 'errors',
    'RequestTimeoutError': 'errors',
    'RetryPolicy': 'wire.retry',
    'ServerConnectionError': 'errors',
    'ServerError': 'errors',
    'PromptProgressBlock': 'types',
    'PromptCutBlock': 'types',
    'TextBlock': 'types',
    'ThinkingBlock': 'types',
    'Tool': 'tooling.tools',
    'ToolInputError': 'errors',
    'ToolPermissionContext': 'tooling.permissions',
    'ToolResultBlock': 'types',
    'ToolUseBlock': 'types',
    'ToolUseError': 'types',
    'TurnInProgressError': 'errors',
    'Usage': 'types',
    'UserPromptSubmitEvent': 'tooling.hooks',
    'VisionNotSupportedError': 'errors',
    'IncompleteReplyError': 'errors',
    'ToolProgressBlock': 'types',
    'ToolOutput': 'tooling.output',
    'report_progress': 'tooling.progress',
    'image_part': 'context.content_parts',
    'text_part': 'context.content_parts',
    'estimate_tokens': 'context.tokens',
    'query': 'query_run',
    'QueryRun': 'query_run',
    'HistoryStore': 'context.history_stores',
    'MemoryHistory': 'context.history_stores',
    'MemorySession': 'context.history_stores',
    'StructuredOutputError': 'structured_output',
    'tool': 'tooling.tools',
    'truncate_messages': 'context.tokens',
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from desktop_agent.core.client import Client as Client
    from desktop_agent.core.context.content_parts import image_part as image_part
    from desktop_agent.core.context.content_parts import text_part as text_part
    from desktop_agent.core.context.history_stores import HistoryStore as HistoryStore
    from desktop_agent.core.context.history_stores import MemoryHistory as MemoryHistory
    from desktop_agent.core.context.history_stores import MemorySession as MemorySession
    from desktop_agent.core.context.history_stores import fork_history as fork_history
    from desktop_agent.core.context.tokens import estimate_tokens as estimate_tokens
    from desktop_agent.core.context.tokens import truncate_messages as truncate_messages
    from desktop_agent.core.errors import AgentError as AgentError
    from desktop_agent.core.errors import APIError as APIError
    from desktop_agent.core.errors import AuthenticationError as AuthenticationError
    from desktop_agent.core.errors import ConfigurationError as ConfigurationError
    from desktop_agent.core.errors import ContextTooLongError as ContextTooLongError
    from desktop_agent.core.errors import IncompleteReplyError as IncompleteReplyError
    from desktop_agent.core.errors import MaxTurnsExceededError as MaxTurnsExceededError
    from desktop_agent.core.errors import ModelNotFoundError as ModelNotFoundError
    from desktop_agent.core.errors import PromptBlockedError as PromptBlockedError
    from desktop_agent.core.errors import RateLimitError as RateLimitError
    from desktop_agent.core.errors import RequestTimeoutError as RequestTimeoutError
    from desktop_agent.core.errors import ServerConnectionError as ServerConnectionError
    from desktop_agent.core.errors import ServerError as ServerError
    from desktop_agent.core.errors import ToolInputError as ToolInputError
    from desktop_agent.core.errors import TurnInProgressError as TurnInProgressError
    from desktop_agent.core.errors import VisionNotSupportedError as VisionNotSupportedError
    from desktop_agent.core.options import AgentOptions as AgentOptions
    from desktop_agent.core.query_run import QueryRun as QueryRun
    from desktop_agent.core.query_run import query as query
    from desktop_agent.core.structured_output import StructuredOutputError as StructuredOutputError
    from desktop_agent.core.tooling.agent_definitions import AgentDefinition as AgentDefinition
    from desktop_agent.core.tooling.deferred_approvals import (
        ApprovalsPendingError as ApprovalsPendingError,
    )
    from desktop_agent.core.tooling.deferred_approvals import PendingApproval as PendingApproval
    from desktop_agent.core.tooling.deferred_approvals import defer_approval as defer_approval
    from desktop_agent.core.tooling.hooks import HOOK_NOTIFICATION as HOOK_NOTIFICATION
    from desktop_agent.core.tooling.hooks import HOOK_POST_TOOL_USE as HOOK_POST_TOOL_USE
    from desktop_agent.core.tooling.hooks import HOOK_PRE_COMPACT as HOOK_PRE_COMPACT
    from desktop_agent.core.tooling.hooks import HOOK_PRE_TOOL_USE as HOOK_PRE_TOOL_USE
    from desktop_agent.core.tooling.hooks import HOOK_SESSION_END as HOOK_SESSION_END
    from desktop_agent.core.tooling.hooks import HOOK_SESSION_START as HOOK_SESSION_START
    from desktop_agent.core.tooling.hooks import HOOK_STOP as HOOK_STOP
    from desktop_agent.core.tooling.hooks import HOOK_SUBAGENT_STOP as HOOK_SUBAGENT_STOP
    from desktop_agent.core.tooling.hooks import HOOK_USER_PROMPT_SUBMIT as HOOK_USER_PROMPT_SUBMIT
    from desktop_agent.core.tooling.hooks import HookDecision as HookDecision
    from desktop_agent.core.tooling.hooks import NotificationEvent as NotificationEvent
    from desktop_agent.core.tooling.hooks import PostToolUseEvent as PostToolUseEvent
    from desktop_agent.core.tooling.hooks import PreCompactEvent as PreCompactEvent
    from desktop_agent.core.tooling.hooks import PreToolUseEvent as PreToolUseEvent
    from desktop_agent.core.tooling.hooks import SessionEndEvent as SessionEndEvent
    from desktop_agent.core.tooling.hooks import SessionStartEvent as SessionStartEvent
    from desktop_agent.core.tooling.hooks import StopEvent as StopEvent
    from desktop_agent.core.tooling.hooks import SubagentStopEvent as SubagentStopEvent
    from desktop_agent.core.tooling.hooks import UserPromptSubmitEvent as UserPromptSubmitEvent
    from desktop_agent.core.tooling.output import ToolOutput as ToolOutput
    from desktop_agent.core.tooling.permissions import PermissionMode as PermissionMode
    from desktop_agent.core.tooling.permissions import (
        PermissionResultAllow as PermissionResultAllow,
    )
    from desktop_agent.core.tooling.permissions import (
        PermissionResultDefer as PermissionResultDefer,
    )
    from desktop_agent.core.tooling.permissions import PermissionResultDeny as PermissionResultDeny
    from desktop_agent.core.tooling.permissions import PermissionRule as PermissionRule
    from desktop_agent.core.tooling.permissions import (
        ToolPermissionContext as ToolPermissionContext,
    )
    from desktop_agent.core.tooling.progress import report_progress as report_progress
    from desktop_agent.core.tooling.tooling_settings import FileCheckpointer as FileCheckpointer
    from desktop_agent.core.tooling.tools import Tool as Tool
    from desktop_agent.core.tooling.tools import tool as tool
    from desktop_agent.core.types import AssistantMessage as AssistantMessage
    from desktop_agent.core.types import PromptCutBlock as PromptCutBlock
    from desktop_agent.core.types import PromptProgressBlock as PromptProgressBlock
    from desktop_agent.core.types import ResultMessage as ResultMessage
    from desktop_agent.core.types import SubagentBlock as SubagentBlock
    from desktop_agent.core.types import TextBlock as TextBlock
    from desktop_agent.core.types import ThinkingBlock as ThinkingBlock
    from desktop_agent.core.types import ToolProgressBlock as ToolProgressBlock
    from desktop_agent.core.types import ToolResultBlock as ToolResultBlock
    from desktop_agent.core.types import ToolUseBlock as ToolUseBlock
    from desktop_agent.core.types import ToolUseError as ToolUseError
    from desktop_agent.core.types import Usage as Usage
    from desktop_agent.core.wire.connection_pool import ConnectionPool as ConnectionPool
    from desktop_agent.core.wire.retry import RetryPolicy as RetryPolicy


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted(__all__)
