"""Checkpoints of a large working folder: record it, record it again, undo a big turn.

Builds a folder of ``--files`` files totalling ``--megabytes`` MB (random
bytes, 100 files per sub-folder), then times :class:`CheckpointStore` (the
same code the session calls before each tool round):

- the first checkpoint (every content read, hashed and stored);
- a checkpoint when nothing changed (target <= 50 ms): one ``lstat`` per path;
- a checkpoint after 10 files changed (target <= 100 ms);
- undoing a turn that rewrote 1,000 files (target <= 1 s): the folder scanned
  for conflicts, the 1,000 files written back, the restore recorded as a turn.

Each timed figure is the median of ``--runs`` runs; each is printed with its
target and its ratio to the target (below 1.0 meets it), and with the CPU
time this process spent. A floor is printed first: a bare ``os.scandir`` walk
with one ``lstat`` per path, the least any checkpoint that notices every
change without a file watcher can cost; on a loaded machine the targets
scale with it (the unchanged checkpoint's ratio to the floor says what is ours). Files' mtimes are
set an hour back after each change, as a folder that was not being written
in the last two seconds has them: a file modified within two seconds of the
previous checkpoint is read again on purpose (git's "racily clean" rule).

    python bench/checkpoints.py [--files 10000] [--megabytes 200] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from desktop_agent.workspace.checkpoints import CheckpointStore

HOUR_AGO_NS = 3600 * 1_000_000_000


def build(folder: Path, files: int, megabytes: int) -> list[Path]:
    size = megabytes * 1024 * 1024 // files
    made: list[Path] = []
    for n in range(files):
        sub = folder / f"pkg{n // 100:03d}"
        sub.mkdir(exist_ok=True)
        path = sub / f"module{n % 100:02d}.py"
        path.write_bytes(os.urandom(size))
        made.append(path)
    backdate(made)
    return made


def backdate(paths: list[Path]) -> None:
    stamp = time.time_ns() - HOUR_AGO_NS
    for path in paths:
        os.utime(path, ns=(stamp, stamp))


def rewrite(paths: list[Path]) -> None:
    for path in paths:
        path.write_bytes(os.urandom(path.stat().st_size))


CPU: list[float] = []


def timed(action: Callable[[], object]) -> float:
    cpu = time.process_time()
    began = time.perf_counter()
    action()
    elapsed = time.perf_counter() - began
    CPU.append(time.process_time() - cpu)
    return elapsed


def report(name: str, runs: list[float], target: float | None) -> None:
    seconds = statistics.median(runs)
    cpu = statistics.median(CPU[-len(runs):])
    shown = f"{seconds * 1000:9.1f} ms (cpu {cpu * 1000:7.1f})"
    if target is None:
        print(f"{name:<42}{shown}   (no target)")
    else:
        print(f"{name:<42}{shown}   target {target * 1000:6.0f} ms   "
              f"ratio {seconds / target:5.2f}")


def bare_walk(top: Path) -> int:
    count = 0
    pending = [str(top)]
    while pending:
        with os.scandir(pending.pop()) as listing:
            for item in listing:
                item.stat(follow_symlinks=False)
                count += 1
                if item.is_dir(follow_symlinks=False):
                    pending.append(item.path)
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    top = Path(tempfile.mkdtemp(prefix="bench-checkpoints-"))
    try:
        workdir = top / "work"
        workdir.mkdir()
        files = build(workdir, args.files, args.megabytes)
        store = CheckpointStore(top / "data" / "checkpoints" / "conversation")
        print(f"folder: {args.files} files, {args.megabytes} MB; median of {args.runs} runs")

        floor = [timed(lambda: bare_walk(workdir)) for _ in range(args.runs)]
        report("floor: bare scandir + lstat walk", floor, None)

        first = [timed(lambda: store.checkpoint(workdir, kind="tool_round", turn="first"))]
        report("first checkpoint", first, None)

        unchanged = [timed(lambda: store.checkpoint(workdir, kind="tool_round", turn="same"))
                     for _ in range(args.runs)]
        report("checkpoint, nothing changed", unchanged, 0.050)
        over_floor = statistics.median(unchanged) / statistics.median(floor)
        print(f"{'  ratio to the floor':<42}{over_floor:9.2f}")

        rng = random.Random(7)
        ten: list[float] = []
        for run in range(args.runs):
            changed = rng.sample(files, 10)
            rewrite(changed)
            ten.append(timed(lambda run=run: store.checkpoint(
                workdir, kind="tool_round", turn=f"ten-{run}")))
            backdate(changed)
            store.checkpoint(workdir, kind="tool_round", turn=f"ten-{run}")  # settle mtimes
        report("checkpoint, 10 files changed", ten, 0.100)

        undo: list[float] = []
        for run in range(args.runs):
            turn = f"big-{run}"
            touched = rng.sample(files, 1000)
            store.checkpoint(workdir, kind="tool_round", turn=turn)
            rewrite(touched)
            store.close_turn(workdir, turn)
            undo.append(timed(lambda turn=turn: store.undo_turn(workdir, turn)))
            backdate(touched)
            store.checkpoint(workdir, kind="tool_round", turn=f"settle-{run}")
        report("undo of a turn that rewrote 1,000 files", undo, 1.0)
        print(f"checkpoint store on disk: {store.size_bytes() / 1024 / 1024:.0f} MB "
              f"(folder: {args.megabytes} MB)")
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
