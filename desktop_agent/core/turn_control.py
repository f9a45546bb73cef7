"""The shared switches of one running turn: interrupt, and what to cancel for it.

The turn loop, the response reader and the tool round each look at the same
few flags; keeping them in one small object (instead of attributes spread over
``Client``) lets each of those parts live in its own module. It sits under all
of them (the wire reads it, the tooling fills it), so it names what it holds by
what it does (:class:`StoppableCalls`), not by the tooling's class.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol


class StoppableCalls(Protocol):
    """The running round's calls, one of which the person may stop.

    The tooling's :class:`~desktop_agent.core.tooling.progress.ProgressChannel` is one.
    """

    def stop(self, tool_use_id: str) -> bool:
        """Ask call ``tool_use_id`` to end; False when it is not running or cannot stop."""
        ...


@dataclass
class TurnControl:
    """Flags and tasks of the running turn.

    Attributes:
        interrupt_requested: ``Client.interrupt()`` was called during this turn.
        awaiting_server: The reader waits on the server (cancelling it is safe).
        reader_task: The task iterating ``receive_messages()``.
        tool_tasks: The tool calls of the round being run.
        progress: The running round's progress channel (to stop one call).
        server_requests: Requests tool servers made of this turn (MCP sampling),
            by server, to hold each to its limit per turn.
    """

    interrupt_requested: bool = False
    awaiting_server: bool = False
    reader_task: asyncio.Task[Any] | None = None
    tool_tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    progress: StoppableCalls | None = None
    server_requests: dict[str, int] = field(default_factory=dict)

    def start(self) -> None:
        """Reset for a new turn read by the current task."""
        self.server_requests = {}
        self.interrupt_requested = False
        self.awaiting_server = False
        self.reader_task = asyncio.current_task()
        self.tool_tasks = []

    def finish(self) -> None:
        """Forget the turn's tasks."""
        self.reader_task = None
        self.tool_tasks = []
        self.progress = None

    def stop_call(self, tool_use_id: str) -> bool:
        """End just one running call that can stop (False: none such is running)."""
        return self.progress is not None and self.progress.stop(tool_use_id)

    def interrupt(self) -> None:
        """Stop the turn now: cancel a wait on the server and running tools."""
        self.interrupt_requested = True
        if self.awaiting_server and self.reader_task is not None:
            self.reader_task.cancel()
        for task in self.tool_tasks:
            task.cancel()
