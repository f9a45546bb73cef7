"""What the command sandbox costs: ``true`` through the bash tool, sandboxed vs not.

    python3 bench/sandbox.py            # 50 runs each
    python3 bench/sandbox.py --runs 200

Prints the median and p90 wall time of ``run_command("true")`` (the same path the
bash tool and REST ``/commands`` take: build the environment, start the process
group, collect output) with the default sandbox (bubblewrap: new namespaces, the
read-only system binds, private sized /tmp and /proc, the limits set by a first
shell, and as root a pids cgroup of its own) and with ``sandbox: off``, the
difference and the ratio. Runs alternate so that load on a shared machine hits
both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time

from desktop_agent.core.tooling.builtin.sandbox import SandboxPolicy, sandbox_backend
from desktop_agent.core.tooling.builtin.shell_tool import run_command
from desktop_agent.core.tooling.builtin.workdir import Workdir


async def _once(workdir: Workdir, policy: SandboxPolicy) -> float:
    started = time.perf_counter()
    result = await run_command("true", workdir, sandbox=policy)
    elapsed = time.perf_counter() - started
    if result.exit_code != 0:
        raise SystemExit(f"`true` failed under {policy}: {result.to_text()}")
    return elapsed


async def _measure(runs: int) -> None:
    backend = sandbox_backend()
    print(f"sandbox backend here: {backend or 'none (both rows run unsandboxed)'}; "
          f"running as {'root' if os.geteuid() == 0 else 'uid ' + str(os.geteuid())}")
    with tempfile.TemporaryDirectory() as folder:
        workdir = Workdir(folder)
        policies = {"sandboxed (workdir)": SandboxPolicy(), "unsandboxed (off)":
                    SandboxPolicy(level="off")}
        for policy in policies.values():  # warm up: the bwrap probe, page cache
            await _once(workdir, policy)
        times: dict[str, list[float]] = {name: [] for name in policies}
        for _ in range(runs):
            for name, policy in policies.items():
                times[name].append(await _once(workdir, policy))
    medians = {}
    for name, values in times.items():
        values.sort()
        medians[name] = statistics.median(values)
        p90 = values[int(0.9 * (len(values) - 1))]
        print(f"{name:22} median {medians[name] * 1000:7.2f} ms   p90 {p90 * 1000:7.2f} ms"
              f"   ({runs} runs)")
    sandboxed, plain = medians.values()
    print(f"sandbox cost per command: {(sandboxed - plain) * 1000:+.2f} ms (median difference)")
    print(f"ratio sandboxed / unsandboxed: {sandboxed / plain:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(_measure(args.runs))


if __name__ == "__main__":
    main()
