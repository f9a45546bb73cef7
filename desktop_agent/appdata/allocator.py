"""Keep glibc's allocator from holding on to the memory of big, short-lived blocks.

glibc serves a request above its mmap threshold (128 KiB at start) with a
mapping of its own, returned to the system when freed. But each such block
freed raises the threshold to its size (up to 32 MiB), so after the first big
strings and buffers of a session (a streamed reply, a command's output, a
rendered document) blocks of that size come from the heap instead, where freed
memory stays with the process and splits the heap up. Over hundreds of turns
the window's RSS then grew with the allocator's free memory, not with anything
alive (``bench/soak_window.py --breakdown``: glibc's free memory 6–9 MB at turn
50, ~24 MB later). Setting the threshold once, at start, turns that adjustment
off: big blocks keep their own mappings and go back when freed.

Each thread that allocates while another holds an arena's lock gets an arena
of its own (up to eight per core), and a thread's arena keeps what it freed for
that thread: the first-input warm-up imports the turn stack on a worker thread,
whose arena then held ~10 MB free that the UI thread never reused (in three
soak runs of five: RSS at the first sample 213.9–215.8 MB, against 197.8–199.3
in the other two; with one arena 197.8 and 198.4 MB).
:func:`share_one_arena` makes every thread allocate from the main arena; the
window's other threads (the loop's workers, Qt's pool) allocate little and
seldom while the UI thread does, so the shared lock is rarely contended.

Tried and not kept: ``malloc_trim(0)`` after each idle full collection. In the
soak the RSS grew as much with it (+34.9 MB per 1,000 turns over turns
200–300, against +33.7 without; the main arena's size grew the same), so
what grows is the heap itself, not free pages a trim could return.

Other C libraries (musl, macOS, Windows) have no ``mallopt``; there this does
nothing.
"""

from __future__ import annotations

import ctypes
import logging
import sys

log = logging.getLogger("desktop_agent.appdata.allocator")

M_MMAP_THRESHOLD = -3
"""``mallopt``'s parameter for the mmap threshold (glibc's ``malloc.h``)."""

M_ARENA_MAX = -8
"""``mallopt``'s parameter for the most arenas glibc makes."""

MMAP_THRESHOLD_BYTES = 128 * 1024
"""glibc's own starting value: blocks above it get a mapping of their own."""


def hold_mmap_threshold(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes; whether it could.

    Call it first thing in the process: blocks already moved to the heap stay there.
    """
    return _mallopt(M_MMAP_THRESHOLD, threshold, "M_MMAP_THRESHOLD")


def share_one_arena() -> bool:
    """Make every thread allocate from glibc's main arena; whether it could.

    Call it before the process starts threads: a thread keeps the arena it got.
    """
    return _mallopt(M_ARENA_MAX, 1, "M_ARENA_MAX")


def _mallopt(parameter: int, value: int, name: str) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = _libc().mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    done = bool(mallopt(parameter, value))
    if not done:
        log.debug("mallopt(%s) refused", name)
    return done


def _libc() -> ctypes.CDLL:
    # The process's own symbols: the C library it runs on, found without
    # ctypes.util.find_library (which runs ldconfig in a subprocess at start).
    return ctypes.CDLL(None)
