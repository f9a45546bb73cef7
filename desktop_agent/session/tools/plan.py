"""The model's plan: Codex's ``update_plan`` tool, and the plan a conversation holds now.

A short checklist the model keeps while it works (Codex's ``update_plan``;
Claude Code's TodoWrite does the same) lets a person see where a long run is
and what comes next. The tool has Codex's name and schema, so models trained
on it call it unprompted: a list of steps, each ``pending``, ``in_progress``
or ``completed`` (at most one in progress), and an optional explanation.

The plan needs no table of its own: each call is a stored tool call with its
result, so the plan of a conversation is the input of the last successful
``update_plan`` call on its active branch (:func:`plan_of`). It therefore
survives a restart, follows branch switches and undo, and is exported with
the conversation. The session reports each new plan as a
:class:`~desktop_agent.session.events.PlanUpdated` event; the window pins it above the composer,
the REST server emits it as a ``plan`` event.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from desktop_agent.core.tooling.permissions import PermissionRule
    from desktop_agent.core.tooling.tools import Tool
    from desktop_agent.store import MessageRecord

#: The tool's name (Codex's).
PLAN_TOOL_NAME = "update_plan"

StepStatus = Literal["pending", "in_progress", "completed"]
STEP_STATUSES: tuple[StepStatus, ...] = ("pending", "in_progress", "completed")

#: Codex's description, shortened: every request carries it, and on a 2,048-token
#: model the built-in tools' schemas already take a fifth of the window.
PLAN_TOOL_DESCRIPTION = ("Update your task plan: each step pending, in_progress (at most one) "
                         "or completed; optional explanation.")

#: Codex's schema (``status`` as an enum, so a constrained call cannot misspell it), with
#: its descriptions left out (the names and the enum say the same).
PLAN_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string"},
        "plan": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "step": {"type": "string"},
                    "status": {"type": "string", "enum": list(STEP_STATUSES)},
                },
                "required": ["step", "status"],
            },
        },
    },
    "required": ["plan"],
}

#: What the tool answers the model (Codex answers the same).
PLAN_UPDATED = "Plan updated"


class PlanError(ValueError):
    """A plan the tool refuses; the message (sent to the model) says why."""


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One line of the checklist."""

    step: str
    status: StepStatus


@dataclass(frozen=True, slots=True)
class Plan:
    """The model's checklist as it last set it.

    Attributes:
        steps: The steps in order.
        explanation: Why the plan is (or changed to) this, if the model said.
    """

    steps: tuple[PlanStep, ...]
    explanation: str | None = None

    @classmethod
    def from_input(cls, arguments: Mapping[str, Any]) -> Plan:
        """The plan an ``update_plan`` call sets.

        Raises:
            PlanError: The steps are malformed or more than one is in progress.
        """
        raw = arguments.get("plan")
        if not isinstance(raw, list):
            raise PlanError("'plan' must be a list of steps")
        steps: list[PlanStep] = []
        for item in raw:
            step = item.get("step") if isinstance(item, Mapping) else None
            status = item.get("status") if isinstance(item, Mapping) else None
            if not isinstance(step, str) or not step.strip() or status not in STEP_STATUSES:
                raise PlanError("each step needs a 'step' text and a 'status' of pending, "
                                "in_progress or completed")
            steps.append(PlanStep(step.strip(), status))
        if sum(s.status == "in_progress" for s in steps) > 1:
            raise PlanError("at most one step can be in_progress at a time")
        explanation = arguments.get("explanation")
        return cls(tuple(steps),
                   explanation.strip() or None if isinstance(explanation, str) else None)

    def as_dict(self) -> dict[str, Any]:
        """The plan in the tool's own shape (REST events and routes)."""
        return {"explanation": self.explanation,
                "plan": [{"step": s.step, "status": s.status} for s in self.steps]}

    def counts(self) -> dict[StepStatus, int]:
        """How many steps have each status."""
        return {status: sum(s.status == status for s in self.steps) for status in STEP_STATUSES}


def plan_tool() -> Tool:
    """The ``update_plan`` tool (it checks the plan; the session shows and keeps it).

    Declared once per process: its schema and the schema's check are the same for
    every turn (a turn's tools are made at its start, on the event loop).
    """
    return _declared_plan_tool().with_handler(_update_plan)


@functools.cache
def _declared_plan_tool() -> Tool:
    from desktop_agent.core.tooling.builtin.declare import BUILTIN_SOURCE
    from desktop_agent.core.tooling.tools import Tool

    return Tool(PLAN_TOOL_NAME, PLAN_TOOL_DESCRIPTION, PLAN_TOOL_SCHEMA, _update_plan,
                read_only=True, source=BUILTIN_SOURCE)


async def _update_plan(args: dict[str, Any]) -> str:
    Plan.from_input(args)  # a PlanError becomes the call's error, in words
    return PLAN_UPDATED


def plan_rule() -> PermissionRule:
    """Allow ``update_plan`` without asking (it changes nothing; deny rules still win)."""
    from desktop_agent.core.tooling.permissions import PermissionRule

    return PermissionRule(PLAN_TOOL_NAME, "allow")


def plan_of(path: Iterable[MessageRecord]) -> Plan | None:
    """The plan of a branch: the input of its last successful ``update_plan`` call.

    Reads only stored messages (the calls ran with, not the model's first
    arguments when a person edited them), so a reopened conversation shows
    the plan the live one showed.
    """
    records = list(path)
    succeeded: set[str] = set()
    for record in reversed(records):
        if record.role == "tool":
            metadata = record.metadata or {}
            call_id = record.message.get("tool_call_id")
            if metadata.get("name") == PLAN_TOOL_NAME and not metadata.get("is_error") \
                    and isinstance(call_id, str):
                succeeded.add(call_id)
            continue
        if record.role != "assistant" or not succeeded:
            continue
        for call in reversed(record.message.get("tool_calls") or []):
            function = call.get("function") or {}
            if call.get("id") not in succeeded or function.get("name") != PLAN_TOOL_NAME:
                continue
            try:
                arguments = json.loads(function.get("arguments") or "{}")
                return Plan.from_input(arguments if isinstance(arguments, dict) else {})
            except (ValueError, PlanError):
                continue
    return None
