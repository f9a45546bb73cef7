"""The window gives heap pages freed by finished turns back to the system (glibc only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop_agent.gui.heap_trim import HeapTrimmer

pytestmark = pytest.mark.skipif(not HeapTrimmer.available(),
                                reason="the C library has no malloc_trim (not glibc)")


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_freed_pages_scattered_in_the_heap_go_back_to_the_system() -> None:
    # 60 MB of 1 KB pieces (the C heap, not mmap); a few stay alive, one of them the
    # newest, so the allocator cannot give the rest back by shrinking the heap's top.
    pieces = [bytes(1000) + i.to_bytes(4, "little") for i in range(60_000)]
    kept = pieces[::500] + pieces[-1:]
    del pieces
    before = _rss_mb()
    trimmer = HeapTrimmer()
    assert trimmer.trim_soon()
    trimmer.wait()
    after = _rss_mb()
    assert before - after > 30, f"RSS {before:.1f} -> {after:.1f} MB"
    assert len(kept) == 121


def test_trims_are_spaced_out_and_never_overlap() -> None:
    now = [100.0]
    trimmer = HeapTrimmer(interval_seconds=10.0, clock=lambda: now[0])
    assert trimmer.trim_soon()
    trimmer.wait()
    now[0] += 3.0
    assert not trimmer.trim_soon()  # too soon after the last one
    now[0] += 7.0
    assert trimmer.trim_soon()
    trimmer.wait()
    assert trimmer.trims == 2
