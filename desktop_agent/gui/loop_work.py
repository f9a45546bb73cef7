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
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer


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
