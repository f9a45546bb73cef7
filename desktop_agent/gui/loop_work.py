"""Background work of the window starts only on an asyncio loop that runs.

qasync steps tasks from Qt timer events, and Qt delivers those whenever events
are processed, also before the loop runs (the app shows its window, and loads
its first tab, just before it starts the loop; a script may drive Qt by hand
with no loop running at all). A task stepped then fails at its first
``asyncio.to_thread`` ("no running event loop"), inside the task, where nobody
sees it. :func:`when_loop_runs` starts such work now if the loop runs, else at
the loop's first round of Qt events, and not at all when no loop runs even then.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from PySide6.QtCore import QObject, QTimer

T = TypeVar("T")


def loop_is_running() -> bool:
    """Whether an asyncio loop runs in this thread (a task started now can step)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def when_loop_runs(context: QObject, start: Callable[[], object]) -> None:
    """Call ``start`` once an asyncio loop runs: now, or at the next round of Qt events.

    Args:
        context: Its deletion cancels a start put off.
        start: Starts the work (makes its task).
    """
    if loop_is_running():
        start()
        return

    def later() -> None:
        if loop_is_running():
            start()

    QTimer.singleShot(0, context, later)


class OwnedTasks:
    """The tasks one part of the window started and has not seen end.

    Why a holder: asyncio keeps only a weak reference to a running task, so
    work started and forgotten can be collected half-way; and the part that
    started it must stop it when it goes (a closed panel, a closed
    conversation) so none touches a store or a widget that is gone.
    """

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def start(self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run ``work`` as a task held here until it ends."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def busy(self) -> bool:
        """Whether one of them still runs."""
        return any(not task.done() for task in self._tasks)

    def cancel(self) -> None:
        """Cancel every one (their ends run at the loop's next rounds)."""
        for task in list(self._tasks):
            task.cancel()

    async def wait(self) -> None:
        """Wait until every one has ended; how each ended is theirs to report."""
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def cancel_and_wait(self) -> None:
        """Cancel every one and wait until each has ended."""
        self.cancel()
        await self.wait()
