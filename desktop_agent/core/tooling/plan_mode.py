"""Plan mode's own parts: the note the model reads, and the tool that hands in the plan.

In ``plan`` mode (:data:`~desktop_agent.core.tooling.permissions.PermissionMode`)
only read-only tools run (:func:`~desktop_agent.core.tooling.permissions.apply_permission_mode`
refuses the rest); the system prompt tells the model so, and the agent is offered
``exit_plan_mode`` (Claude Code's name), whose one argument is the plan. That
call is always put to the approver (``can_use_tool``): allowing it is the
person approving the plan, and the agent then continues in the mode the
approver chose (``updated_input["mode"]``: ``default`` or ``acceptEdits``),
in the same turn. Denying it keeps plan mode, and the model reads why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from desktop_agent.core.tooling.permissions import EXIT_PLAN_TOOL, PermissionMode
from desktop_agent.core.tooling.tools import Tool

if TYPE_CHECKING:
    from desktop_agent.core.types import ToolResultBlock

#: Added to the system prompt while the agent is in plan mode (short: every request has it).
PLAN_MODE_NOTE = (
    "You are in plan mode: only read-only tools run. Investigate what you need, then call "
    f"{EXIT_PLAN_TOOL} with a concise plan (the steps, the files you would change). Change "
    "nothing until the person approves the plan.")

#: Modes a plan's approval may switch to (the approver picks; ``default`` when it does not).
MODES_AFTER_PLAN: tuple[PermissionMode, ...] = ("default", "acceptEdits")

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "plan": {"type": "string", "description": "The plan, in Markdown."},
        "mode": {"type": "string", "enum": list(MODES_AFTER_PLAN),
                 "description": "Left out by the model: the approver chooses."},
    },
    "required": ["plan"],
}


def _approved(plan: str, mode: str = "default") -> str:
    return (f"The person approved the plan; the permission mode is now {mode}. "
            "Carry the plan out now.")


#: The tool plan mode offers; one object, so the options can tell it from a namesake.
EXIT_PLAN_MODE_TOOL = Tool(
    EXIT_PLAN_TOOL,
    "Hand in your plan for the person to approve; after approval you may change things.",
    _SCHEMA, _approved, source="builtin", kwargs_handler=True)


def tools_for_mode(tools: Sequence[Tool], mode: PermissionMode) -> list[Tool]:
    """``tools`` with the plan tool added in plan mode and removed in any other."""
    kept = [t for t in tools if t is not EXIT_PLAN_MODE_TOOL]
    if mode == "plan" and not any(t.name == EXIT_PLAN_TOOL for t in kept):
        kept.append(EXIT_PLAN_MODE_TOOL)
    return kept


def mode_after(result: ToolResultBlock, tool_input: dict[str, Any]) -> PermissionMode | None:
    """The mode a round's result switches to: the approved plan's, else None.

    Args:
        result: One result of the round.
        tool_input: The call's input as the model wrote it (the approver's
            edit, with the chosen mode, is in ``result.ran_input``).
    """
    if result.name != EXIT_PLAN_TOOL or result.is_error or result.decision == "deferred":
        return None
    ran = result.ran_input if result.ran_input is not None else tool_input
    mode = ran.get("mode")
    return mode if mode in MODES_AFTER_PLAN else "default"
