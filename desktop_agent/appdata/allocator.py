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

MMAP_THRESHOLD_BYTES = 128 * 1024
"""glibc's own starting value: blocks above it get a mapping of their own."""


def hold_mmap_threshold(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes; whether it could.

    Call it first thing in the process: blocks already moved to the heap stay there.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        # The process's own symbols: the C library it runs on, found without
        # ctypes.util.find_library (which runs ldconfig in a subprocess at start).
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    done = bool(mallopt(M_MMAP_THRESHOLD, threshold))
    if not done:
        log.debug("mallopt(M_MMAP_THRESHOLD) refused")
    return done
