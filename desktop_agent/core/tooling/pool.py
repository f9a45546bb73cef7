"""The threads that run plain-function tools: bounded, and apart from everyone else's.

``asyncio.to_thread`` uses the loop's default executor, which the store, the
REST routes and the window's background work share. A tool stuck in a blocking
call (a FIFO, a hung network share) used to hold one of those threads for good;
enough of them and every store-backed route waited behind it. Tools now run on
their own bounded pool. A thread cannot be killed, so when a call times out its
thread is counted as *stuck*; once every worker is stuck the pool is replaced
by a fresh one (the stuck threads end whenever their call returns), so later
calls always find a worker and the app's own threads are never touched.
``Tool.execute`` runs every sync handler here (``bench/sync_tools.py``).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

log = logging.getLogger("desktop_agent.tools.pool")

T = TypeVar("T")

#: Worker threads for plain-function tools (per process). Tools are I/O-bound
#: (files, HTTP, waiting on a command), so a thread mostly waits: the pool is
#: sized like the stdlib's default for I/O work, not by CPU count.
TOOL_WORKERS = 32
#: Tool calls from one assistant reply that run at the same time; the rest wait
#: their turn. Replies from local models rarely hold more than ten calls, and
#: ten 0.2 s calls should take 0.2 s, not two or three waves; a runaway reply
#: still cannot take every worker.
MAX_PARALLEL_TOOL_CALLS = 16


class ToolPool:
    """A bounded thread pool for tool handlers that replaces itself when all workers hang.

    Attributes:
        workers: Threads per pool.
        stuck: Calls whose caller gave up while their thread still runs.
    """

    def __init__(self, workers: int = TOOL_WORKERS) -> None:
        self.workers = workers
        self.stuck = 0
        self._lock = threading.Lock()
        self._executor = self._new_executor()

    def _new_executor(self) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="tool")

    async def run(self, func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run ``func`` on the pool; cancelling the caller abandons (never kills) the thread."""
        context = contextvars.copy_context()
        call = functools.partial(context.run, func, *args, **kwargs)
        with self._lock:
            work = self._executor.submit(call)
        try:
            return await asyncio.wrap_future(work)
        except asyncio.CancelledError:
            # Still queued: cancelled outright. Running: the thread is abandoned.
            if not work.cancel() and not work.done():
                self._abandoned(work)
            raise

    def _abandoned(self, future: Future[Any]) -> None:
        with self._lock:
            self.stuck += 1
            if self.stuck >= self.workers:
                log.warning("all %d tool threads are stuck in calls that timed out; "
                            "starting a fresh tool pool", self.workers)
                old, self._executor = self._executor, self._new_executor()
                self.stuck = 0
                old.shutdown(wait=False, cancel_futures=True)
                return
        future.add_done_callback(lambda _f: self._released())

    def _released(self) -> None:
        with self._lock:
            self.stuck = max(0, self.stuck - 1)

    def shutdown(self) -> None:
        """Stop accepting work (threads still running finish on their own)."""
        self._executor.shutdown(wait=False, cancel_futures=True)


_pool: ToolPool | None = None
_pool_lock = threading.Lock()


def tool_pool() -> ToolPool:
    """The process's tool pool, made on first use."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ToolPool()
        return _pool
