"""One timer per transcript that batches display work into frames.

Why: a model can stream hundreds of pieces a second; updating widgets for each
would stall the event loop. Pieces are recorded at once (cheap) and shown at
most once per frame (~16 ms). Work that can be long (highlighting a big code
block) runs as a generator in slices of a few milliseconds per frame, so the
event loop is never held for longer than a frame.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterator

from PySide6.QtCore import QObject, QTimer

log = logging.getLogger("desktop_agent.gui.transcript")

FRAME_MS = 16
#: Time a frame may spend on sliced jobs, counted from the frame's start.
FRAME_BUDGET_S = 0.006
#: Jobs always get at least this much, so formatting finishes even in busy frames.
MIN_JOB_SLICE_S = 0.001

#: When any scheduler last ran a frame (``time.monotonic``), for the idle collector.
_last_frame_at = float("-inf")


def last_frame_at() -> float:
    """When any transcript last ran a frame (``time.monotonic``; -inf if none has).

    The idle garbage collector (``gui/idle_collector.py``) waits for a quiet
    window: a reply streaming or a diff being coloured runs frames.
    """
    return _last_frame_at


class _Wait:
    """What a job yields when it cannot progress yet (e.g. waiting on a thread)."""


#: Yield this from a job to be skipped until the next frame.
WAIT = _Wait()


class FrameScheduler(QObject):
    """Runs frame hooks, then sliced background jobs, on a single-shot timer.

    Attributes:
        frames_run: frames run so far.
        busy_seconds: time spent inside frames (hooks and jobs), for benchmarks.
        longest_frame_seconds: the slowest frame so far (wall clock).
        longest_frame_cpu_seconds: CPU time this thread spent in that frame; much
            less than the wall time means the thread was waiting (preempted).
    """

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(FRAME_MS)
        self._timer.timeout.connect(self.run_frame)
        self._hooks: list[Callable[[], None]] = []
        self._jobs: deque[Iterator[object]] = deque()
        self.frames_run = 0
        self.busy_seconds = 0.0
        self.longest_frame_seconds = 0.0
        self.longest_frame_cpu_seconds = 0.0

    def add_frame_hook(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` at the start of every frame that runs."""
        self._hooks.append(hook)

    def request_frame(self) -> None:
        """Make sure a frame runs soon (no-op if one is already due)."""
        if not self._timer.isActive():
            self._timer.start()

    def add_job(self, job: Iterator[object]) -> None:
        """Run ``job`` over frames: a generator that yields after each small step.

        A job that yields :data:`WAIT` is not resumed again in the same frame.
        """
        self._jobs.append(job)
        self.request_frame()

    @property
    def pending_jobs(self) -> int:
        """How many sliced jobs are still running."""
        return len(self._jobs)

    def run_frame(self) -> None:
        """Run the hooks, then jobs until the slice budget is spent."""
        global _last_frame_at  # one clock for every transcript
        _last_frame_at = time.monotonic()
        started = time.perf_counter()
        cpu_started = time.thread_time()
        for hook in self._hooks:
            hook()
        deadline = max(started + FRAME_BUDGET_S, time.perf_counter() + MIN_JOB_SLICE_S)
        waiting: list[Iterator[object]] = []
        while self._jobs and time.perf_counter() < deadline:
            job = self._jobs[0]
            try:
                step = next(job)
            except StopIteration:
                self._jobs.popleft()
                continue
            except Exception:
                log.exception("A display job failed; the text stays unformatted")
                self._jobs.popleft()
                continue
            if step is WAIT:
                waiting.append(self._jobs.popleft())
        self._jobs.extend(waiting)
        if self._jobs:
            self.request_frame()
        spent = time.perf_counter() - started
        self.frames_run += 1
        self.busy_seconds += spent
        if spent > self.longest_frame_seconds:
            self.longest_frame_seconds = spent
            self.longest_frame_cpu_seconds = time.thread_time() - cpu_started

    def run_all_jobs(self) -> None:
        """Finish every pending job now (for callers that need the final look)."""
        while self._jobs:
            job = self._jobs.popleft()
            try:
                for _ in job:
                    pass
            except Exception:
                log.exception("A display job failed; the text stays unformatted")
