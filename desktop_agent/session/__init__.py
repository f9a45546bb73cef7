"""One conversation for every front end: settings, options, tools, approvals, recording.

The window (``gui/``) and the REST server (``server/``) are adapters over this
package, so both apply the same rules to a conversation: the same settings
schema and defaults, the same tools, the same permission rules from
``config.json``, the same approval decisions and the same stored record.
Nothing here imports Qt or FastAPI (an import-linter contract says so).

``__all__`` below is the package's public API and the only door for front
ends: they write ``from desktop_agent.session import ...`` and never name a
submodule (another import-linter contract says so), so the modules behind the
door can be split, renamed or folded without touching ``gui/`` or ``server/``.
Names load on first use (PEP 562): the window imports ``ToolCatalog`` before it
paints, and that must not pull in the core client, pydantic models and the
store's writers with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from desktop_agent.lazy_exports import lazy_exports

_EXPORTS: dict[str, str] = {
    'LocalEngine': 'local_engine.local_engine',
    'CatalogChoice': 'local_engine.local_engine',
    'hub_download': 'local_engine.local_engine',
    'EnginePreferences': 'local_engine.engine_preferences',
    'ModelDownload': 'local_engine.model_downloads',
    'HUB_TOKEN_NAME': 'local_engine.hub_token',
    'hub_token': 'local_engine.hub_token',
    'set_hub_token': 'local_engine.hub_token',
    'LocalServer': 'local_engine.engine_events',
    'EngineEvent': 'local_engine.engine_events',
    'ModelStarting': 'local_engine.engine_events',
    'ModelReady': 'local_engine.engine_events',
    'ModelStartFailed': 'local_engine.engine_events',
    'ModelStopped': 'local_engine.engine_events',
    'ModelCrashed': 'local_engine.engine_events',
    'DownloadProgressed': 'local_engine.engine_events',
    'DownloadFinished': 'local_engine.engine_events',
    'DownloadFailed': 'local_engine.engine_events',
    'LocalModelStarting': 'events',
    'LocalModelCrashed': 'events',
    'LocalModelUnavailableError': 'turn.local_server',
    'LOCAL_SERVER': 'settings.setting_values',
    'runs_locally': 'settings.setting_values',
    'context_after_reply': 'branch.context_estimate',
    'context_when_opened': 'branch.context_estimate',
    'estimated_context': 'branch.context_estimate',
    'reported_context': 'branch.context_estimate',
    'create_conversation': 'lifecycle.new_conversations',
    'release_work_folder': 'lifecycle.new_conversations',
    'new_work_folder': 'lifecycle.new_conversations',
    'is_new_work_folder': 'lifecycle.new_conversations',
    'ChangePreview': 'files.file_changes',
    'FILE_CHANGING_TOOLS': 'files.file_changes',
    'stored_file_change': 'files.file_changes',
    'ToolCallState': 'approvals.call_states',
    'tool_call_state': 'approvals.call_states',
    'ApprovalAnswer': 'approvals.approval_broker',
    'ApprovalChoice': 'approvals.approval_broker',
    'Decision': 'approvals.approval_broker',
    'QuestionWithdrawn': 'approvals.approval_broker',
    'ToolCallQuestion': 'approvals.approval_broker',
    'DEFAULT_TITLE': 'lifecycle.new_conversations',
    'TITLE_LENGTH': 'branch.branch_reading',
    'model_history': 'branch.branch_reading',
    'picture_urls': 'branch.branch_reading',
    'tool_result_text': 'branch.branch_reading',
    'view_dict': 'branch.branch_reading',
    'AppConfig': 'tools.config',
    'ConfigWriteError': 'tools.config',
    'RULES_KEY': 'settings.permission_rules',
    'conversation_allowed_tools': 'settings.permission_rules',
    'revoke_in_conversation': 'settings.permission_rules',
    'ConversationSession': 'conversation',
    'CheckpointError': 'files.file_checkpoints',
    'FileChange': 'files.file_checkpoints',
    'FileChangeView': 'files.file_checkpoints',
    'RestoreConflictError': 'files.file_checkpoints',
    'RestoreReport': 'files.file_checkpoints',
    'TurnChanges': 'files.file_checkpoints',
    'FilesChanged': 'events',
    'conversation_environment': 'settings.conversation_secrets',
    'conversation_secret_names': 'settings.conversation_secrets',
    'delete_conversation_secret': 'settings.conversation_secrets',
    'set_conversation_secret': 'settings.conversation_secrets',
    'delete_conversation': 'lifecycle.deletion',
    'prune_left_behind': 'lifecycle.deletion',
    'BUSY_ELSEWHERE': 'errors',
    'busy_sentence': 'errors',
    'NotConfiguredError': 'errors',
    'NothingToAnswerError': 'errors',
    'SessionError': 'errors',
    'TurnRunningError': 'errors',
    'ExecutorCalls': 'store_calls',
    'StoreCalls': 'store_calls',
    'ApprovalAsked': 'events',
    'ApprovalSettled': 'events',
    'CompactionReported': 'events',
    'ContextWindowChecked': 'events',
    'PromptCutReported': 'events',
    'MessageStored': 'events',
    'Notice': 'events',
    'ResourcesChanged': 'events',
    'DoctorNotice': 'events',
    'ToolCallProbed': 'events',
    'probe_summary': 'turn.model_doctor',
    'PathReset': 'events',
    'PromptProgressReported': 'events',
    'ReplyEnded': 'events',
    'ReplyStarted': 'events',
    'SessionEvent': 'events',
    'SettingsChanged': 'events',
    'StateChanged': 'events',
    'TextDelta': 'events',
    'ThinkingDelta': 'events',
    'TitleChanged': 'events',
    'ToolCallStarted': 'events',
    'ToolErrorReported': 'events',
    'ToolInputReplaced': 'events',
    'ToolProgressReported': 'events',
    'ToolOutputReported': 'events',
    'ToolResultArrived': 'events',
    'TurnFailed': 'events',
    'UsageReported': 'events',
    'UserMessageAdded': 'events',
    'PlanUpdated': 'events',
    'CommandPreviewReady': 'events',
    'CommandPreviewSettled': 'events',
    'PreviewCard': 'files.preview_cards',
    'PreviewNotFoundError': 'files.command_previews',
    'PreviewConflictError': 'files.preview_errors',
    'PreviewApplyError': 'files.preview_errors',
    'AppliedPreview': 'files.preview_errors',
    'PreviewUnavailableError': 'files.preview_errors',
    'PreviewStatus': 'settings.sandbox_settings',
    'preview_status': 'settings.sandbox_settings',
    'PREVIEW_MODES': 'settings.sandbox_settings',
    'SubagentReported': 'events',
    'PLAN_TOOL_NAME': 'tools.plan',
    'Plan': 'tools.plan',
    'PlanStep': 'tools.plan',
    'plan_of': 'tools.plan',
    'tail_enough': 'branch.turn_tail',
    'drop_invalid_settings': 'settings.imported_settings',
    'SessionEnvironment': 'turn.options',
    'MAX_INSTRUCTION_BYTES': 'files.project_instructions',
    'PROJECT_INSTRUCTIONS_SETTING': 'files.project_instructions',
    'ProjectInstructions': 'files.project_instructions',
    'project_instructions_for': 'files.project_instructions',
    'SessionRegistry': 'lifecycle.registry',
    'SandboxStatus': 'settings.sandbox_settings',
    'limit_defaults': 'settings.sandbox_settings',
    'sandbox_policy': 'settings.sandbox_settings',
    'sandbox_status': 'settings.sandbox_settings',
    'ConversationSettings': 'settings.conversation_settings',
    'SettingsError': 'settings.conversation_settings',
    'BadWorkdirError': 'settings.settings_check',
    'UnknownToolError': 'settings.settings_check',
    'check_usable_settings': 'settings.settings_check',
    'PermissionModeError': 'settings.settings_check',
    'check_permission_mode': 'settings.settings_check',
    'PERMISSION_MODE_LABELS': 'settings.permission_modes',
    'EXIT_PLAN_TOOL': 'settings.permission_modes',
    'PERMISSION_MODE_DETAILS': 'settings.permission_modes',
    'PERMISSION_MODE_CYCLE': 'settings.permission_modes',
    'next_permission_mode': 'settings.permission_modes',
    'permission_mode_of': 'settings.permission_modes',
    'asks_before_tools': 'settings.setting_values',
    'ToolCatalog': 'tools.tool_catalog',
    'WorkdirError': 'tools.tool_catalog',
    'workdir_path': 'tools.tool_catalog',
    'tool_call_mode_for': 'turn.tool_call_mode',
    'context_window_for': 'turn.context_check',
    'warm_up_turns': 'turn.warm_up',
    'SamplingAsked': 'events',
    'ElicitationAsked': 'events',
    'ServerQuestionSettled': 'events',
    'ServerQuestion': 'mcp.server_question',
    'SamplingChoice': 'mcp.server_question',
    'UnknownQuestion': 'mcp.server_questions',
    'NoMcpServers': 'mcp.conversation_mcp',
    'LOG_LEVELS': 'mcp.server_board',
    'McpServerBoard': 'mcp.server_board',
    'McpServerView': 'mcp.server_board',
    'UnknownServer': 'mcp.server_board',
    'log_line': 'mcp.server_board',
    'UnknownCommand': 'commands.conversation_commands',
    'BUILTIN_COMMANDS': 'commands.builtin_commands',
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from desktop_agent.session.approvals.approval_broker import ApprovalAnswer as ApprovalAnswer
    from desktop_agent.session.approvals.approval_broker import ApprovalChoice as ApprovalChoice
    from desktop_agent.session.approvals.approval_broker import Decision as Decision
    from desktop_agent.session.approvals.approval_broker import (
        QuestionWithdrawn as QuestionWithdrawn,
    )
    from desktop_agent.session.approvals.approval_broker import ToolCallQuestion as ToolCallQuestion
    from desktop_agent.session.approvals.call_states import ToolCallState as ToolCallState
    from desktop_agent.session.approvals.call_states import tool_call_state as tool_call_state
    from desktop_agent.session.branch.branch_reading import TITLE_LENGTH as TITLE_LENGTH
    from desktop_agent.session.branch.branch_reading import model_history as model_history
    from desktop_agent.session.branch.branch_reading import picture_urls as picture_urls
    from desktop_agent.session.branch.branch_reading import tool_result_text as tool_result_text
    from desktop_agent.session.branch.branch_reading import view_dict as view_dict
    from desktop_agent.session.branch.context_estimate import (
        context_after_reply as context_after_reply,
    )
    from desktop_agent.session.branch.context_estimate import (
        context_when_opened as context_when_opened,
    )
    from desktop_agent.session.branch.context_estimate import estimated_context as estimated_context
    from desktop_agent.session.branch.context_estimate import reported_context as reported_context
    from desktop_agent.session.branch.turn_tail import tail_enough as tail_enough
    from desktop_agent.session.commands.builtin_commands import (
        BUILTIN_COMMANDS as BUILTIN_COMMANDS,
    )
    from desktop_agent.session.commands.conversation_commands import (
        UnknownCommand as UnknownCommand,
    )
    from desktop_agent.session.conversation import ConversationSession as ConversationSession
    from desktop_agent.session.errors import BUSY_ELSEWHERE as BUSY_ELSEWHERE
    from desktop_agent.session.errors import NotConfiguredError as NotConfiguredError
    from desktop_agent.session.errors import NothingToAnswerError as NothingToAnswerError
    from desktop_agent.session.errors import SessionError as SessionError
    from desktop_agent.session.errors import TurnRunningError as TurnRunningError
    from desktop_agent.session.errors import busy_sentence as busy_sentence
    from desktop_agent.session.events import ApprovalAsked as ApprovalAsked
    from desktop_agent.session.events import ApprovalSettled as ApprovalSettled
    from desktop_agent.session.events import CommandPreviewReady as CommandPreviewReady
    from desktop_agent.session.events import CommandPreviewSettled as CommandPreviewSettled
    from desktop_agent.session.events import CompactionReported as CompactionReported
    from desktop_agent.session.events import ContextWindowChecked as ContextWindowChecked
    from desktop_agent.session.events import DoctorNotice as DoctorNotice
    from desktop_agent.session.events import ElicitationAsked as ElicitationAsked
    from desktop_agent.session.events import FilesChanged as FilesChanged
    from desktop_agent.session.events import LocalModelCrashed as LocalModelCrashed
    from desktop_agent.session.events import LocalModelStarting as LocalModelStarting
    from desktop_agent.session.events import MessageStored as MessageStored
    from desktop_agent.session.events import Notice as Notice
    from desktop_agent.session.events import PathReset as PathReset
    from desktop_agent.session.events import PlanUpdated as PlanUpdated
    from desktop_agent.session.events import PromptCutReported as PromptCutReported
    from desktop_agent.session.events import PromptProgressReported as PromptProgressReported
    from desktop_agent.session.events import ReplyEnded as ReplyEnded
    from desktop_agent.session.events import ReplyStarted as ReplyStarted
    from desktop_agent.session.events import ResourcesChanged as ResourcesChanged
    from desktop_agent.session.events import SamplingAsked as SamplingAsked
    from desktop_agent.session.events import ServerQuestionSettled as ServerQuestionSettled
    from desktop_agent.session.events import SessionEvent as SessionEvent
    from desktop_agent.session.events import SettingsChanged as SettingsChanged
    from desktop_agent.session.events import StateChanged as StateChanged
    from desktop_agent.session.events import SubagentReported as SubagentReported
    from desktop_agent.session.events import TextDelta as TextDelta
    from desktop_agent.session.events import ThinkingDelta as ThinkingDelta
    from desktop_agent.session.events import TitleChanged as TitleChanged
    from desktop_agent.session.events import ToolCallProbed as ToolCallProbed
    from desktop_agent.session.events import ToolCallStarted as ToolCallStarted
    from desktop_agent.session.events import ToolErrorReported as ToolErrorReported
    from desktop_agent.session.events import ToolInputReplaced as ToolInputReplaced
    from desktop_agent.session.events import ToolOutputReported as ToolOutputReported
    from desktop_agent.session.events import ToolProgressReported as ToolProgressReported
    from desktop_agent.session.events import ToolResultArrived as ToolResultArrived
    from desktop_agent.session.events import TurnFailed as TurnFailed
    from desktop_agent.session.events import UsageReported as UsageReported
    from desktop_agent.session.events import UserMessageAdded as UserMessageAdded
    from desktop_agent.session.files.command_previews import (
        PreviewNotFoundError as PreviewNotFoundError,
    )
    from desktop_agent.session.files.file_changes import FILE_CHANGING_TOOLS as FILE_CHANGING_TOOLS
    from desktop_agent.session.files.file_changes import ChangePreview as ChangePreview
    from desktop_agent.session.files.file_changes import stored_file_change as stored_file_change
    from desktop_agent.session.files.file_checkpoints import CheckpointError as CheckpointError
    from desktop_agent.session.files.file_checkpoints import FileChange as FileChange
    from desktop_agent.session.files.file_checkpoints import FileChangeView as FileChangeView
    from desktop_agent.session.files.file_checkpoints import (
        RestoreConflictError as RestoreConflictError,
    )
    from desktop_agent.session.files.file_checkpoints import RestoreReport as RestoreReport
    from desktop_agent.session.files.file_checkpoints import TurnChanges as TurnChanges
    from desktop_agent.session.files.preview_cards import PreviewCard as PreviewCard
    from desktop_agent.session.files.preview_errors import AppliedPreview as AppliedPreview
    from desktop_agent.session.files.preview_errors import (
        PreviewApplyError as PreviewApplyError,
    )
    from desktop_agent.session.files.preview_errors import (
        PreviewConflictError as PreviewConflictError,
    )
    from desktop_agent.session.files.preview_errors import (
        PreviewUnavailableError as PreviewUnavailableError,
    )
    from desktop_agent.session.files.project_instructions import (
        MAX_INSTRUCTION_BYTES as MAX_INSTRUCTION_BYTES,
    )
    from desktop_agent.session.files.project_instructions import (
        PROJECT_INSTRUCTIONS_SETTING as PROJECT_INSTRUCTIONS_SETTING,
    )
    from desktop_agent.session.files.project_instructions import (
        ProjectInstructions as ProjectInstructions,
    )
    from desktop_agent.session.files.project_instructions import (
        project_instructions_for as project_instructions_for,
    )
    from desktop_agent.session.lifecycle.deletion import delete_conversation as delete_conversation
    from desktop_agent.session.lifecycle.deletion import prune_left_behind as prune_left_behind
    from desktop_agent.session.lifecycle.new_conversations import DEFAULT_TITLE as DEFAULT_TITLE
    from desktop_agent.session.lifecycle.new_conversations import (
        create_conversation as create_conversation,
    )
    from desktop_agent.session.lifecycle.new_conversations import (
        is_new_work_folder as is_new_work_folder,
    )
    from desktop_agent.session.lifecycle.new_conversations import new_work_folder as new_work_folder
    from desktop_agent.session.lifecycle.new_conversations import (
        release_work_folder as release_work_folder,
    )
    from desktop_agent.session.lifecycle.registry import SessionRegistry as SessionRegistry
    from desktop_agent.session.local_engine.engine_events import DownloadFailed as DownloadFailed
    from desktop_agent.session.local_engine.engine_events import (
        DownloadFinished as DownloadFinished,
    )
    from desktop_agent.session.local_engine.engine_events import (
        DownloadProgressed as DownloadProgressed,
    )
    from desktop_agent.session.local_engine.engine_events import EngineEvent as EngineEvent
    from desktop_agent.session.local_engine.engine_events import LocalServer as LocalServer
    from desktop_agent.session.local_engine.engine_events import ModelCrashed as ModelCrashed
    from desktop_agent.session.local_engine.engine_events import ModelReady as ModelReady
    from desktop_agent.session.local_engine.engine_events import (
        ModelStartFailed as ModelStartFailed,
    )
    from desktop_agent.session.local_engine.engine_events import ModelStarting as ModelStarting
    from desktop_agent.session.local_engine.engine_events import ModelStopped as ModelStopped
    from desktop_agent.session.local_engine.engine_preferences import (
        EnginePreferences as EnginePreferences,
    )
    from desktop_agent.session.local_engine.hub_token import HUB_TOKEN_NAME as HUB_TOKEN_NAME
    from desktop_agent.session.local_engine.hub_token import hub_token as hub_token
    from desktop_agent.session.local_engine.hub_token import set_hub_token as set_hub_token
    from desktop_agent.session.local_engine.local_engine import CatalogChoice as CatalogChoice
    from desktop_agent.session.local_engine.local_engine import LocalEngine as LocalEngine
    from desktop_agent.session.local_engine.local_engine import hub_download as hub_download
    from desktop_agent.session.local_engine.model_downloads import ModelDownload as ModelDownload
    from desktop_agent.session.mcp.conversation_mcp import NoMcpServers as NoMcpServers
    from desktop_agent.session.mcp.server_board import LOG_LEVELS as LOG_LEVELS
    from desktop_agent.session.mcp.server_board import McpServerBoard as McpServerBoard
    from desktop_agent.session.mcp.server_board import McpServerView as McpServerView
    from desktop_agent.session.mcp.server_board import UnknownServer as UnknownServer
    from desktop_agent.session.mcp.server_board import log_line as log_line
    from desktop_agent.session.mcp.server_question import SamplingChoice as SamplingChoice
    from desktop_agent.session.mcp.server_question import ServerQuestion as ServerQuestion
    from desktop_agent.session.mcp.server_questions import UnknownQuestion as UnknownQuestion
    from desktop_agent.session.settings.conversation_secrets import (
        conversation_environment as conversation_environment,
    )
    from desktop_agent.session.settings.conversation_secrets import (
        conversation_secret_names as conversation_secret_names,
    )
    from desktop_agent.session.settings.conversation_secrets import (
        delete_conversation_secret as delete_conversation_secret,
    )
    from desktop_agent.session.settings.conversation_secrets import (
        set_conversation_secret as set_conversation_secret,
    )
    from desktop_agent.session.settings.conversation_settings import (
        ConversationSettings as ConversationSettings,
    )
    from desktop_agent.session.settings.conversation_settings import SettingsError as SettingsError
    from desktop_agent.session.settings.imported_settings import (
        drop_invalid_settings as drop_invalid_settings,
    )
    from desktop_agent.session.settings.permission_modes import EXIT_PLAN_TOOL as EXIT_PLAN_TOOL
    from desktop_agent.session.settings.permission_modes import (
        PERMISSION_MODE_CYCLE as PERMISSION_MODE_CYCLE,
    )
    from desktop_agent.session.settings.permission_modes import (
        PERMISSION_MODE_DETAILS as PERMISSION_MODE_DETAILS,
    )
    from desktop_agent.session.settings.permission_modes import (
        PERMISSION_MODE_LABELS as PERMISSION_MODE_LABELS,
    )
    from desktop_agent.session.settings.permission_modes import (
        next_permission_mode as next_permission_mode,
    )
    from desktop_agent.session.settings.permission_modes import (
        permission_mode_of as permission_mode_of,
    )
    from desktop_agent.session.settings.permission_rules import RULES_KEY as RULES_KEY
    from desktop_agent.session.settings.permission_rules import (
        conversation_allowed_tools as conversation_allowed_tools,
    )
    from desktop_agent.session.settings.permission_rules import (
        revoke_in_conversation as revoke_in_conversation,
    )
    from desktop_agent.session.settings.sandbox_settings import PREVIEW_MODES as PREVIEW_MODES
    from desktop_agent.session.settings.sandbox_settings import PreviewStatus as PreviewStatus
    from desktop_agent.session.settings.sandbox_settings import SandboxStatus as SandboxStatus
    from desktop_agent.session.settings.sandbox_settings import limit_defaults as limit_defaults
    from desktop_agent.session.settings.sandbox_settings import preview_status as preview_status
    from desktop_agent.session.settings.sandbox_settings import sandbox_policy as sandbox_policy
    from desktop_agent.session.settings.sandbox_settings import sandbox_status as sandbox_status
    from desktop_agent.session.settings.setting_values import LOCAL_SERVER as LOCAL_SERVER
    from desktop_agent.session.settings.setting_values import asks_before_tools as asks_before_tools
    from desktop_agent.session.settings.setting_values import runs_locally as runs_locally
    from desktop_agent.session.settings.settings_check import BadWorkdirError as BadWorkdirError
    from desktop_agent.session.settings.settings_check import (
        PermissionModeError as PermissionModeError,
    )
    from desktop_agent.session.settings.settings_check import (
        UnknownToolError as UnknownToolError,
    )
    from desktop_agent.session.settings.settings_check import (
        check_permission_mode as check_permission_mode,
    )
    from desktop_agent.session.settings.settings_check import (
        check_usable_settings as check_usable_settings,
    )
    from desktop_agent.session.store_calls import ExecutorCalls as ExecutorCalls
    from desktop_agent.session.store_calls import StoreCalls as StoreCalls
    from desktop_agent.session.tools.config import AppConfig as AppConfig
    from desktop_agent.session.tools.config import ConfigWriteError as ConfigWriteError
    from desktop_agent.session.tools.plan import PLAN_TOOL_NAME as PLAN_TOOL_NAME
    from desktop_agent.session.tools.plan import Plan as Plan
    from desktop_agent.session.tools.plan import PlanStep as PlanStep
    from desktop_agent.session.tools.plan import plan_of as plan_of
    from desktop_agent.session.tools.tool_catalog import ToolCatalog as ToolCatalog
    from desktop_agent.session.tools.tool_catalog import WorkdirError as WorkdirError
    from desktop_agent.session.tools.tool_catalog import workdir_path as workdir_path
    from desktop_agent.session.turn.context_check import context_window_for as context_window_for
    from desktop_agent.session.turn.local_server import (
        LocalModelUnavailableError as LocalModelUnavailableError,
    )
    from desktop_agent.session.turn.model_doctor import probe_summary as probe_summary
    from desktop_agent.session.turn.options import SessionEnvironment as SessionEnvironment
    from desktop_agent.session.turn.tool_call_mode import tool_call_mode_for as tool_call_mode_for
    from desktop_agent.session.turn.warm_up import warm_up_turns as warm_up_turns


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted(__all__)
