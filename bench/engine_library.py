"""The model library's scan: a first (cold) scan and a rescan with the header cache (warm).

Builds a private home holding ``--files`` files of which ``--models`` are GGUF models
(valid files written by gguf.GGUFWriter, each with a ``--vocabulary``-token vocabulary
so a header costs what a real one does to step over), spread over LM Studio's folder,
llama.cpp's cache and a folder the person added, the rest small files of other kinds.
Then times :meth:`ModelLibrary.scan` (the same call the model picker makes):

- cold: no header cache yet, every model's header read (the first scan after install);
- warm: the cache written by the cold scan, nothing changed (target <= 300 ms).

Each figure is the median of ``--runs`` runs; the machine's load (``uptime``) is
printed first, since two shared cores make every figure move with it. Only this
script's private folders are scanned: HOME and the model variables point into them.

    python bench/engine_library.py [--files 10000] [--models 50] [--runs 5]
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
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "engine"))

from gguf_samples import SampleModel, write_gguf  # noqa: E402

WARM_TARGET_S = 0.300


def build_tree(home: Path, files: int, models: int, vocabulary: int) -> Path:
    """Write the models and the filler; returns the person's own folder."""
    own = home / "Models"
    homes = [home / ".lmstudio" / "models" / "publisher{}" / "repo{}",
             home / ".cache" / "llama.cpp", own / "sub{}"]
    template = write_gguf(home / "template.gguf", SampleModel(vocabulary=vocabulary))
    for index in range(models):
        folder = Path(str(homes[index % len(homes)]).format(index, index))
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, folder / f"model-{index}.gguf")
    template.unlink()
    for index in range(files - models):
        folder = own / "projects" / f"folder{index // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{index}.txt").write_bytes(b"x" * 64)
    return own


def median_scan(scan: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        scan()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--vocabulary", type=int, default=32_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True,
                                    check=False).stdout.strip())
    workspace = Path(tempfile.mkdtemp(prefix="engine-library-bench-"))
    try:
        home = workspace / "home"
        for name in ("OLLAMA_MODELS", "HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME", "LLAMA_CACHE"):
            os.environ.pop(name, None)
        os.environ["HOME"] = str(home)
        own = build_tree(home, args.files, args.models, args.vocabulary)
        from desktop_agent.engine.library import ModelLibrary

        cache = workspace / "data"
        cold = []
        for _ in range(args.runs):
            shutil.rmtree(cache, ignore_errors=True)
            start = time.perf_counter()
            entries = ModelLibrary(cache, extra_folders=[own]).scan()
            cold.append(time.perf_counter() - start)
        warm = median_scan(lambda: ModelLibrary(cache, extra_folders=[own]).scan(), args.runs)
        readable = sum(1 for entry in entries if entry.info is not None)
        print(f"tree: {args.files:,} files, {len(entries)} models found ({readable} readable), "
              f"vocabulary {args.vocabulary:,} tokens")
        print(f"cold scan (no header cache): {statistics.median(cold) * 1000:7.1f} ms")
        print(f"warm scan (cache, unchanged): {warm * 1000:7.1f} ms   target "
              f"{WARM_TARGET_S * 1000:.0f} ms, ratio {warm / WARM_TARGET_S:.2f}")
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    main()
