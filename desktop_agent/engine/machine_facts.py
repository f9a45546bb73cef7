"""What the runner asks of this machine: its cores, how busy it is, a process's memory.

Defaults chosen here are starting points a person can edit; none of them is a
limit. Linux reads ``/proc``; elsewhere the answers fall back to what Python's
standard library knows.
"""

from __future__ import annotations

import os
from pathlib import Path

#: A start gets this long before anything scales it (model load, warm-up, first bind).
BASE_STARTUP_SECONDS = 20.0
#: A slow disk's read speed: a memory-mapped model still has to be paged in once.
SLOW_DISK_BYTES_PER_SECOND = 50e6


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def physical_cores(cpuinfo: Path = Path("/proc/cpuinfo")) -> int:
    """Physical cores (hyper-threads counted once), at least 1.

    llama.cpp generates fastest with one thread per physical core: two threads on
    one core wait for each other at every step. Linux counts the distinct
    (``physical id``, ``core id``) pairs; a Linux that lists no core ids (ARM, which
    has no hyper-threads) counts every CPU; elsewhere half the logical CPUs.
    """
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return max(1, (os.cpu_count() or 2) // 2)
    if "core id" not in text:
        return max(1, os.cpu_count() or 1)
    cores: set[tuple[str, str]] = set()
    package = core = ""
    for line in [*text.splitlines(), ""]:
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "physical id":
            package = value.strip()
        elif key == "core id":
            core = value.strip()
        elif not key and core:  # a blank line ends one processor's block
            cores.add((package, core))
            package = core = ""
    return max(1, len(cores))


def default_threads() -> int:
    """Threads for the engine: the physical cores, no more than this process may use."""
    return max(1, min(physical_cores(), usable_cpus()))


def load_factor() -> float:
    """How many times over the machine's CPUs are asked for right now (1.0: not busy)."""
    try:
        waiting = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 1.0
    return max(1.0, waiting / usable_cpus())


def startup_allowance(model_bytes: int) -> float:
    """Seconds to wait for a model of this size to be ready, stretched on a busy machine.

    A fixed wait would fail a big model on a slow disk, or any model on a machine busy
    with a build; the wait grows with the file and with the load. It is only a
    ceiling: the start returns as soon as the engine says it is ready, and at once
    when the engine dies.
    """
    return (BASE_STARTUP_SECONDS + model_bytes / SLOW_DISK_BYTES_PER_SECOND) * load_factor()


def resident_bytes(pid: int) -> int | None:
    """A process's resident memory (``VmRSS``) in bytes, or None where ``/proc`` cannot say."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                return int(fields[1]) * 1024
    return None
