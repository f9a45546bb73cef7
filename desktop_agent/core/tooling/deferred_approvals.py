"""Approvals that can wait: a turn stops at a deferred call and resumes with the answer.

When ``can_use_tool`` answers :class:`PermissionResultDefer` (``defer_approval``
does so for every call), the turn ends after the round instead of asking the
model again: the calls that were allowed ran, the deferred ones stay open at
the end of the history, and ``Client.pending_approvals`` lists them as plain
:class:`PendingApproval` data (``to_dict()``/``from_dict()`` for JSON).

The history is the whole state. Save it (``client.message_history``, or let a
session save it), end the process, and later: load it into a new Client, call
``approve()`` or ``deny()`` for each pending call and ``receive_messages()``:
the approved calls run (deny rules and hooks still apply) and the model
continues with all the results.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from desktop_agent.core.context.history_invariants import open_calls
from desktop_agent.core.errors import AgentError, ConfigurationError
from desktop_agent.core.tooling.permissions import (
    PermissionResult,
    PermissionResultDefer,
    ToolPermissionContext,
)
from desktop_agent.core.types import ToolUseBlock


class ApprovalsPendingError(AgentError):
    """The conversation has tool calls waiting for approve()/deny(); nothing was sent."""


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A tool call waiting for a person's answer.

    Attributes:
        tool_use_id: The call's id (answer with ``Client.approve(tool_use_id)``).
        tool_name: The tool the model wants to run.
        tool_input: The arguments it asked for.
    """

    tool_use_id: str
    tool_name: str
    tool_input: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-able) to store or show."""
        return {"tool_use_id": self.tool_use_id, "tool_name": self.tool_name,
                "tool_input": self.tool_input}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PendingApproval:
        """The inverse of :meth:`to_dict`."""
        return cls(str(data["tool_use_id"]), str(data["tool_name"]), dict(data["tool_input"]))

    def as_call(self) -> ToolUseBlock:
        """The call as the tool runner takes it."""
        return ToolUseBlock(self.tool_use_id, self.tool_name, dict(self.tool_input))


async def defer_approval(tool_name: str, tool_input: dict[str, Any],
                         context: ToolPermissionContext) -> PermissionResultDefer:
    """A ``can_use_tool`` that defers every call it is asked about (headless scripts)."""
    del tool_name, tool_input, context
    return PermissionResultDefer()


def pending_in(history: list[dict[str, Any]]) -> list[PendingApproval]:
    """The open calls at the end of ``history``, as pending approvals."""
    pending: list[PendingApproval] = []
    for call in open_calls(history):
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except json.JSONDecodeError:
            arguments = {}
        pending.append(PendingApproval(call.get("id", ""), function.get("name", ""),
                                       arguments if isinstance(arguments, dict) else {}))
    return pending


class ApprovalLedger:
    """Answers given for pending calls, until the next turn runs them."""

    def __init__(self) -> None:
        self.answers: dict[str, PermissionResult] = {}

    def decide(self, history: list[dict[str, Any]], tool_use_id: str,
               answer: PermissionResult) -> bool:
        """Record ``answer``; True once every pending call has one.

        Raises:
            ConfigurationError: no pending call has that id.
        """
        pending = {p.tool_use_id for p in pending_in(history)}
        if tool_use_id not in pending:
            raise ConfigurationError(f"no tool call {tool_use_id!r} waits for approval")
        self.answers[tool_use_id] = answer
        return pending <= set(self.answers)

    def take(self, history: list[dict[str, Any]]) -> tuple[list[ToolUseBlock],
                                                           dict[str, PermissionResult]]:
        """The pending calls and their answers, to run now (clears the ledger).

        Raises:
            ApprovalsPendingError: some pending call has no answer yet.
        """
        pending = pending_in(history)
        missing = [p.tool_name for p in pending if p.tool_use_id not in self.answers]
        if missing:
            raise ApprovalsPendingError(
                f"{len(missing)} tool call(s) wait for approval ({', '.join(missing)}); "
                "answer each with approve() or deny() first")
        answers = {p.tool_use_id: self.answers[p.tool_use_id] for p in pending}
        self.answers = {}
        return [p.as_call() for p in pending], answers

    def clear(self) -> None:
        """Forget answers (the conversation moved on)."""
        self.answers = {}
