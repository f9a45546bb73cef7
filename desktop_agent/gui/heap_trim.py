"""Give the heap pages finished turns freed back to the system (glibc's ``malloc_trim``).

Why: a turn allocates and frees a lot (the streamed reply's pieces, the
request sent, a long command's output, the history a conversation lets go when
the turn ends). glibc keeps the freed pages for later use, but pieces that
stay alive between them (the transcript's widgets, the store's caches) leave
them scattered, so they are seldom reused whole: over hundreds of turns the
window's RSS grew with the free memory the allocator kept, while the memory in
use stayed flat (``bench/soak_window.py --breakdown``). ``malloc_trim(0)``
hands the free pages inside the heap back. It runs in a worker thread (it
walks every arena, a few milliseconds on a large heap) and at most once per
:data:`TRIM_INTERVAL_SECONDS`, however many tabs end turns. Other C libraries
(musl, macOS, Windows) have no such call; there this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading
import time
from collections.abc import Callable

#: Shortest time between two trims: a few per minute at most, whatever the turn rate.
TRIM_INTERVAL_SECONDS = 10.0


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """The C library's ``malloc_trim`` (glibc), or None where the C library has none."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


class HeapTrimmer:
    """Runs ``malloc_trim(0)`` in a worker thread, one at a time, spaced out.

    Args:
        interval_seconds: Shortest time between the starts of two trims.
        clock: The monotonic clock (a test passes its own).

    Attributes:
        trims: Trims started (for tests and benchmarks).
    """

    def __init__(self, interval_seconds: float = TRIM_INTERVAL_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = interval_seconds
        self._clock = clock
        self._last_start: float | None = None
        self._running: threading.Thread | None = None
        self.trims = 0

    @staticmethod
    def available() -> bool:
        """Whether this system's C library can give pages back."""
        return _malloc_trim() is not None

    def trim_soon(self) -> bool:
        """Start a trim unless one runs or one started within the interval; True if started."""
        trim = _malloc_trim()
        now = self._clock()
        if trim is None or (self._running is not None and self._running.is_alive()):
            return False
        if self._last_start is not None and now - self._last_start < self._interval:
            return False
        self._last_start = now
        self.trims += 1
        self._running = threading.Thread(target=trim, args=(0,), name="heap-trim", daemon=True)
        self._running.start()
        return True

    def wait(self, timeout: float | None = None) -> None:
        """Wait for the running trim, if any (tests, benchmarks)."""
        if self._running is not None:
            self._running.join(timeout)


#: The one trimmer of the process: every tab's turn ends ask it.
heap_trimmer = HeapTrimmer()
