"""The diff of a 10,000-line file: worked out, and rendered on an approval card.

Run: QT_QPA_PLATFORM=offscreen python3 bench/diff_render.py [--lines N] [--every K]

A Python file of N lines has every K-th line changed (plus a fully rewritten
variant). Prints:

- the first diff shown in a fresh process (cold), twice in a child process of its
  own: as a process with no warm-up pays it (pygments builds its file-name
  lookup, imports the lexer; Qt makes its enums and loads the fixed font), and
  after the app's first-input warm-up (``gui.app.warm_up``), target <= 50 ms;
- the diff worked out and its unified text made (``workspace.diffs``), target <= 50 ms;
- the diff shown on a real DiffView (which paints only the rows in view): the wall
  time until it is on screen in colour, and the longest event-loop stall meanwhile
  (gap between ticks of a 1 ms heartbeat timer, minus the 1 ms), target <= 16 ms;
- scrolling through the whole diff a page at a time: the longest single repaint
  (rows painted, and pygments lexing a block of rows the first time it is seen),
  wall and CPU time, target <= 16 ms. On a shared, loaded machine the difference
  between wall and CPU time is time spent waiting for a core, not work;
- the longest garbage-collection pause while a diff was shown and scrolled
  (a ``gc.callbacks`` probe), full (generation 2) and young, target <= 16 ms,
  and what one full collection costs when the idle collector runs it.

The garbage collector is handled as the app handles it: start-up objects frozen
after the first paint (``gui.app.freeze_startup_objects``), what the warm-up
loaded frozen at the next idle moment, and full collections left to the idle
collector (``gui.idle_collector``), which runs none while the benchmark keeps
the window busy unless one is overdue. ``--gc startup-freeze`` handles it as the
app did before the idle collector (start-up objects frozen, the warm-up's not,
Python's own thresholds), to see what the collector changes.

Each figure is printed with its ratio to the target.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QWidget

from desktop_agent.gui.app import freeze_startup_objects, warm_up
from desktop_agent.gui.idle_collector import IdleCollector
from desktop_agent.gui.transcript.diff_view import DiffView
from desktop_agent.gui.transcript.frame_scheduler import FrameScheduler
from desktop_agent.gui.transcript.theme import TranscriptTheme
from desktop_agent.workspace.diffs import FileDiff, diff_bytes

DIFF_TARGET_MS = 50.0
STALL_TARGET_MS = 16.0


class GcPauses:
    """Every garbage collection from :meth:`start` on: generation, wall and CPU seconds."""

    def __init__(self) -> None:
        self.pauses: list[tuple[int, float, float]] = []
        self._started = (0.0, 0.0)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = (time.perf_counter(), time.thread_time())
        else:
            wall, cpu = self._started
            self.pauses.append((info["generation"], time.perf_counter() - wall,
                                time.thread_time() - cpu))

    def start(self) -> None:
        self.pauses.clear()
        gc.callbacks.append(self._on_gc)

    def stop(self) -> None:
        gc.callbacks.remove(self._on_gc)

    def longest(self, full: bool) -> tuple[int, float, float]:
        """How many, and the longest (wall, CPU seconds), of the full or the young ones."""
        chosen = [p for p in self.pauses if (p[0] == 2) == full]
        worst = max(chosen, key=lambda p: p[1], default=(0, 0.0, 0.0))
        return len(chosen), worst[1], worst[2]


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
    pauses = GcPauses()
    pauses.start()
    try:
        figures = _measure_render(app, diff, side_by_side)
    finally:
        pauses.stop()
    for kind, full in (("full", True), ("young", False)):
        count, wall, cpu = pauses.longest(full)
        figures.update({f"gc_{kind}_count": float(count), f"gc_{kind}_ms": wall * 1000,
                        f"gc_{kind}_cpu_ms": cpu * 1000})
    return figures


def _measure_render(app: QApplication, diff: FileDiff, side_by_side: bool) -> dict[str, float]:
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


def first_diff(lines: int, every: int, warm: bool) -> dict[str, float]:
    """The first diff this process shows (run in a fresh child process).

    The app's real main window is built and painted first (on a temporary data
    folder), so what is measured is what the app's first diff pays, not the
    first use of Qt widgets, fonts and enums that the window has already made.
    """
    import asyncio
    import tempfile

    from desktop_agent.gui.app import create_application
    from desktop_agent.gui.event_loop import GuiEventLoop
    from desktop_agent.gui.window.main_window import MainWindow
    from desktop_agent.store import Store

    data = tempfile.mkdtemp(prefix="diff-render-")
    os.environ["DESKTOP_AGENT_DATA_DIR"] = data
    os.environ["DESKTOP_AGENT_WORK_ROOT"] = str(Path(data) / "work")
    app = create_application(["bench"])
    loop = GuiEventLoop(app)
    asyncio.set_event_loop(loop)
    window = MainWindow(Store.open(), discover_on_start=False)
    window.resize(1200, 800)
    window.show()
    window.grab()  # the first paint
    loop.run_until_complete(asyncio.sleep(0.2))  # the window's start-up tasks settle
    diff = diff_bytes("src/big_module.py", source(lines, every, changed=False),
                      source(lines, every, changed=True))
    freeze_startup_objects()  # as the app does after its first paint
    if warm:
        warm_up()
        freeze_startup_objects()  # as the idle collector does once the warm-up is done

    async def measure() -> dict[str, float]:
        return measure_render(app, diff, side_by_side=False)

    return loop.run_until_complete(measure())


def print_first_diffs(lines: int, every: int) -> None:
    """Cold first-diff figures, each from a fresh child process."""
    print(f"  first diff shown in a fresh process (every {every}th line changed, unified):")
    for warm, label in ((False, "no warm-up"), (True, "after the app's warm-up")):
        command = [sys.executable, str(Path(__file__).resolve()), "--first-diff",
                   "--lines", str(lines), "--every", str(every)] + (["--warm"] if warm else [])
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode:
            print(f"    {label}: failed\n{result.stderr}")
            continue
        figures = json.loads(result.stdout.strip().splitlines()[-1])
        wall, stall = figures["wall_ms"], figures["stall_ms"]
        print(f"    {label:24s} {figures['rows']:,.0f} rows in colour in {wall:6.1f} ms  "
              f"target {DIFF_TARGET_MS:.0f} ms  ratio {wall / DIFF_TARGET_MS:.2f}; "
              f"longest stall {stall:5.1f} ms  ratio {stall / STALL_TARGET_MS:.2f}")


def print_gc_pauses(figures: dict[str, float]) -> None:
    for kind in ("full", "young"):
        ms = figures[f"gc_{kind}_ms"]
        cpu, count = figures[f"gc_{kind}_cpu_ms"], figures[f"gc_{kind}_count"]
        print(f"      longest {kind:5s} GC pause {ms:5.1f} ms ({cpu:4.1f} ms CPU) of {count:.0f}"
              f"  target {STALL_TARGET_MS:.0f} ms  ratio {ms / STALL_TARGET_MS:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--first-diff", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--gc", choices=("app", "startup-freeze"), default="app",
                        help="the app's garbage-collector handling, or only the start-up "
                             "freeze with Python's own thresholds (as before the idle collector)")
    args = parser.parse_args()
    if args.first_diff:
        print(json.dumps(first_diff(args.lines, args.every, args.warm)), flush=True)
        os._exit(0)  # no window teardown: only the figure counts
    print(f"diff of a {args.lines:,}-line file")
    print_first_diffs(args.lines, args.every)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    freeze_startup_objects()  # as the app does after its first paint
    warm_up()
    collector = None
    if args.gc == "app":
        freeze_startup_objects()  # as the idle collector does once the warm-up is done
        collector = IdleCollector(app)  # as the app does: full collections when idle
    old = source(args.lines, args.every, changed=False)
    cases = {
        f"every {args.every}th line changed": source(args.lines, args.every, changed=True),
        "every line changed": source(args.lines, 1, changed=True),
    }
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
            print_gc_pauses(figures)
    started = time.perf_counter()
    gc.collect()
    full_ms = (time.perf_counter() - started) * 1000
    if collector is None:
        print(f"  one full collection now (Python runs them wherever it is): {full_ms:.1f} ms")
        return 0
    collector.uninstall()
    print(f"  full collections the idle collector ran meanwhile: {collector.collections} "
          f"(overdue ones); one now, as when the window is idle: {full_ms:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
