"""What a command preview costs: the overlay run, reading its upper layer, Apply, Discard.

    python3 bench/overlay.py              # 50 runs of `true`, 1,000 changed files x 5
    python3 bench/overlay.py --runs 100 --files 1000 --rounds 9
    python3 bench/overlay.py --folder /dev/shm   # the folder and the layers on a tmpfs

Prints, with ``uptime`` first (the figures mean little on a loaded machine):

* **preview cost**: ``true`` as a preview (make the layers, unshare + mount +
  bubblewrap, read the empty upper layer, remove the layers) against ``true``
  through today's sandbox (``run_command``), alternating, median and p90 of
  ``--runs`` each, and the CPU both take (this process and its children);
* **list + diff**: reading an upper layer in which a command changed
  ``--files`` files (half modified, half created) into a change set, its
  diffs and its folded tree (the card's work), median of ``--rounds``;
* **apply**: moving those changes into the folder through the folder writer
  (conflict check included), each round on a fresh preview;
* **discard**: removing such an upper layer.

Where the working folder and the layers live (``--folder``, default the
system's temporary folder) matters: a disk mounted with ``discard`` pays for
every block freed when a file is replaced or a layer removed; a tmpfs shows
the app's own cost.

Targets (issue 46): a preview ≤ 15 ms more than the sandbox; list + diff
≤ 200 ms, apply ≤ 300 ms, discard ≤ 50 ms for 1,000 files.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop_agent.core.tooling.builtin.command_preview import CommandPreview, preview_command
from desktop_agent.core.tooling.builtin.overlay_changes import read_changes
from desktop_agent.core.tooling.builtin.overlay_mount import overlay_problem
from desktop_agent.core.tooling.builtin.shell_tool import open_pinned, run_command
from desktop_agent.core.tooling.builtin.workdir import Workdir
from desktop_agent.workspace.preview_apply import apply_preview
from desktop_agent.workspace.preview_views import change_tree, file_diffs


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its reaped children."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _figures(name: str, values: list[float], cpu: float | None = None) -> float:
    values = sorted(values)
    median = statistics.median(values)
    p90 = values[int(0.9 * (len(values) - 1))]
    extra = f"   CPU {cpu * 1000 / len(values):6.2f} ms/run" if cpu is not None else ""
    print(f"  {name:34} median {median * 1000:8.2f} ms   p90 {p90 * 1000:8.2f} ms"
          f"   ({len(values)} runs){extra}")
    return median


async def _true_costs(workdir: Workdir, previews: Path, runs: int) -> None:
    async def sandboxed() -> None:
        result = await run_command("true", workdir)
        assert result.exit_code == 0, result.to_text()

    async def previewed() -> None:
        preview = await preview_command("true", workdir, previews)
        assert preview.result.exit_code == 0 and preview.changes.empty, preview.result.to_text()
        await asyncio.to_thread(preview.discard)

    kinds: dict[str, Callable[[], Any]] = {"sandbox (today)": sandboxed, "preview": previewed}
    for run in kinds.values():  # warm up: probes, page cache
        await run()
    times: dict[str, list[float]] = {name: [] for name in kinds}
    cpu: dict[str, float] = dict.fromkeys(kinds, 0.0)
    for _ in range(runs):
        for name, run in kinds.items():
            cpu_before, started = _cpu(), time.perf_counter()
            await run()
            times[name].append(time.perf_counter() - started)
            cpu[name] += _cpu() - cpu_before
    print(f"`true`, {runs} runs each, alternating:")
    medians = {name: _figures(name, values, cpu[name]) for name, values in times.items()}
    extra = (medians["preview"] - medians["sandbox (today)"]) * 1000
    print(f"  preview cost per command: {extra:+.2f} ms (median difference; target <= 15 ms)")


CHANGE_FILES = """python3 - <<'EOF'
import os
n = {files}
for i in range(n // 2):
    with open(f"src/m{{i % 10}}/f{{i}}.py", "a") as f:
        f.write("# changed by the command\\n")
for i in range(n - n // 2):
    os.makedirs(f"new/p{{i % 20}}", exist_ok=True)
    with open(f"new/p{{i % 20}}/n{{i}}.py", "w") as f:
        f.write("print('new %d')\\n" % i)
EOF"""


def _project(folder: Path, files: int) -> None:
    for i in range(files // 2):
        path = folder / "src" / f"m{i % 10}" / f"f{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"line {n} of file {i}\n" for n in range(40)))


async def _changed(workdir: Workdir, previews: Path, files: int) -> CommandPreview:
    preview = await preview_command(CHANGE_FILES.format(files=files), workdir, previews,
                                    time_limit=600)
    if preview.result.exit_code != 0:
        raise SystemExit(f"the command failed: {preview.result.to_text()}")
    counts = preview.changes.counts()
    assert counts.modified + counts.created == files, counts
    return preview


def _list_and_diff(preview: CommandPreview, workdir: Workdir) -> int:
    fd = open_pinned(workdir)
    try:
        changes = read_changes(str(preview.layers.upper), fd)
    finally:
        os.close(fd)
    diffs = file_diffs(str(workdir.root), str(preview.layers.upper), changes,
                       max_files=len(changes.changes))
    change_tree(changes)
    return len(diffs)


async def _thousand(root: Path, previews: Path, files: int, rounds: int) -> None:
    template = root / "template"
    template.mkdir()
    _project(template, files)
    work = root / "work"
    shutil.copytree(template, work)
    workdir = Workdir(work)
    preview = await _changed(workdir, previews, files)
    times: list[float] = []
    cpu = 0.0
    for _ in range(rounds):
        cpu_before, started = _cpu(), time.perf_counter()
        shown = _list_and_diff(preview, workdir)
        times.append(time.perf_counter() - started)
        cpu += _cpu() - cpu_before
    print(f"{files:,} changed files ({files // 2:,} modified, {files - files // 2:,} created), "
          f"{rounds} rounds:")
    _figures(f"list + diff ({shown:,} diffs) + tree", times, cpu)
    preview.discard()

    apply_times: list[float] = []
    discard_times: list[float] = []
    apply_cpu = discard_cpu = 0.0
    for _ in range(rounds):
        shutil.rmtree(work)
        shutil.copytree(template, work)
        workdir = Workdir(work)
        preview = await _changed(workdir, previews, files)
        cpu_before, started = _cpu(), time.perf_counter()
        applied = apply_preview(preview)
        apply_times.append(time.perf_counter() - started)
        apply_cpu += _cpu() - cpu_before
        assert len(applied.applied) >= files, len(applied.applied)
        cpu_before, started = _cpu(), time.perf_counter()
        preview.discard()
        discard_times.append(time.perf_counter() - started)
        discard_cpu += _cpu() - cpu_before
    _figures("apply (conflict check + writes)", apply_times, apply_cpu)
    _figures("discard (remove the upper layer)", discard_times, discard_cpu)
    print("  targets: list + diff <= 200 ms, apply <= 300 ms, discard <= 50 ms")


async def _measure(runs: int, files: int, rounds: int, parent: str | None) -> None:
    print("uptime:", _output("uptime"))
    print(f"running as {'root' if os.geteuid() == 0 else 'uid ' + str(os.geteuid())}, "
          f"kernel {os.uname().release}")
    with tempfile.TemporaryDirectory(dir=parent) as folder:
        root = Path(folder)
        print(f"folder and layers in {folder} ({_output('stat', '-f', '-c', '%T', folder)})")
        previews = root / "previews"
        problem = overlay_problem(previews)
        if problem is not None:
            raise SystemExit(f"previews cannot work here: {problem}")
        work = root / "true-work"
        work.mkdir()
        await _true_costs(Workdir(work), previews, runs)
        await _thousand(root, previews, files, rounds)
    print("uptime:", _output("uptime"))


def _output(*argv: str) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, check=False).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--folder", default=None,
                        help="where the working folder and the layers are made")
    args = parser.parse_args()
    asyncio.run(_measure(args.runs, args.files, args.rounds, args.folder))


if __name__ == "__main__":
    main()
