"""Work around a PySide6 reference-count bug that aborts the interpreter.

Why: PySide6-Essentials 6.12.0 (an abi3 wheel) returns ``None`` from every
void Qt method without adding a reference. On CPython 3.12+ ``None`` is
immortal, so nothing happens; on 3.11 each call (``setText``, ``setHtml``,
``QTextCursor.insertText``...) takes one reference away from ``None``, and
after a few thousand calls Python aborts with "none_dealloc: deallocating
None". A streaming transcript makes that many calls within seconds.

The guard detects the bug with a short probe and, if present, gives ``None``
a very large reference count: what CPython 3.12 does by design. ``None`` is a
static object that is never freed, so this has no other effect.
"""

from __future__ import annotations

import ctypes
import logging
import sys

from PySide6.QtCore import QObject

log = logging.getLogger("desktop_agent.gui.transcript")

_PROBE_CALLS = 64
_RESERVE = 1 << 40
_checked = False


def void_calls_leak_none() -> bool:
    """True when calling a void Qt method drops a reference to ``None``."""
    probe = QObject()
    before = sys.getrefcount(None)
    for _ in range(_PROBE_CALLS):
        probe.setObjectName("probe")
    return sys.getrefcount(None) <= before - _PROBE_CALLS // 2


def guard_none_refcount() -> None:
    """Apply the workaround once per process if this PySide6 needs it."""
    global _checked
    if _checked or sys.version_info >= (3, 12):
        return
    _checked = True
    if void_calls_leak_none():
        ctypes.c_ssize_t.from_address(id(None)).value += _RESERVE
        log.info("PySide6 drops references to None on void calls; applied the workaround")
