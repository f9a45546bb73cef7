"""Start-up figures for the one binary: size, launch to first paint, idle memory.

    python3 bench/startup.py                 # builds what is missing, then measures
    python3 bench/startup.py --runs 5 --no-build
    python3 bench/startup.py --runs 5 --versus /path/to/an/earlier/desktop-agent

Prints, against the targets for the 2-core CI machine:
* the single-file binary's size (target <= 70 MB) and the onedir folder's size;
* time from launch to the main window's first paint, median of N runs, for the single
  file (target <= 1.0 s), the onedir build and ``python -m desktop_agent`` from source.
  The single file unpacks the app into a cache folder on its first launch of a build
  and starts it from there afterwards (``packaging/onefile/launcher.py``): the runs use
  a fresh cache folder, and the first launch (which unpacks) is printed on its own,
  with the time to the small window it shows while unpacking (target <= 0.5 s);
* idle RSS with the window open (target <= 120 MB), read from /proc a few seconds after
  the first paint, once the background warm-up imports are done;
* idle RSS with five conversation tabs open (40 messages each, target <= 120 MB), with
  and without the server's token counts stored, for the builds that exist and from
  source (``--rss-only`` skips the first-paint runs);
* idle RSS with the window open and with five tabs while a model server answers the
  server search (targets <= 100 MB and <= 110 MB): the search lists the server's models
  and saves the one it picks into the conversations, without the openai SDK or pydantic
  (each loaded once the person starts to type).

``--versus BINARY`` measures only first paint, the single file and another build of it
launched in turn (each unpacked once into its own cache, the page cache dropped before
each launch), with the CPU each launch took to its first paint, which a shared machine
moves much less than the seconds, and the major page faults and bytes read from disk
of each launch's process tree to its exit (the single file's read-ahead, a background
process of its own, is not counted: what the app waited for is).

The app reports its first paint itself: with ``DESKTOP_AGENT_EXIT_AFTER_PAINT=1`` (or
``DESKTOP_AGENT_REPORT_PAINT=1``) ``desktop_agent.cli`` prints ``first-paint <epoch>
<CPU>`` when the main window first paints, and ``ready <epoch> <CPU>`` once its
conversation is shown and takes typing: the window paints its menus, toolbar and
Conversations list first and reopens the conversations just after. Both are printed
("ready" only by builds that report it; the CPU is the app's own, the single file's
stub included). Runs use a real X server (Xvfb) when one can be
started, otherwise Qt's offscreen platform; the output says which. "Cold" here means a
new process each run; the OS page cache is dropped first when the machine allows it, and
the output says whether it did. The latest figures, and what moved them, are on
docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ONEFILE = REPO / "dist" / "desktop-agent"
ONEDIR_DIST = REPO / "build" / "bench-onedir" / "dist"
ONEDIR = ONEDIR_DIST / "desktop-agent" / "desktop-agent"
TARGET_SIZE_MB = 70.0
TARGET_PAINT_S = 1.0
TARGET_VISIBLE_S = 0.5  # something on screen after a double-click, even while unpacking
TARGET_RSS_MB = 120.0
TARGET_TABS_RSS_MB = 120.0
TARGET_SERVED_RSS_MB = 100.0  # issue 48: an idle window whose server search found a server
TARGET_SERVED_TABS_RSS_MB = 110.0
OPEN_TABS = 5
MB = 1_000_000


def build(onedir: bool) -> None:
    env = dict(os.environ, PYTHONNODEBUGRANGES="1")  # as .ci/build_binary.sh builds
    command = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN"]
    if onedir:
        env["DESKTOP_AGENT_ONEDIR"] = "1"
        command += ["--distpath", str(ONEDIR_DIST), "--workpath", str(ONEDIR_DIST.parent / "work")]
    print(f"building {'onedir' if onedir else 'single file'} ...", flush=True)
    started = time.monotonic()
    subprocess.run([*command, str(REPO / "build.spec")], cwd=REPO, env=env, check=True)
    print(f"  built in {time.monotonic() - started:.0f} s", flush=True)


def folder_size(path: Path) -> int:
    return sum(
        item.stat().st_size
        for item in path.rglob("*")
        if item.is_file() and not item.is_symlink()  # a symlinked library counts once
    )


def drop_page_cache() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


class Display:
    """An Xvfb server for the runs, or Qt's offscreen platform when there is none."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.env: dict[str, str] = {"QT_QPA_PLATFORM": "offscreen"}
        self.name = "offscreen (QT_QPA_PLATFORM=offscreen; no Xvfb)"

    def __enter__(self) -> Display:
        xvfb = shutil.which("Xvfb")
        if xvfb:
            number = 90 + os.getpid() % 100
            self.process = subprocess.Popen(
                [xvfb, f":{number}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            socket_path = Path(f"/tmp/.X11-unix/X{number}")
            deadline = time.monotonic() + 10
            while not socket_path.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            if socket_path.exists():
                self.env = {"DISPLAY": f":{number}", "QT_QPA_PLATFORM": "xcb"}
                self.name = f"Xvfb :{number} 1280x800x24 (xcb platform, no window manager)"
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)


def launch_env(display: Display, data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(display.env)
    env["DESKTOP_AGENT_DATA_DIR"] = str(data_dir)
    env.update(extra)
    return env


def time_to_first_paint(command: list[str], display: Display, data_dir: Path) -> float:
    return launch_to_paint(command, display, data_dir)[0]


class Launch:
    """What one launch reported: seconds from launch and the app's CPU seconds, to its
    first paint and to ready (None where the build does not report it)."""

    def __init__(self, stdout: str, launched: float) -> None:
        self.paint: float | None = None
        self.paint_cpu: float | None = None
        self.ready: float | None = None
        self.ready_cpu: float | None = None
        for line in stdout.splitlines():
            words = line.split()
            if words and words[0] in ("first-paint", "ready"):
                seconds = float(words[1]) - launched
                cpu = float(words[2]) if len(words) > 2 else None
                if words[0] == "first-paint":
                    self.paint, self.paint_cpu = seconds, cpu
                else:
                    self.ready, self.ready_cpu = seconds, cpu


def launch(command: list[str], env: dict[str, str]) -> tuple[Launch, str]:
    """Run the app until it exits after ready (or its first paint); its report and stderr."""
    launched = time.time()
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    report = Launch(result.stdout, launched)
    if report.paint is None:
        raise RuntimeError(f"no first paint reported by {command}: "
                           f"{result.stdout}{result.stderr}")
    return report, result.stderr


def launch_to_paint(command: list[str], display: Display,
                    data_dir: Path) -> tuple[float, float | None, Launch]:
    """Seconds to the window's first paint, to the unpacking window (first launch), and
    the whole report.

    The launcher reports ``first-launch-window <epoch>`` on stderr when the window it
    shows while a new build unpacks has painted (``DESKTOP_AGENT_REPORT_PAINT``); a
    launch that unpacks nothing, or runs without a display, reports none.
    """
    env = launch_env(display, data_dir, DESKTOP_AGENT_EXIT_AFTER_PAINT="1",
                     DESKTOP_AGENT_REPORT_PAINT="1")
    launched = time.time()
    report, stderr = launch(command, env)
    shown = None
    for line in stderr.splitlines():
        if line.startswith("first-launch-window "):
            shown = float(line.split()[1]) - launched
    assert report.paint is not None
    return report.paint, shown, report


def median_or_none(values: list[float | None]) -> float | None:
    """The median of the values given, or None when any launch reported none."""
    known = [value for value in values if value is not None]
    return statistics.median(known) if known and len(known) == len(values) else None


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def idle_rss(
    command: list[str], display: Display, data_dir: Path, settle: float, **extra_env: str
) -> dict[str, float]:
    """RSS of the app process (and of the single file's unpacking parent) once idle."""
    env = launch_env(display, data_dir, DESKTOP_AGENT_REPORT_PAINT="1", **extra_env)
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True)
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line or line.startswith("first-paint "):
                break
        time.sleep(settle)  # let the post-paint warm-up imports finish
        app_pids = children(process.pid) or [process.pid]
        figures = {"app_mb": sum(rss_kb(pid) for pid in app_pids) * 1024 / MB}
        if app_pids != [process.pid]:
            figures["launcher_mb"] = rss_kb(process.pid) * 1024 / MB
        return figures
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def seed_open_tabs(data_dir: Path, tabs: int = OPEN_TABS, messages: int = 40,
                   with_usage: bool = True) -> None:
    """A data folder whose window reopens ``tabs`` conversations with some history each.

    With ``with_usage`` the last replies carry the server's token counts, as the app
    records them; without, reopening estimates them (a quick guess: loading the
    tokenizer for it cost about 40 MB more).
    """
    os.environ["DESKTOP_AGENT_DATA_DIR"] = str(data_dir)
    from desktop_agent.store import Store

    store = Store.open()
    ids = []
    for n in range(tabs):
        record = store.create_conversation(title=f"Conversation {n + 1}")
        for i in range(messages // 2):
            store.add_message(record.id, {"role": "user", "content": f"Question {i}: how?"})
            reply = store.add_message(record.id, {"role": "assistant", "content":
                                      f"## Answer {i}\n\nSome **markdown** and `code`.\n\n"
                                      "```python\nprint('hello')\n```\n"})
        if with_usage:  # as the app records a reply when the server reports usage
            store.update_message_metadata(reply.id, {"usage": {"prompt_tokens": 900,
                                                               "completion_tokens": 40}})
        ids.append(record.id)
    store.set_setting("open_tabs", {"ids": ids, "current": ids[-1]})
    store.close()


def verdict(value: float, target: float) -> str:
    return f"{value / target:.2f}x target ({'OK' if value <= target else 'OVER'})"


def print_first_paint(commands: dict[str, list[str] | None], display: Display,
                      data_dir: Path, runs: int, dropped: bool, bundle_cache: Path) -> None:
    """Median time to first paint of each build, over ``runs`` launches.

    The single file's first launch of a build unpacks the app into ``bundle_cache``;
    it is timed once, from an empty cache, and printed apart from the later launches.
    """
    medians: dict[str, float] = {}
    for label, command in commands.items():
        if command is None:
            print(f"first paint, {label}: not built")
            continue
        if label == "single file":
            shutil.rmtree(bundle_cache, ignore_errors=True)
            if dropped:
                drop_page_cache()
            first, shown, _report = launch_to_paint(command, display, data_dir)
            print(f"first paint, {label}, first launch of this build (unpacks into the "
                  f"cache, once): {first:.2f} s", flush=True)
            if shown is None:
                print(f"first launch, {label}: no unpacking window (no display, or a "
                      f"build without Tk)  OVER (target: visible within "
                      f"{TARGET_VISIBLE_S} s)", flush=True)
            else:
                print(f"first launch, {label}: its unpacking window painted after "
                      f"{shown:.2f} s  {verdict(shown, TARGET_VISIBLE_S)} (target <= "
                      f"{TARGET_VISIBLE_S} s)", flush=True)
        times, readies = [], []
        for _ in range(runs):
            if dropped:
                drop_page_cache()
            painted, _shown, report = launch_to_paint(command, display, data_dir)
            times.append(painted)
            readies.append(report.ready)
        median = medians[label] = statistics.median(times)
        shown = ", ".join(f"{t:.2f}" for t in times)
        which = f"{label}, later launches" if label == "single file" else label
        line = f"first paint, {which}: median {median:.2f} s over {runs} runs ({shown})"
        if label == "single file":
            line += f"  {verdict(median, TARGET_PAINT_S)} (target <= {TARGET_PAINT_S} s)"
        ready = median_or_none(readies)
        line += f"; ready median {ready:.2f} s" if ready is not None else "; ready not reported"
        print(line, flush=True)
    if "single file" in medians and "onedir" in medians:  # what the launcher itself costs
        ratio = medians["single file"] / medians["onedir"]
        print(f"first paint, single file / onedir: {ratio:.2f}x "
              "(on a loaded machine the ratio says more than the seconds)", flush=True)


def print_rss_with_a_server(commands: dict[str, list[str] | None], display: Display,
                            data_dirs: dict[str, Path], settle: float) -> None:
    """Idle RSS of a window whose server search finds a model server, per data folder.

    The search learns that nothing listens on a local port from a refused connection
    (``core/servers/port_check.py``): the other figures are a window started with no
    server running. Here a scripted server answers (named in ``DESKTOP_AGENT_BASE_URL``),
    so the search lists its models (``core/servers/local_json.py``) and saves the one it
    picks into the conversations, as it does on the machine of anyone with LM Studio,
    Ollama or llama.cpp running.
    """
    from desktop_agent.testing import ScriptedServer

    with ScriptedServer() as server:
        server.models = ["bench-model"]
        for what, data_dir in data_dirs.items():
            target = TARGET_SERVED_RSS_MB if what == "window open" else \
                TARGET_SERVED_TABS_RSS_MB
            for label, command in commands.items():
                if command is None:
                    continue
                figures = idle_rss(command, display, data_dir, settle,
                                   DESKTOP_AGENT_BASE_URL=server.base_url)
                print(f"idle RSS, {label}, {what}, a model server answering the search: "
                      f"{figures['app_mb']:.1f} MB  {verdict(figures['app_mb'], target)} "
                      f"(target <= {target:.0f} MB)", flush=True)


def print_versus(binary: Path, other: Path, runs: int) -> None:
    """First paint of two single files, launch by launch in turn: wall time and CPU.

    On a machine other work shares, the seconds of one run drift with its load; taking
    turns exposes both builds to the same drift, and the CPU to the first paint moves
    much less than the wall time. The CPU is the one the app reports at its paint; a
    build that reports none exits at its paint, and the launched process tree's CPU
    (``RUSAGE_CHILDREN``) is taken instead. "Ready" (the conversation shown) is printed
    for the builds that report it.
    """
    import resource

    builds = {"this build": binary, "the other": other}
    walls: dict[str, list[float]] = {label: [] for label in builds}
    cpus: dict[str, list[float]] = {label: [] for label in builds}
    readies: dict[str, list[float | None]] = {label: [] for label in builds}
    ready_cpus: dict[str, list[float | None]] = {label: [] for label in builds}
    faults: dict[str, list[int]] = {label: [] for label in builds}
    reads: dict[str, list[int]] = {label: [] for label in builds}
    with Display() as display, tempfile.TemporaryDirectory() as scratch:
        data_dir = Path(scratch) / "data"
        data_dir.mkdir()
        caches = {label: Path(scratch) / f"bundles-{n}" for n, label in enumerate(builds)}
        for label, path in builds.items():  # each unpacks once into its own cache
            os.environ["DESKTOP_AGENT_BUNDLE_CACHE"] = str(caches[label])
            time_to_first_paint([str(path)], display, data_dir)
        dropped = drop_page_cache()
        print(f"first paint, alternating {binary} and {other}, {runs} launches each, page cache "
              f"{'dropped before each' if dropped else 'warm (could not be dropped)'}:")
        for _ in range(runs):
            for label, path in builds.items():
                os.environ["DESKTOP_AGENT_BUNDLE_CACHE"] = str(caches[label])
                drop_page_cache()
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                painted, _shown, report = launch_to_paint([str(path)], display, data_dir)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                walls[label].append(painted)
                cpus[label].append(report.paint_cpu if report.paint_cpu is not None else
                                   after.ru_utime - before.ru_utime
                                   + after.ru_stime - before.ru_stime)
                readies[label].append(report.ready)
                ready_cpus[label].append(report.ready_cpu)
                faults[label].append(after.ru_majflt - before.ru_majflt)
                reads[label].append((after.ru_inblock - before.ru_inblock) * 512)
    for label, path in builds.items():
        wall = statistics.median(walls[label])
        ready, ready_cpu = median_or_none(readies[label]), median_or_none(ready_cpus[label])
        then = (f"; ready median {ready:.2f} s, CPU to ready {ready_cpu:.2f} s"
                if ready is not None and ready_cpu is not None else "; ready not reported")
        print(f"  {label} ({path}): first paint median {wall:.2f} s  "
              f"{verdict(wall, TARGET_PAINT_S)} (target <= {TARGET_PAINT_S:.1f} s); CPU to "
              f"first paint median {statistics.median(cpus[label]):.2f} s{then}")
        print(f"    to its exit after ready: {statistics.median(faults[label]):.0f} major "
              f"faults, {statistics.median(reads[label]) / MB:.1f} MB read from disk (median)")
    ratio = statistics.median(cpus["this build"]) / statistics.median(cpus["the other"])
    print(f"  CPU to first paint, this build / the other: {ratio:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--settle", type=float, default=5.0, help="idle seconds before RSS")
    parser.add_argument("--no-build", action="store_true", help="measure only what exists")
    parser.add_argument("--rss-only", action="store_true",
                        help="only the idle RSS figures (no first-paint runs, no build)")
    parser.add_argument("--versus", type=Path, metavar="BINARY",
                        help="only first paint: the single file and another build of it "
                             "(e.g. an earlier commit's), launch by launch in turn")
    args = parser.parse_args()

    if args.versus is not None:
        if not ONEFILE.is_file():
            build(onedir=False)
        print_versus(ONEFILE, args.versus, args.runs)
        return 0
    if not args.no_build and not args.rss_only:
        if not ONEFILE.is_file():
            build(onedir=False)
        if not ONEDIR.is_file():
            build(onedir=True)

    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    if ONEFILE.is_file():
        size = ONEFILE.stat().st_size / MB
        print(f"single file  {ONEFILE.relative_to(REPO)}: {size:.1f} MB  "
              f"{verdict(size, TARGET_SIZE_MB)} (target <= {TARGET_SIZE_MB:.0f} MB)")
    if ONEDIR.is_file():
        print(f"onedir       {ONEDIR.parent.relative_to(REPO)}/: "
              f"{folder_size(ONEDIR.parent) / MB:.1f} MB unpacked")

    commands = {
        "single file": [str(ONEFILE)] if ONEFILE.is_file() else None,
        "onedir": [str(ONEDIR)] if ONEDIR.is_file() else None,
        "source (python -m desktop_agent)": [sys.executable, "-m", "desktop_agent"],
    }
    with Display() as display, tempfile.TemporaryDirectory() as scratch:
        print(f"display: {display.name}")
        bundle_cache = Path(scratch) / "bundles"  # the single file's unpacked app
        os.environ["DESKTOP_AGENT_BUNDLE_CACHE"] = str(bundle_cache)
        dropped = drop_page_cache()
        cache = "dropped before each run" if dropped else "could not be dropped; runs start warm"
        print(f"page cache: {cache}")
        data_dir = Path(scratch)
        # One unmeasured launch creates the data folder and database, as a first start does.
        time_to_first_paint(commands["source (python -m desktop_agent)"], display, data_dir)
        if not args.rss_only:
            print_first_paint(commands, display, data_dir, args.runs, dropped, bundle_cache)
        for label in ("single file", "onedir", "source (python -m desktop_agent)"):
            command = commands[label]
            if command is None:
                continue
            figures = idle_rss(command, display, data_dir, args.settle)
            extra = (f"; its unpacking launcher process adds {figures['launcher_mb']:.1f} MB"
                     if "launcher_mb" in figures else "")
            print(f"idle RSS, {label}, window open {args.settle:.0f} s after first paint: "
                  f"{figures['app_mb']:.1f} MB  {verdict(figures['app_mb'], TARGET_RSS_MB)} "
                  f"(target <= {TARGET_RSS_MB:.0f} MB){extra}", flush=True)
        tabs_dirs = {}
        for usage in (True, False):
            tabs_dir = tabs_dirs[usage] = Path(scratch) / f"five-tabs-{usage}"
            tabs_dir.mkdir()
            seed_open_tabs(tabs_dir, with_usage=usage)
        # apart: a found server is written into the current conversation's settings
        served_tabs_dir = Path(scratch) / "five-tabs-served"
        served_tabs_dir.mkdir()
        seed_open_tabs(served_tabs_dir)
        print_rss_with_a_server(commands, display, {
            "window open": data_dir, f"{OPEN_TABS} tabs open": served_tabs_dir}, args.settle)
        for usage, tabs_dir in tabs_dirs.items():
            counted = "server counts stored" if usage else "no server counts: estimated"
            for label, command in commands.items():
                if command is None:
                    continue
                figures = idle_rss(command, display, tabs_dir, args.settle)
                print(f"idle RSS, {label}, {OPEN_TABS} tabs open ({counted}): "
                      f"{figures['app_mb']:.1f} MB  "
                      f"{verdict(figures['app_mb'], TARGET_TABS_RSS_MB)} "
                      f"(target <= {TARGET_TABS_RSS_MB:.0f} MB)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
