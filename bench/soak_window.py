"""The window over hundreds of turns: resident memory and live objects, and their slope.

    python bench/soak_window.py [--turns 1000] [--minutes M] [--tabs 3] [--every 50]
                                [--new-conversation-every TURNS] [--breakdown]

The real main window (offscreen), started as the app starts it (its import and
garbage-collection measures), a running asyncio loop, ``--tabs`` conversations
each pointed at the project's ScriptedServer (run in its own process, so its record
of requests is not counted here). Turns go round the tabs; each one is typed into
the tab's composer and sent with a real Enter press. A reply is ~1,500 streamed
tokens of markdown with a code block; every third turn the model first calls
``write_file`` and the sandboxed ``bash`` printing 2,000 lines, then answers.
Compaction is on (``drop_oldest`` at an 8,192-token context, so requests are
compacted every few turns without summary requests of their own).

Every ``--every`` turns it prints the process's RSS and the live Python objects
(after a collection); with ``--tracemalloc``, the source lines whose allocations
grew most between the first and the last sample. At the end: RSS after the
warm-up (the first sample), the largest, and the slope over the second half of
the samples (least squares, MB per 1,000 turns). Targets (issue 48): RSS after
warm-up <= 200 MB, slope <= 5 MB per 1,000 turns. The exit status is 0 when both
are met, 1 when one is over. ``--minutes`` stops at the first sample after that
long. ``--breakdown`` adds where the memory is with each sample: libraries and
anonymous memory, the C heap (glibc's mallinfo2), Python's small-object arenas,
live widgets, and per tab its items, rendered items and text documents.
``--new-conversation-every N`` closes each tab every N turns and opens a new
conversation in its place: what grows with a conversation's length, against
what grows with the number of turns.
The latest figures are on docs/performance.md, with the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import ctypes.util
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

RSS_TARGET_MB = 200.0
SLOPE_TARGET_MB = 5.0
CONTEXT_TOKENS = 8192

_MODEL_SERVER = r'''
import sys
from desktop_agent.testing import ScriptedServer, script

SECTION = """## Step {n}: reading the rows

Read the file **one row at a time**, so memory stays flat, and keep `totals` per
column. A bad row is reported with its line number and skipped; the rest go on.

```python
import csv

def totals_{n}(path):
    sums = {{}}
    with open(path, newline="") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            for column, value in row.items():
                try:
                    sums[column] = sums.get(column, 0.0) + float(value)
                except ValueError:
                    print(f"line {{line}}: {{column}} is not a number")
    return sums
```

| column | meaning |
|--------|---------|
| amount | what was paid |
| tax    | its share of tax |

"""


def reply(turn):
    text = ""
    section = 0
    while len(script.split_text(text)) < 1500:
        text += SECTION.format(n=f"{turn}_{section}")
        section += 1
    return text


def respond(body):
    messages = body["messages"]
    last = messages[-1]
    turn = sum(1 for m in messages if m["role"] == "user")
    if last["role"] == "user" and "with tools" in str(last["content"]):
        return script.tool_calls([
            ("write_file", {"path": f"notes/turn_{turn}.md", "content": reply(turn)[:2000]}),
            ("bash", {"command": "seq -f 'line %g of the build log' 2000"}),
        ])
    return script.text(reply(turn))


with ScriptedServer() as server:
    server.responder = respond
    print(server.base_url, flush=True)
    sys.stdin.read()
'''


def rss_mb() -> float:
    """Resident memory of this process (Linux /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def slope_per_1000(samples: list[tuple[int, float]]) -> float:
    """Least-squares slope of (turn, MB) samples, in MB per 1,000 turns."""
    if len(samples) < 2:
        return 0.0
    xs = [float(t) for t, _ in samples]
    ys = [mb for _, mb in samples]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if not spread:
        return 0.0
    return 1000 * sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def start_model_server() -> tuple[subprocess.Popen[str], str]:
    """The scripted model server in a child process; returns it and its base URL."""
    process = subprocess.Popen([sys.executable, "-c", _MODEL_SERVER],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


async def drive(window: object, url: str, args: argparse.Namespace,
                work_root: Path) -> list[tuple[int, float, int]]:
    """Run the turns; return (turn, RSS MB, live objects) every ``args.every`` turns."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    def open_conversation(name: str) -> Any:
        controller = window.new_conversation()  # type: ignore[attr-defined]
        window.servers.use_server(controller, url, "soak-model", None,  # type: ignore[attr-defined]
                                  CONTEXT_TOKENS)
        folder = work_root / name
        folder.mkdir(parents=True)
        controller.update_settings(tools=["write_file", "bash"], workdir=str(folder),
                                   confirm_tools=False, compaction="drop_oldest")
        return controller

    controllers = [open_conversation(f"tab{index}") for index in range(args.tabs)]
    conversation_ids = [c.conversation_id for c in controllers]
    samples: list[tuple[int, float, int]] = []
    kinds: list[Counter[str]] = []
    snapshots: list[tracemalloc.Snapshot] = []
    if args.tracemalloc:
        tracemalloc.start()
    started = time.monotonic()
    for turn in range(1, args.turns + 1):
        if args.new_conversation_every and turn > 1 and turn % args.new_conversation_every == 1:
            for index, old in enumerate(controllers):  # close each tab, open a new one
                closing = window.close_tab(  # type: ignore[attr-defined]
                    window.tabs.indexOf(window.tab_for(old.conversation_id)))  # type: ignore[attr-defined]
                if closing is not None:
                    await closing
                controllers[index] = open_conversation(f"tab{index}-{turn}")
                conversation_ids.append(controllers[index].conversation_id)
        controller = controllers[turn % args.tabs]
        tab = window.tab_for(controller.conversation_id)  # type: ignore[attr-defined]
        window.tabs.setCurrentWidget(tab)  # type: ignore[attr-defined]
        text = f"Turn {turn}: explain the next step" + (" with tools" if turn % 3 == 0 else "")
        ended = asyncio.Event()

        def on_busy(busy: bool, ended: asyncio.Event = ended) -> None:
            if not busy:
                ended.set()

        controller.busy_changed.connect(on_busy)
        tab.composer.setFocus()
        QTest.keyClicks(tab.composer, text)
        QTest.keyClick(tab.composer, Qt.Key.Key_Return)
        await ended.wait()
        controller.busy_changed.disconnect(on_busy)
        if turn % args.every == 0:
            await asyncio.sleep(0.2)  # let the last frames and deferred work run
            gc.collect()
            live = gc.get_objects()
            sample = (turn, rss_mb(), len(live))
            if args.breakdown:
                kinds.append(Counter(type(o).__qualname__ for o in live))
            del live
            samples.append(sample)
            if args.tracemalloc:
                del snapshots[1:]  # the first and the latest: each holds every trace
                snapshots.append(tracemalloc.take_snapshot())
            print(f"turn {turn:5d}: RSS {sample[1]:7.1f} MB, live objects {sample[2]:,} "
                  f"({time.monotonic() - started:.0f} s)", flush=True)
            if args.breakdown:
                print(breakdown(window), flush=True)
            if args.minutes and time.monotonic() - started > args.minutes * 60:
                break
    print_findings(samples, kinds, snapshots, trim=args.breakdown)
    print(workload_ran(window.store, conversation_ids))  # type: ignore[attr-defined]
    return samples


def print_findings(samples: list[tuple[int, float, int]], kinds: list[Counter[str]],
                   snapshots: list[tracemalloc.Snapshot], *, trim: bool) -> None:
    """What the run found besides the samples: what a trim gives back, what grew."""
    if trim:
        before = rss_mb()
        ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim(0)
        print(f"malloc_trim(0) at the end: RSS {before:.1f} -> {rss_mb():.1f} MB "
              "(the rest is in use, or fragments the allocator cannot give back)")
        from PySide6.QtGui import QPixmapCache

        before = rss_mb()
        QPixmapCache.clear()  # the style's cached pixmaps (up to its limit, 10 MB)
        ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim(0)
        print(f"QPixmapCache.clear() then malloc_trim(0): RSS {before:.1f} -> {rss_mb():.1f} MB")
    if len(kinds) >= 2:
        grown = (kinds[-1] - kinds[0]).most_common(8)
        print(f"live objects grown since turn {samples[0][0]}, by type: "
              + ", ".join(f"{name} +{count:,}" for name, count in grown))
    if snapshots:
        print(f"tracemalloc: what Python allocated since the first turn and still holds at "
              f"turn {samples[0][0]}, by file")
        for stat in snapshots[0].statistics("filename")[:12]:
            print(f"  {stat.size / 2**20:8.2f} MB {stat.count:10,} blocks  "
                  f"{stat.traceback[0].filename}")
    if len(snapshots) >= 2:
        print_growth(snapshots[0], snapshots[-1], samples[-1][0] - samples[0][0])


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]


def malloc_figures() -> tuple[float, float, float] | None:
    """glibc's (in use, mapped blocks, free but kept) in MB, all arenas; None elsewhere."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        libc.mallinfo2.restype = _MallInfo2
    except (OSError, AttributeError, TypeError):
        return None
    info = libc.mallinfo2()
    return info.uordblks / 2**20, info.hblkhd / 2**20, info.fordblks / 2**20


def arena_figures() -> list[tuple[float, float]] | None:
    """Each glibc arena's (MB taken from the system, MB of it free), the main one first."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        libc.fopen.restype = ctypes.c_void_p
        libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        libc.fclose.argtypes = [ctypes.c_void_p]
        libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    except (OSError, AttributeError):
        return None
    with tempfile.NamedTemporaryFile(suffix=".xml") as out:
        stream = libc.fopen(out.name.encode(), b"w")
        if not stream:
            return None
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        root = ElementTree.parse(out.name).getroot()
    arenas = []
    for heap in root.findall("heap"):
        taken = sum(int(s.get("size", 0)) for s in heap.findall("system")
                    if s.get("type") == "current")
        free = sum(int(t.get("size", 0)) for t in heap.findall("total")
                   if t.get("type") in ("fast", "rest"))
        arenas.append((taken / 2**20, free / 2**20))
    return arenas


def sqlite_memory_mb() -> float | None:
    """What SQLite holds (its page caches, statements, schema), in MB; None without the library."""
    try:
        library = ctypes.CDLL(ctypes.util.find_library("sqlite3") or "libsqlite3.so.0")
        library.sqlite3_memory_used.restype = ctypes.c_int64
    except (OSError, AttributeError):
        return None
    return int(library.sqlite3_memory_used()) / 2**20


def pymalloc_figures() -> tuple[float, float]:
    """Python's small-object allocator: (MB in its arenas, MB in live blocks)."""
    with tempfile.TemporaryFile("w+") as out:
        saved = os.dup(2)
        sys.stderr.flush()
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        figures = {}
        for line in out:
            name, _, value = line.partition("=")
            figures.setdefault(name.strip(), value.strip().replace(",", ""))
    arenas = int(figures.get("# arenas allocated current", 0)) * 2**20
    return arenas / 2**20, int(figures.get("# bytes in allocated blocks", 0)) / 2**20


def breakdown(window: object) -> str:
    """Where the RSS is: Python's traced heap, the C heap, Qt's widgets and documents."""
    from PySide6.QtWidgets import QApplication, QPlainTextEdit, QTextEdit

    status = dict(line.split(":", 1) for line in
                  Path("/proc/self/status").read_text().splitlines() if ":" in line)
    anon, files = (int(status.get(k, "0 kB").split()[0]) / 1024 for k in ("RssAnon", "RssFile"))
    traced = (f"python traced {tracemalloc.get_traced_memory()[0] / 2**20:.1f} MB "
              f"(+{tracemalloc.get_tracemalloc_memory() / 2**20:.1f} MB tracing); "
              if tracemalloc.is_tracing() else "")
    heap = malloc_figures()
    heap_text = (f"malloc in use {heap[0]:.1f} + mmapped {heap[1]:.1f} MB, free kept "
                 f"{heap[2]:.1f} MB" if heap else "malloc figures: not glibc")
    arenas = arena_figures()
    if arenas:  # each thread that allocates can get an arena of its own, with its own free memory
        heap_text += (f" in {len(arenas)} arenas (taken/free MB: "
                      f"{' '.join(f'{t:.1f}/{f:.1f}' for t, f in arenas if t >= 0.5)})")
    if not tracemalloc.is_tracing():  # tracing hooks the allocator: pymalloc tells nothing
        arenas, blocks = pymalloc_figures()
        heap_text += f"; pymalloc arenas {arenas:.1f} MB ({blocks:.1f} MB in live blocks)"
    held_by_sqlite = sqlite_memory_mb()
    if held_by_sqlite is not None:  # part of the C heap in use
        heap_text += f"; SQLite {held_by_sqlite:.1f} MB"
    tabs = window.tabs  # type: ignore[attr-defined]
    views = []
    for index in range(tabs.count()):
        view = getattr(tabs.widget(index), "transcript", None)
        if view is not None:
            # One document per text view. Asked for the documents themselves, PySide
            # makes wrappers owned by each view's text control, which Python never
            # sees deleted: they outlived their widgets, ~200 a sample.
            documents = (len(view.findChildren(QTextEdit))
                         + len(view.findChildren(QPlainTextEdit)))
            views.append(f"{len(view.item_keys())}/{view.rendered_item_count()}/{documents}")
    return (f"    RSS anonymous {anon:.1f} MB, files (libraries) {files:.1f} MB; "
            f"{traced}{heap_text}; widgets "
            f"{len(QApplication.allWidgets()):,}; per tab items/rendered/documents "
            f"{' '.join(views)}")


def print_growth(first: tracemalloc.Snapshot, last: tracemalloc.Snapshot, turns: int) -> None:
    """The source lines whose live allocations grew most between two samples."""
    print(f"tracemalloc: growth by line over the last {turns} turns (per 1,000 turns)")
    for stat in last.compare_to(first, "lineno")[:30]:
        frame = stat.traceback[0]
        print(f"  {stat.size_diff * 1000 / turns / 2**20:+8.2f} MB "
              f"{stat.count_diff * 1000 / turns:+10,.0f} objects  {frame.filename}:{frame.lineno}")


def workload_ran(store: object, conversation_ids: list[str]) -> str:
    """What the store holds: proof that the turns streamed, wrote files and ran bash."""
    roles: dict[str, int] = {}
    answer_chars = bash_outputs = 0
    for conversation_id in conversation_ids:
        for record in store.all_messages(conversation_id):  # type: ignore[attr-defined]
            roles[record.role] = roles.get(record.role, 0) + 1
            content = str(record.message.get("content") or "")
            if record.role == "assistant":
                answer_chars = max(answer_chars, len(content))
            if record.role == "tool" and "line 1 of the build log" in content:
                bash_outputs += 1
    counts = ", ".join(f"{n} {role}" for role, n in sorted(roles.items()))
    return (f"stored: {counts} messages; longest answer {answer_chars:,} characters; "
            f"{bash_outputs} results of the 2,000-line bash")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--minutes", type=float, default=0.0,
                        help="stop at the first sample after this long (0: run every turn)")
    parser.add_argument("--tabs", type=int, default=3)
    parser.add_argument("--every", type=int, default=50, help="turns between samples")
    parser.add_argument("--new-conversation-every", type=int, default=0, metavar="TURNS",
                        help="close each tab and open a new conversation every TURNS turns "
                             "(0: the conversations grow for the whole run)")
    parser.add_argument("--tracemalloc", action="store_true",
                        help="trace allocations (slower) and print the lines that grew most")
    parser.add_argument("--breakdown", action="store_true",
                        help="with each sample, where the memory is: Python's traced heap "
                             "(tracemalloc), the C heap (mallinfo2), widgets and documents")
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="soak-window-"))
    os.environ["DESKTOP_AGENT_DATA_DIR"] = str(data)
    folders = Path(tempfile.mkdtemp(prefix="soak-window-folders-"))  # outside the data folder
    os.environ["DESKTOP_AGENT_WORK_ROOT"] = str(folders)
    model, url = start_model_server()

    # Started as ``gui/app.py``'s run_app starts the window: what it does to imports
    # (a bounded linecache, the openai SDK without its type packages) and to the
    # collector (paused to the first paint, then the survivors frozen; full
    # collections when idle; the warm-up's modules frozen) decides the RSS measured.
    from desktop_agent.gui import app as gui_app

    gui_app.prepare_imports()
    gui_app.pause_collector_until_first_paint()
    gui_app.skip_httpx_command_line()
    from PySide6.QtCore import QSettings, QTimer

    from desktop_agent.gui.event_loop import GuiEventLoop
    from desktop_agent.gui.idle_collector import IdleCollector
    from desktop_agent.gui.window.main_window import MainWindow
    from desktop_agent.store import Store

    app = gui_app.create_application([sys.argv[0]])
    loop = GuiEventLoop(app)
    asyncio.set_event_loop(loop)
    store = Store.open()
    window = MainWindow(store, discover_on_start=False, window_settings=QSettings(
        str(data / "window.ini"), QSettings.Format.IniFormat))
    collector = IdleCollector(app)
    window.first_painted.connect(lambda: gui_app.warm_up_on_first_input(
        app, lambda: gui_app.start_warm_up(loop, collector)))
    window.first_painted.connect(gui_app.freeze_startup_objects)
    QTimer.singleShot(gui_app.STARTUP_GC_FALLBACK_MS, gc.enable)
    window.show()
    try:
        with loop:
            samples = loop.run_until_complete(drive(window, url, args, folders))
            window.close()
            loop.run_until_complete(window.shutdown())
    finally:
        store.close()
        data_mb = sum(f.stat().st_size for f in data.rglob("*") if f.is_file()) / 2**20
        data_mb += sum(f.stat().st_size for f in folders.rglob("*") if f.is_file()) / 2**20
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(folders, ignore_errors=True)
        assert model.stdin is not None
        model.stdin.close()
        model.wait(10)
    if not samples:
        print("no sample taken: run more turns than --every")
        return 1
    warm = samples[0][1]
    second_half = samples[len(samples) // 2:]
    slope = slope_per_1000([(t, mb) for t, mb, _ in second_half])
    objects = slope_per_1000([(t, float(n)) for t, _, n in second_half])
    turns = samples[-1][0]
    rss_ok, slope_ok = warm <= RSS_TARGET_MB, slope <= SLOPE_TARGET_MB
    print(f"{turns} turns over {args.tabs} tabs: RSS after warm-up {warm:.1f} MB "
          f"(target <= {RSS_TARGET_MB:.0f}: {'OK' if rss_ok else 'OVER'}), "
          f"largest {max(mb for _, mb, _ in samples):.1f} MB")
    print(f"slope over the second half ({second_half[0][0]}-{turns}): {slope:+.1f} MB per "
          f"1,000 turns (target <= {SLOPE_TARGET_MB:.0f}: {'OK' if slope_ok else 'OVER'}); "
          f"live objects {objects:+,.0f} per 1,000 turns")
    print(f"data and working folders: {data_mb:.1f} MB after {turns} turns "
          f"({data_mb * 1000 / turns:.0f} MB per 1,000 turns)")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on "
          f"{os.cpu_count()} CPUs")
    return 0 if rss_ok and slope_ok else 1


if __name__ == "__main__":
    sys.exit(main())
