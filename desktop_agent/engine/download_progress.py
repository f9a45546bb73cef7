"""Progress of one download (bytes, speed, time left) and the way to cancel it.

``huggingface_hub`` reports progress by calling ``update(n)`` on a tqdm bar of the
class it is given (``tqdm_class``). :func:`progress_bar_class` makes such a class
that draws nothing and feeds a :class:`ProgressMeter` instead; its ``update`` is
also where a cancellation takes effect: it raises before the hub writes the chunk,
so the partial file always holds an exact prefix of the download. The installed
hub calls ``update`` once per 10 MB chunk at most, so the callback is cheap; the
meter still reports no more than ten times a second.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tqdm.auto import tqdm

#: Speed is averaged over this many seconds: long enough to be steady, short
#: enough to follow a connection that slows down.
SPEED_WINDOW_S = 5.0
REPORT_INTERVAL_S = 0.1


@dataclass(frozen=True)
class DownloadProgress:
    """Where a download stands.

    Attributes:
        filename: The file being downloaded.
        downloaded_bytes: Bytes on disk so far (a resumed download starts above 0).
        total_bytes: The file's size, if the hub said.
        bytes_per_second: Recent speed; None until there is a measurement.
        seconds_left: At the recent speed; None when unknown.
        verifying: True while the finished file's checksum is being computed.
    """

    filename: str
    downloaded_bytes: int
    total_bytes: int | None
    bytes_per_second: float | None
    seconds_left: float | None
    verifying: bool = False


ProgressCallback = Callable[[DownloadProgress], None]


class DownloadCancelled(Exception):
    """Raised inside the hub client's loop when the caller's cancel event is set."""


class ProgressMeter:
    """Turns byte counts into :class:`DownloadProgress` reports for ``callback``."""

    def __init__(self, filename: str, callback: ProgressCallback | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.filename = filename
        self.callback = callback
        self.clock = clock
        self.done = 0
        self.total: int | None = None
        self._samples: deque[tuple[float, int]] = deque()
        self._last_report = float("-inf")

    def start(self, done: int, total: int | None) -> None:
        self.done, self.total = done, total
        self._samples.clear()
        self._samples.append((self.clock(), done))
        self._report(force=True)

    def advance(self, count: int) -> None:
        self.done += count
        now = self.clock()
        self._samples.append((now, self.done))
        while len(self._samples) > 2 and now - self._samples[0][0] > SPEED_WINDOW_S:
            self._samples.popleft()
        self._report(force=self.total is not None and self.done >= self.total)

    def verifying(self, hashed: int) -> None:
        if self.callback is not None:
            self.callback(DownloadProgress(self.filename, hashed, self.total, None, None,
                                           verifying=True))

    def speed(self) -> float | None:
        if len(self._samples) < 2:
            return None
        (first_time, first_bytes), (last_time, last_bytes) = self._samples[0], self._samples[-1]
        elapsed = last_time - first_time
        return (last_bytes - first_bytes) / elapsed if elapsed > 0 else None

    def _report(self, *, force: bool) -> None:
        now = self.clock()
        if self.callback is None or (not force and now - self._last_report < REPORT_INTERVAL_S):
            return
        self._last_report = now
        speed = self.speed()
        left = ((self.total - self.done) / speed
                if speed and self.total is not None and speed > 0 else None)
        self.callback(DownloadProgress(self.filename, self.done, self.total, speed,
                                       max(0.0, left) if left is not None else None))


def progress_bar_class(meter: ProgressMeter, cancel: threading.Event | None) -> type[tqdm]:
    """A tqdm class for ``tqdm_class=``: silent, reporting to ``meter``, honouring ``cancel``."""

    class _MeterBar(tqdm):  # type: ignore[misc]  # tqdm ships no types
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["disable"] = True  # no terminal output: the meter reports
            super().__init__(*args, **kwargs)
            meter.start(int(kwargs.get("initial") or 0), kwargs.get("total"))

        def update(self, n: float | None = 1) -> bool | None:
            if cancel is not None and cancel.is_set():
                raise DownloadCancelled
            meter.advance(int(n or 0))
            return None

    return _MeterBar
