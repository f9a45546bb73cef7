"""Tool calls waiting for a person (or a script) to approve or reject them over the API.

The runner's approval callback parks each call here as a Future; the approve
and reject routes resolve it. The core wraps the wait in its approval timeout,
so a call nobody answers is denied, exactly as in the window.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from desktop_agent.core.permissions import (
    PermissionResult,
    PermissionResultDeny,
    ToolPermissionContext,
)


@dataclass
class PendingApproval:
    """One call waiting for a decision."""

    tool_use_id: str
    tool_name: str
    input: dict[str, Any]
    context: ToolPermissionContext
    future: asyncio.Future[PermissionResult]
    requested_at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """The shape of ``ApprovalOut`` and of the ``approval_requested`` event."""
        return {
            "tool_use_id": self.tool_use_id,
            "tool_name": self.tool_name,
            "input": self.input,
            "read_only": self.context.read_only,
            "source": self.context.source,
            "description": self.context.description,
            "requested_at": self.requested_at,
            "unsandboxed": self.context.unsandboxed,
        }


class PendingApprovals:
    """The open requests of one conversation, by tool call id."""

    def __init__(self) -> None:
        self._open: dict[str, PendingApproval] = {}

    def open(self, tool_name: str, tool_input: dict[str, Any],
             context: ToolPermissionContext) -> PendingApproval:
        """Park a call; the caller awaits ``.future``."""
        key = context.tool_use_id
        while key in self._open:  # servers that reuse call ids must not clobber a request
            key += "'"
        pending = PendingApproval(key, tool_name, dict(tool_input), context,
                                  asyncio.get_running_loop().create_future())
        self._open[key] = pending
        return pending

    def close(self, tool_use_id: str) -> None:
        """Forget a request (answered, timed out or cancelled)."""
        self._open.pop(tool_use_id, None)

    def get(self, tool_use_id: str) -> PendingApproval | None:
        """An open request, or None."""
        pending = self._open.get(tool_use_id)
        if pending is None or pending.future.done():
            return None
        return pending

    def all(self) -> list[PendingApproval]:
        """Open requests, oldest first."""
        return [p for p in self._open.values() if not p.future.done()]

    def resolve(self, tool_use_id: str, answer: PermissionResult) -> bool:
        """Answer a request; False when there is no such open request."""
        pending = self.get(tool_use_id)
        if pending is None:
            return False
        pending.future.set_result(answer)
        return True

    def deny_all(self, reason: str) -> list[str]:
        """Deny every open request (the turn is being interrupted)."""
        ids = []
        for pending in self.all():
            pending.future.set_result(PermissionResultDeny(message=reason))
            ids.append(pending.tool_use_id)
        return ids
