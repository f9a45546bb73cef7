"""The window's asyncio loop: qasync's, minus lost task wake-ups under nested Qt loops.

qasync runs every asyncio callback from a Qt timer event. When a callback (say a
task's step) runs a nested Qt event loop (``processEvents()`` before a
screenshot, a modal ``exec()``), Qt delivers the other due timers inside it, so
another task's wake-up runs while the first task is still executing. asyncio
refuses that ("Cannot enter into task ... while another task ... is being
executed") and the wake-up is simply gone: the woken task waits for ever on a
future that has already finished, and it cannot even be cancelled (its waiter is
done, so nothing steps it again), so ``wait_for`` around it never returns. That
was the screenshot script's "second window's first reply stuck in
``receive_messages``" (3 runs in 6 failed, each with that error).

:class:`GuiEventLoop` keeps asyncio's rule that callbacks never nest: a callback
that comes due while a task of this loop is executing is put aside and
re-scheduled as soon as the outer callback returns, in the order it came due.

Its default executor (``asyncio.to_thread``, ``run_in_executor(None, ...)``) is
Python's thread pool, not qasync's: qasync starts all ten of its worker threads
with the loop, and the jobs of an idle window (the sandbox probe, reading
restored conversations to estimate their context, the server search's imports)
landed on several of them, each keeping its own allocator arena. Python's pool
starts a thread only when no idle one can take the job, up to the same ten:
five restored tabs with a model server answering idle 0.5 MiB smaller
(117.4 -> 116.9 MiB RSS from source, ``bench/startup.py``).

A callback cancelled before it comes due (every timeout that did not fire: a
network read's, a command's time limit, ``asyncio.wait_for``) has its Qt timer
killed and its handle let go at once. qasync kept both until the delay ran
out, and the handle its context (the tool call's progress channel, the
turn's MCP caller...): with timeouts of minutes, a window driven turn after
turn held thousands of them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import PySide6.QtCore  # noqa: F401 (imported before qasync, so qasync picks this binding)
import qasync
from PySide6.QtCore import QObject, QTimerEvent

log = logging.getLogger("desktop_agent.gui.event_loop")

#: Worker threads of the loop's default executor at most (qasync's default too).
DEFAULT_EXECUTOR_THREADS = 10


class _CallbackTimer(QObject):
    """Runs the loop's callbacks from Qt timers, never inside a running task's step."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._loop = loop
        self._handles: dict[int, asyncio.Handle] = {}
        self._timer_of: dict[int, int] = {}  # id(handle) -> its Qt timer, while pending
        self._deferred: list[asyncio.Handle] = []
        self._depth = 0
        self._stopped = False
        self._debug = False

    def add_callback(self, handle: asyncio.Handle, delay: float = 0) -> asyncio.Handle:
        """Run ``handle`` after ``delay`` seconds (qasync's interface)."""
        timer_id = self.startTimer(int(max(0.0, delay) * 1000))
        self._handles[timer_id] = handle
        if isinstance(handle, asyncio.TimerHandle):  # one that may be cancelled before due
            self._timer_of[id(handle)] = timer_id
        return handle

    def cancelled(self, handle: asyncio.Handle) -> None:
        """``handle`` will never run: stop its timer and let it go now, not when due."""
        timer_id = self._timer_of.pop(id(handle), None)
        if timer_id is not None and self._handles.get(timer_id) is handle:
            self.killTimer(timer_id)
            del self._handles[timer_id]

    def timerEvent(self, event: QTimerEvent) -> None:
        timer_id = event.timerId()
        self.killTimer(timer_id)
        handle = self._handles.pop(timer_id, None)
        if handle is not None:
            self._timer_of.pop(id(handle), None)
        if handle is None or handle.cancelled() or self._stopped:
            return
        if self._depth and asyncio.current_task(self._loop) is not None:
            # A nested Qt loop inside a task's step: running this now could be
            # another task's wake-up, which asyncio would refuse and lose.
            self._deferred.append(handle)
            return
        self._depth += 1
        try:
            self._run(handle)
        finally:
            self._depth -= 1
        if not self._depth and self._deferred:
            deferred, self._deferred = self._deferred, []
            for waiting in deferred:
                self.add_callback(waiting)

    def _run(self, handle: asyncio.Handle) -> None:
        if not self._debug:
            handle._run()
            return
        started = time.monotonic()
        handle._run()
        took = time.monotonic() - started
        if took >= self._loop.slow_callback_duration:
            log.warning("Executing %s took %.3f seconds", handle, took)

    def stop(self) -> None:
        """The loop closed: run nothing more (qasync's interface)."""
        self._stopped = True
        self.kill_all()

    def kill_all(self) -> None:
        """Stop every pending Qt timer now (in the GUI thread, see the test fixture)."""
        for timer_id in list(self._handles):
            self.killTimer(timer_id)
        self._handles.clear()
        self._timer_of.clear()
        self._deferred.clear()

    def set_debug(self, enabled: bool) -> None:
        """Warn about slow callbacks, as asyncio's debug mode does (qasync's interface)."""
        self._debug = enabled


class GuiEventLoop(qasync.QEventLoop):  # type: ignore[misc]
    """qasync's loop with callbacks that never run nested inside a task's step."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timer = _CallbackTimer(self)
        # Threads started as jobs need them (see the module docstring); closing the
        # loop shuts the pool down, as it did qasync's.
        self.set_default_executor(ThreadPoolExecutor(
            max_workers=DEFAULT_EXECUTOR_THREADS, thread_name_prefix="loop-worker"))

    def call_later(self, delay: float, callback: Any, *args: Any,
                   context: Any = None) -> asyncio.Handle:
        """Run ``callback`` after ``delay`` seconds; cancelling the handle stops its timer.

        A delayed callback gets an :class:`asyncio.TimerHandle` (qasync gives a
        plain ``Handle``), whose ``cancel()`` tells the loop
        (:meth:`_timer_handle_cancelled`); one due now (``call_soon``, every
        task step) stays a plain ``Handle``, as cheap as qasync made it.
        """
        if delay <= 0:
            due: asyncio.Handle = super().call_later(delay, callback, *args, context=context)
            return due
        if asyncio.iscoroutinefunction(callback):
            raise TypeError("coroutines cannot be used with call_later")
        if not callable(callback):
            raise TypeError(f"callback must be callable: {type(callback).__name__}")
        handle = asyncio.TimerHandle(self.time() + delay, callback, args, self, context=context)
        self._timer.add_callback(handle, delay)
        return handle

    def call_at(self, when: float, callback: Any, *args: Any,
                context: Any = None) -> asyncio.Handle:
        """Run ``callback`` at loop time ``when`` (see :meth:`call_later`)."""
        return self.call_later(when - self.time(), callback, *args, context=context)

    def _timer_handle_cancelled(self, handle: asyncio.TimerHandle) -> None:
        self._timer.cancelled(handle)
