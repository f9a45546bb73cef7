"""The turn a ``receive_messages()`` loop is reading, and ending it from that loop's body.

The seed's scripts act from inside the ``async for`` over a turn's blocks:
they ``interrupt()`` and break, or answer a call and ``query("")`` to go on.
Either must end the turn there and then, which only the task reading it can
do while it is paused at a block it was given: this part knows which turn is
being read, whether its reader is paused so, and runs the turn to its end.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from desktop_agent.core.turn_control import TurnControl
from desktop_agent.core.types import StreamItem


class ReceivedTurn:
    """The turn being received, for a Client.

    Attributes:
        ended: Set when the running turn has finished (a ``query()`` waiting
            after ``interrupt()`` goes on then); the Client makes a new one
            for each turn.
    """

    def __init__(self, control: TurnControl) -> None:
        self._control = control
        self._turn: AsyncGenerator[StreamItem, None] | None = None  # being received
        self._paused_at_yield = False  # the reader is in its loop body, not in the turn
        self.ended = asyncio.Event()

    async def read(self, turn: AsyncGenerator[StreamItem, None],
                   ) -> AsyncGenerator[StreamItem, None]:
        """``turn``'s items; stops after one whose loop body ran the turn to its end.

        Close this generator when done (``contextlib.aclosing``): closing it
        closes ``turn`` at once, so the turn's record is written then.
        """
        self._turn = turn
        try:
            async for item in turn:
                self._paused_at_yield = True
                try:
                    yield item
                finally:
                    self._paused_at_yield = False
                if self._turn is not turn:
                    return  # finished from inside the loop by query("") or interrupt()
        finally:
            if self._turn is turn:
                self._turn = None
                await turn.aclose()

    def paused_here(self) -> bool:
        """The turn's reader is this task, paused at a block it yielded (in the loop body)."""
        return (self._turn is not None and self._paused_at_yield
                and self._control.reader_task is asyncio.current_task())

    async def finish(self) -> None:
        """Run the paused turn to its end (quickly when interrupted); its items are dropped.

        The ``receive_messages()`` loop that was reading it ends when it resumes.
        """
        turn, self._turn = self._turn, None
        if turn is not None:
            async for _ in turn:
                pass
