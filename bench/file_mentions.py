"""``@`` completion in a large working folder: listing it, then matching each keystroke.

Builds a folder of ``--files`` files (100 per sub-folder, two levels deep,
plus a ``node_modules`` the listing skips) and times the two halves of ``@``
completion in the composer:

- listing the folder (:meth:`FolderIndex.scan`): runs in a worker thread,
  once, and again in the background when the kept list is older than 10 s,
  so it never stalls the window; printed for scale;
- matching the kept list for a typed query (:meth:`FolderIndex.matches`): runs on
  the GUI thread at each keystroke, so its target is one frame (<= 16 ms).

Each figure is the median of ``--runs`` runs, printed with its target and
the ratio to it (below 1.0 meets it).

    python bench/file_mentions.py [--files 10000] [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from desktop_agent.workspace.file_index import FolderIndex

KEYSTROKE_TARGET_MS = 16.0
QUERIES = ("t", "tok", "tokrul", "pkg42/tok", "mod/file_0", "zzz")


def build(root: Path, files: int) -> Path:
    """``files`` small files, 100 per folder, and one to find."""
    folder = root / "work"
    for n in range(files):
        sub = folder / f"pkg{n // 100:03d}" / "mod"
        if n % 100 == 0:
            sub.mkdir(parents=True)
        (sub / f"file_{n % 100:03d}.py").write_text("x = 1\n", encoding="utf-8")
    (folder / "pkg042" / "mod" / "tokenizer_rules.py").write_text("", encoding="utf-8")
    skipped = folder / "node_modules" / "dep"
    skipped.mkdir(parents=True)
    for n in range(1000):
        (skipped / f"f{n}.js").write_text("", encoding="utf-8")
    return folder


def median_ms(runs: int, action: object) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = build(Path(tmp), args.files)
        index = FolderIndex.scan(folder)
        print(f"folder: {len(index.paths):,} files listed (node_modules skipped)")
        scan = median_ms(args.runs, lambda: FolderIndex.scan(folder))
        print(f"listing the folder (worker thread): {scan:7.1f} ms")
        worst = 0.0
        for query in QUERIES:
            took = median_ms(args.runs, lambda q=query: index.matches(q))
            worst = max(worst, took)
            best = (index.matches(query, 1) or ["(none)"])[0]
            print(f"match @{query:<12} {took:6.2f} ms  target {KEYSTROKE_TARGET_MS:g} ms  "
                  f"ratio {took / KEYSTROKE_TARGET_MS:.2f}  first: {best}")
        print(f"slowest keystroke: {worst:.2f} ms, ratio {worst / KEYSTROKE_TARGET_MS:.2f} "
              "to one frame")


if __name__ == "__main__":
    main()
