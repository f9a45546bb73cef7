"""Give memory freed by an eviction back to the operating system.

When the server drops idle conversations, their objects are freed, but glibc's
allocator keeps the pages for later: the process's RSS stays where the busiest
hour left it. ``malloc_trim(0)`` returns the free pages of every arena. Other C
libraries (musl, macOS, Windows) have no such call; there this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import logging
from collections.abc import Callable

log = logging.getLogger("desktop_agent.server.memory")


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


def can_return_memory() -> bool:
    """Whether :func:`return_freed_memory` can give pages back on this system."""
    return _malloc_trim() is not None


def collect_cycles() -> None:
    """Free the reference cycles dropped sessions leave (on the event loop's thread).

    On the loop's thread, not a worker's: finalizers of asyncio objects found in
    the cycles call the loop, which only its own thread may do.
    """
    gc.collect()


def return_freed_memory() -> bool:
    """Hand free heap pages back to the system; True if any went.

    Blocking (a few milliseconds after a large eviction): run it in a worker thread.
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    return bool(trim(0))
