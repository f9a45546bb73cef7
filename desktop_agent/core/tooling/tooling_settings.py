"""What the tooling reads of an agent's settings: the tools, the rules, the approver.

The tooling also asks the server which way tools are offered
(:mod:`.tool_call_mode`) and blanks the API key out of results, so its
settings include the wire's. ``AgentOptions`` has them all by its fields (see
:mod:`~desktop_agent.core.wire.wire_settings` for why each wing declares its own).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from desktop_agent.core.wire.wire_settings import WireSettings

if TYPE_CHECKING:
    from pathlib import Path

    from desktop_agent.core.tooling.hooks import Hooks
    from desktop_agent.core.tooling.mcp.server_requests import (
        ElicitationCallback,
        SamplingCallback,
    )
    from desktop_agent.core.tooling.permissions import (
        CanUseTool,
        PermissionMode,
        PermissionRule,
    )
    from desktop_agent.core.tooling.tools import Tool
    from desktop_agent.core.types import ToolUseBlock

ConstrainedCalls = bool | Literal["auto"]
"""``AgentOptions.constrained_tool_calls``: always, never, or where the server can."""
BeforeToolRound = Callable[[Sequence["ToolUseBlock"]], Awaitable[None]]
"""Told a round's calls before any runs (see ``AgentOptions.before_tool_round``)."""
RefreshTools = Callable[[], Awaitable["Sequence[Tool] | None"]]
"""Asked before each request: a new tool list, or None (see ``AgentOptions.refresh_tools``)."""


class FileCheckpointer(Protocol):
    """Records the agent's folder before tool rounds and puts it back on request.

    ``desktop_agent.workspace.file_checkpoints.FileCheckpoints`` is one
    (``AgentOptions.file_checkpoints``; claude-agent-sdk's
    ``enable_file_checkpointing``). Turns are the Client's query numbers.
    """

    async def before_round(self, turn: int, calls: Sequence[Any]) -> None:
        """Record the folder before a round of ``turn`` runs."""

    async def end_turn(self, turn: int) -> Any:
        """Record what ``turn`` changed."""

    def rewind(self, turn: int, *, force: bool = False) -> Any:
        """Put back what ``turn`` and later turns changed."""


class ToolingSettings(WireSettings, Protocol):
    """The settings a tool call is permitted, approved, run and reported with.

    Each member is the ``AgentOptions`` field of the same name, documented there.
    """

    @property
    def tools(self) -> Sequence[Tool]: ...

    @property
    def hooks(self) -> Hooks | None: ...

    @property
    def allowed_tools(self) -> Sequence[str]: ...

    @property
    def disallowed_tools(self) -> Sequence[str]: ...

    @property
    def permission_rules(self) -> Sequence[PermissionRule]: ...

    @property
    def can_use_tool(self) -> CanUseTool | None: ...

    @property
    def approval_timeout(self) -> float | None: ...

    @property
    def tool_timeout(self) -> float: ...

    @property
    def before_tool_round(self) -> BeforeToolRound | None: ...

    @property
    def secret_values(self) -> Sequence[str]: ...

    @property
    def vision(self) -> bool | None: ...

    @property
    def constrained_tool_calls(self) -> ConstrainedCalls: ...

    @property
    def output_type(self) -> Any: ...

    @property
    def sampling_callback(self) -> SamplingCallback | None: ...

    @property
    def elicitation_callback(self) -> ElicitationCallback | None: ...

    @property
    def mcp_roots(self) -> Sequence[Path]: ...

    @property
    def sampling_limit(self) -> int: ...

    @property
    def permission_mode(self) -> PermissionMode: ...

    @property
    def agent_name(self) -> str | None: ...

    @property
    def session_id(self) -> str | None: ...

    @property
    def cwd(self) -> str | None: ...
