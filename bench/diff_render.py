"""The diff of a 10,000-line file: worked out, and rendered on an approval card.

Run: QT_QPA_PLATFORM=offscreen python3 bench/diff_render.py [--lines N] [--every K]

A Python file of N lines has every K-th line changed (plus a fully rewritten
variant). Prints:

- the diff worked out and its unified text made (``workspace.diffs``), target <= 50 ms;
- the diff shown on a real DiffView (which paints only the rows in view): the wall
  time until it is on screen in colour, and the longest event-loop stall meanwhile
  (gap between ticks of a 1 ms heartbeat timer, minus the 1 ms), target <= 16 ms;
- scrolling through the whole diff a page at a time: the longest single repaint
  (rows painted, and pygments lexing a block of rows the first time it is seen),
  wall and CPU time, target <= 16 ms. On a shared, loaded machine the difference
  between wall and CPU time is time spent waiting for a core, not work.

Each figure is printed with its ratio to the target.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QWidget

from desktop_agent.gui.transcript.diff_view import DiffView
from desktop_agent.gui.transcript.frame_scheduler import FrameScheduler
from desktop_agent.gui.transcript.theme import TranscriptTheme
from desktop_agent.workspace.diffs import FileDiff, diff_bytes

DIFF_TARGET_MS = 50.0
STALL_TARGET_MS = 16.0


def source(lines: int, every: int, changed: bool) -> bytes:
    rows = []
    for i in range(lines):
        if changed and i % every == 0:
            rows.append(f"    total_{i} = compute({i}) + 1  # changed\n")
        else:
            rows.append(f"    total_{i} = compute({i})  # step {i}\n")
    return ("def run():\n" + "".join(rows)).encode()


def measure_diff(old: bytes, new: bytes, repeat: int = 5) -> tuple[float, FileDiff]:
    best = float("inf")
    diff = None
    for _ in range(repeat):
        start = time.perf_counter()
        diff = diff_bytes("src/big_module.py", old, new)
        diff.unified_text()
        best = min(best, time.perf_counter() - start)
    assert diff is not None
    return best * 1000, diff


def measure_render(app: QApplication, diff: FileDiff, side_by_side: bool) -> dict[str, float]:
    host = QWidget()
    host.resize(1400 if side_by_side else 800, 600)
    scheduler = FrameScheduler(host)
    view = DiffView(TranscriptTheme.from_palette(app.palette()), scheduler, host)
    view.set_side_by_side(side_by_side)
    view.resize(host.size())
    gaps: list[float] = []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    heartbeat = QTimer()
    heartbeat.setInterval(1)
    heartbeat.timeout.connect(tick)
    heartbeat.start()
    start = time.perf_counter()
    host.show()
    view.set_diff(diff)
    deadline = start + 120
    while not (view.rows_shown > 0 and scheduler.pending_jobs == 0):
        app.processEvents()
        if time.perf_counter() > deadline:
            print("    (rendering did not finish in 120 s)")
            break
    wall = time.perf_counter() - start
    heartbeat.stop()
    stall = max((g for g in gaps[1:]), default=0.0) - 0.001
    scheduler.longest_frame_seconds = scheduler.longest_frame_cpu_seconds = 0.0
    paint_wall, paint_cpu = scroll_through(app, view, scheduler)
    host.close()
    return {"wall_ms": wall * 1000, "paint_ms": paint_wall * 1000, "paint_cpu_ms": paint_cpu * 1000,
            "slice_ms": scheduler.longest_frame_seconds * 1000,
            "slice_cpu_ms": scheduler.longest_frame_cpu_seconds * 1000,
            "stall_ms": max(0.0, stall) * 1000, "rows": float(view.rows_shown)}


def scroll_through(app: QApplication, view: DiffView,
                   scheduler: FrameScheduler) -> tuple[float, float]:
    """The longest repaint (wall, CPU seconds) scrolling the diff from top to bottom.

    After each page the colouring slices the repaint asked for run to the end
    (the scheduler records the longest of them).
    """
    bar = view.left.verticalScrollBar()
    worst_wall = worst_cpu = 0.0
    for value in range(0, bar.maximum() + 1, max(1, bar.pageStep())):
        bar.setValue(value)
        wall, cpu = time.perf_counter(), time.thread_time()
        view.left.viewport().repaint()
        if view.right.isVisible():
            view.right.viewport().repaint()
        worst_wall = max(worst_wall, time.perf_counter() - wall)
        worst_cpu = max(worst_cpu, time.thread_time() - cpu)
        while scheduler.pending_jobs:
            app.processEvents()
    return worst_wall, worst_cpu


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=100)
    args = parser.parse_args()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    old = source(args.lines, args.every, changed=False)
    cases = {
        f"every {args.every}th line changed": source(args.lines, args.every, changed=True),
        "every line changed": source(args.lines, 1, changed=True),
    }
    print(f"diff of a {args.lines:,}-line file")
    for name, new in cases.items():
        ms, diff = measure_diff(old, new)
        print(f"  {name}: {diff.counts}, {len(diff.hunks)} hunks")
        print(f"    diff + unified text  {ms:7.1f} ms   target {DIFF_TARGET_MS:.0f} ms  "
              f"ratio {ms / DIFF_TARGET_MS:.2f}")
        for side in (False, True):
            figures = measure_render(app, diff, side)
            label = "side by side" if side else "unified"
            stall = figures["stall_ms"]
            print(f"    on a card, {label:12s} {figures['rows']:,.0f} rows shown in "
                  f"{figures['wall_ms']:6.1f} ms; longest stall {stall:5.1f} ms  "
                  f"target {STALL_TARGET_MS:.0f} ms  ratio {stall / STALL_TARGET_MS:.2f}")
            for what, key in (("repaint", "paint"), ("colouring slice", "slice")):
                ms = figures[f"{key}_ms"]
                print(f"      scrolled through: longest {what:15s} {ms:5.1f} ms "
                      f"({figures[f'{key}_cpu_ms']:4.1f} ms CPU)  target {STALL_TARGET_MS:.0f} ms"
                      f"  ratio {ms / STALL_TARGET_MS:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
