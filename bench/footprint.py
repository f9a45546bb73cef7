"""What each install weighs: the SDK alone, the whole app, and the seed SDK, side by side.

    python bench/footprint.py [--runs 7] [--keep DIR]

Builds this repository's wheel once, then makes three fresh virtual environments
and installs into each from PyPI (pip's cache makes later runs quick):

* ``desktop-agent``        the SDK alone (``from desktop_agent import query, Client``);
* ``desktop-agent[app]``   the whole app, as ``scripts/install.sh`` installs it;
* ``open-agent-sdk==0.4.2`` the seed SDK this project grew from.

For each it prints the packages installed (pip, setuptools and wheel left out) and
their size on disk (every file each distribution's RECORD lists), against the
targets for the SDK alone (<= 20 packages, <= 60 MB). Then, interleaved in one
run so drift on a busy machine hits both alike, the median wall time of a fresh
``python -c "import desktop_agent"`` in the SDK's environment beside
``import open_agent`` in the seed's (target: ours <= the seed's), each minus an
empty interpreter's start, and whether ``from desktop_agent import query, Client``
works with the SDK alone while the window's and the server's packages are absent.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SEED = "open-agent-sdk==0.4.2"
TARGET_PACKAGES = 20
TARGET_MB = 60.0
IGNORED = {"pip", "setuptools", "wheel"}

# Run inside each environment: its distributions and the bytes of their files.
_MEASURE = """
import importlib.metadata as md, json, os
ignored = set(json.loads(os.environ["IGNORED"]))
out = {}
for dist in md.distributions():
    name = dist.metadata["Name"]
    if name is None or name.lower() in ignored:
        continue
    size = 0
    for f in dist.files or ():
        path = f.locate()
        if os.path.isfile(path):
            size += os.path.getsize(path)
    out[name] = size
print(json.dumps(out))
"""

_CHECK_SDK = """
import importlib.util, json
from desktop_agent import query, Client, AgentOptions
absent = [m for m in ("PySide6", "fastapi", "uvicorn", "mcp", "keyring", "platformdirs",
                      "tiktoken") if importlib.util.find_spec(m) is None]
print(json.dumps({"query": callable(query), "Client": Client.__name__, "absent": absent}))
"""


def run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        sys.exit(f"footprint: {' '.join(command[:4])} ... failed:\n{result.stderr[-2000:]}")
    return result


def build_wheel(into: Path) -> Path:
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(into), str(REPO)])
    [wheel] = into.glob("desktop_agent-*.whl")
    return wheel


def make_env(folder: Path, requirement: str) -> Path:
    run([sys.executable, "-m", "venv", str(folder)])
    python = folder / "bin" / "python"
    run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         requirement])
    return python


def measure(python: Path) -> dict[str, int]:
    env = {"IGNORED": json.dumps(sorted(IGNORED)), "PATH": "/usr/bin:/bin"}
    return json.loads(run([str(python), "-c", _MEASURE], env=env).stdout)


def import_seconds(python: Path, statement: str) -> float:
    started = time.perf_counter()
    run([str(python), "-c", statement])
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="build the environments here and keep them")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="footprint-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        wheel = build_wheel(root / "wheel")
        url = wheel.resolve().as_uri()
        installs = {"SDK alone": f"desktop-agent @ {url}",
                    "whole app [app]": f"desktop-agent[app] @ {url}",
                    "seed (0.4.2)": SEED}
        pythons = {name: make_env(root / f"env{n}", req)
                   for n, (name, req) in enumerate(installs.items())}
        print(f"{'install':<18} {'packages':>8} {'size':>9}")
        for name, python in pythons.items():
            sizes = measure(python)
            mb = sum(sizes.values()) / 1e6
            note = ""
            if name == "SDK alone":
                count_ratio = len(sizes) / TARGET_PACKAGES
                note = (f"   (target <= {TARGET_PACKAGES} packages: {count_ratio:.2f}x,"
                        f" <= {TARGET_MB:g} MB: {mb / TARGET_MB:.2f}x)")
            print(f"{name:<18} {len(sizes):>8} {mb:>6.1f} MB{note}")
        sdk, seed = pythons["SDK alone"], pythons["seed (0.4.2)"]
        check = json.loads(run([str(sdk), "-c", _CHECK_SDK]).stdout)
        print(f"SDK alone: from desktop_agent import query, Client -> ok ({check['Client']}); "
              f"absent: {', '.join(check['absent'])}")
        ours, theirs, bare = [], [], []
        for _ in range(args.runs):
            bare.append(import_seconds(sdk, "pass"))
            ours.append(import_seconds(sdk, "import desktop_agent"))
            theirs.append(import_seconds(seed, "import open_agent"))
        start = statistics.median(bare)
        mine = statistics.median(ours) - start
        seeds = statistics.median(theirs) - start
        print(f"import time (median of {args.runs}, "
              f"minus {start * 1000:.0f} ms interpreter start):")
        print(f"  import desktop_agent   {mine * 1000:7.1f} ms")
        print(f"  import open_agent      {seeds * 1000:7.1f} ms (the seed)")
        print(f"  ratio ours / seed      {mine / seeds:7.2f}  (target <= 1.0)")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
