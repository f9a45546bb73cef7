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
SLICE_BUDGET_S = 0.005


class FrameScheduler(QObject):
    """Runs frame hooks, then sliced background jobs, on a single-shot timer."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(FRAME_MS)
        self._timer.timeout.connect(self.run_frame)
        self._hooks: list[Callable[[], None]] = []
        self._jobs: deque[Iterator[None]] = deque()

    def add_frame_hook(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` at the start of every frame that runs."""
        self._hooks.append(hook)

    def request_frame(self) -> None:
        """Make sure a frame runs soon (no-op if one is already due)."""
        if not self._timer.isActive():
            self._timer.start()

    def add_job(self, job: Iterator[None]) -> None:
        """Run ``job`` (a generator that yields between small steps) over frames."""
        self._jobs.append(job)
        self.request_frame()

    @property
    def pending_jobs(self) -> int:
        """How many sliced jobs are still running."""
        return len(self._jobs)

    def run_frame(self) -> None:
        """Run the hooks, then jobs until the slice budget is spent."""
        for hook in self._hooks:
            hook()
        deadline = time.perf_counter() + SLICE_BUDGET_S
        while self._jobs and time.perf_counter() < deadline:
            job = self._jobs[0]
            try:
                next(job)
            except StopIteration:
                self._jobs.popleft()
            except Exception:
                log.exception("A display job failed; the text stays unformatted")
                self._jobs.popleft()
        if self._jobs:
            self.request_frame()

    def run_all_jobs(self) -> None:
        """Finish every pending job now (for callers that need the final look)."""
        while self._jobs:
            job = self._jobs.popleft()
            try:
                for _ in job:
                    pass
            except Exception:
                log.exception("A display job failed; the text stays unformatted")
