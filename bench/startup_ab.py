"""Two builds (or a build and the source) to first paint, launched in turns, side by side.

    python3 bench/startup_ab.py old=/tmp/desktop-agent-before new=dist/desktop-agent
    python3 bench/startup_ab.py --runs 9 --warm build=dist/desktop-agent \\
        source="python -m desktop_agent"

On a shared machine the load changes from one minute to the next, so two medians taken
one after the other compare two loads as much as two builds. Here the commands take
turns, run by run, and each run prints three figures, as medians per command:

* time from launch to the main window's first paint (the app reports it:
  ``DESKTOP_AGENT_EXIT_AFTER_PAINT=1``, as ``bench/startup.py`` uses);
* CPU time to that paint: the app's own, as it reports it at the paint (its stub
  included); for a build that reports none, which exits at its paint, the process
  and everything it started (user + system of the reaped children): less noisy than
  the wall clock under load;
* time and CPU to "ready" (the conversation shown and taking typing, just after the
  first paint), for builds that report it;
* bytes read from the disk meanwhile (``/proc/diskstats``, the whole machine's: other
  processes add to it, so compare medians), after the page cache is dropped (as root;
  ``--warm`` keeps it, the output says which).

Each command gets its own one-file cache folder (``DESKTOP_AGENT_BUNDLE_CACHE``) and one
launch first that is not counted (it unpacks, and creates the data folder).
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from startup import Display, Launch, drop_page_cache, launch_env, median_or_none


def disk_read_bytes() -> int:
    """Bytes read from the machine's disks since boot (whole disks: ``/sys/block``)."""
    disks = {name for name in os.listdir("/sys/block")
             if not name.startswith(("loop", "ram", "zram"))}
    total = 0
    for line in Path("/proc/diskstats").read_text().splitlines():
        fields = line.split()
        if fields[2] in disks:
            total += int(fields[5]) * 512
    return total


Run = tuple[float, float, int, float | None, float | None]


def one_run(command: list[str], env: dict[str, str]) -> Run:
    """(seconds to first paint, CPU seconds to it, bytes read, seconds and CPU to ready)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    read_before = disk_read_bytes()
    launched = time.time()
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    read = disk_read_bytes() - read_before
    report = Launch(result.stdout, launched)
    if report.paint is None:
        raise RuntimeError(f"no first paint reported by {command}: {result.stderr[-2000:]}")
    cpu = report.paint_cpu
    if cpu is None:  # a build that exits at its paint and does not say
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return report.paint, cpu, read, report.ready, report.ready_cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commands", nargs="+", metavar="LABEL=COMMAND",
                        help="a name and the command line that starts the window")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--warm", action="store_true", help="keep the page cache")
    args = parser.parse_args()
    commands: dict[str, list[str]] = {}
    for given in args.commands:
        label, _, line = given.partition("=")
        if not line:
            parser.error(f"{given!r} is not LABEL=COMMAND")
        words = shlex.split(line)
        commands[label] = [sys.executable, *words[1:]] if words[0] == "python" else words

    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    with Display() as display, tempfile.TemporaryDirectory() as scratch:
        dropped = not args.warm and drop_page_cache()
        print(f"display: {display.name}\npage cache: "
              f"{'dropped before each run' if dropped else 'kept (warm runs)'}", flush=True)
        envs = {}
        for label, command in commands.items():
            envs[label] = launch_env(display, Path(scratch) / "data",
                                     DESKTOP_AGENT_EXIT_AFTER_PAINT="1",
                                     DESKTOP_AGENT_BUNDLE_CACHE=f"{scratch}/bundles-{label}")
            # From source, a run that may not write bytecode compiles every module again.
            envs[label].pop("PYTHONDONTWRITEBYTECODE", None)
            one_run(command, envs[label])  # unpacks, creates the data folder: not counted
        figures: dict[str, list[Run]] = {label: [] for label in commands}
        for _ in range(args.runs):
            for label, command in commands.items():
                if dropped:
                    drop_page_cache()
                figures[label].append(one_run(command, envs[label]))
    for label, runs in figures.items():
        paint = statistics.median(run[0] for run in runs)
        cpu = statistics.median(run[1] for run in runs)
        read = statistics.median(run[2] for run in runs) / 1e6
        shown = ", ".join(f"{run[0]:.2f}" for run in runs)
        ready = median_or_none([run[3] for run in runs])
        ready_cpu = median_or_none([run[4] for run in runs])
        then = (f"; ready median {ready:.2f} s, CPU {ready_cpu:.3f} s"
                if ready is not None and ready_cpu is not None else "; ready not reported")
        print(f"{label}: first paint median {paint:.2f} s ({shown}); CPU median {cpu:.3f} s; "
              f"read median {read:.0f} MB{then}  over {args.runs} runs")
    load = os.getloadavg()
    print(f"load at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
