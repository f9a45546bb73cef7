"""``desktop-agent serve`` from launch to its first ``200`` on ``/alive``, side by side.

    python bench/serve_startup.py                          # this checkout
    python bench/serve_startup.py --runs 9 old=/work/wt/base new=.

Each checkout (``LABEL=PATH``, its source first on ``PYTHONPATH``) is launched as
``python -m desktop_agent serve --no-auth`` on a free port with its own data folder
(one uncounted launch first creates the database), and ``/alive`` is asked until it
answers 200. The checkouts take turns, run by run: on a shared machine the load
changes from one minute to the next, and two medians taken one after the other would
compare two loads as much as two builds. Each run gives

* the wall time from launch to the first 200;
* the CPU time the server process had used by then (user + system, from
  ``/proc/<pid>/stat``): what start-up costs, much less noisy than the wall clock
  on a busy machine;
* the same two figures at the first 200 of the API itself (``GET /conversations``):
  what ``/alive`` does not wait for any more is still done before the API answers.

The machine's load (``uptime``) is printed before and after, beside the medians.
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
#: A launch that has not answered by then is reported as failed (the machine may be busy).
GIVE_UP_SECONDS = 180.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def answers(port: int, path: str) -> bool:
    """Whether ``GET path`` answers 200 now."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=GIVE_UP_SECONDS)
    try:
        connection.request("GET", path)
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def one_run(checkout: Path, data: Path) -> tuple[float, float, float, float]:
    """Seconds and CPU seconds to the first 200 on /alive, then on the API."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(checkout), "DESKTOP_AGENT_DATA_DIR": str(data)}
    env.pop("DESKTOP_AGENT_MASTER_KEY", None)
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "desktop_agent", "serve", "--no-auth", "--port", str(port),
         "--log-level", "warning"], cwd=checkout, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while True:
            if answers(port, "/alive"):
                alive = time.perf_counter() - started, cpu_seconds(process.pid)
                if not answers(port, "/conversations"):  # waits while the API is made
                    raise RuntimeError("the API did not answer GET /conversations")
                return (*alive, time.perf_counter() - started, cpu_seconds(process.pid))
            if process.poll() is not None:
                error = process.stderr.read().decode(errors="replace") if process.stderr else ""
                raise RuntimeError(f"serve exited with {process.returncode}: {error[-2000:]}")
            if time.perf_counter() - started > GIVE_UP_SECONDS:
                raise RuntimeError(f"no answer on /alive in {GIVE_UP_SECONDS:.0f} s")
            time.sleep(0.005)
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def uptime() -> str:
    """The machine's load averages, as ``uptime`` prints them."""
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs="*", metavar="LABEL=PATH",
                        help="a name and a source checkout (default: this one)")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    checkouts: dict[str, Path] = {}
    for given in args.checkouts or [f"this={Path(__file__).resolve().parents[1]}"]:
        label, _, path = given.partition("=")
        if not path or not (Path(path) / "desktop_agent").is_dir():
            parser.error(f"{given!r} is not LABEL=PATH of a checkout")
        checkouts[label] = Path(path).resolve()
    folders = {label: Path(tempfile.mkdtemp(prefix=f"serve-startup-{label}-"))
               for label in checkouts}
    figures: dict[str, list[tuple[float, float, float, float]]] = {
        label: [] for label in checkouts}
    print(f"before: {uptime()}")
    try:
        for label, checkout in checkouts.items():
            one_run(checkout, folders[label])  # creates the data folder and its database
        for run in range(args.runs):
            for label, checkout in checkouts.items():
                run_figures = one_run(checkout, folders[label])
                figures[label].append(run_figures)
                wall, cpu, api_wall, api_cpu = run_figures
                print(f"run {run + 1} {label:>6}: /alive {wall:6.2f} s ({cpu:4.2f} s CPU), "
                      f"API {api_wall:6.2f} s ({api_cpu:4.2f} s CPU)")
    finally:
        for folder in folders.values():
            shutil.rmtree(folder, ignore_errors=True)
    print(f"after:  {uptime()}")
    for label in checkouts:
        columns = list(zip(*figures[label], strict=True))
        wall, cpu, api_wall, api_cpu = (statistics.median(c) for c in columns)
        print(f"{label:>6}, medians of {args.runs} runs: /alive {wall:.2f} s "
              f"(min {min(columns[0]):.2f}, max {max(columns[0]):.2f}) and {cpu:.2f} s CPU; "
              f"API {api_wall:.2f} s (min {min(columns[2]):.2f}) and {api_cpu:.2f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
