"""What this machine offers a model: memory free now, cores, how busy it is.

Read from the operating system without psutil: ``/proc`` on Linux, ``os.sysconf``
where it knows the figures, and ``GlobalMemoryStatusEx`` on Windows. A figure the
system does not give is None, and callers say "unknown" rather than guess. Defaults
chosen from these figures (threads, the wait for a start) are starting points a
person can edit; none of them is a limit.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from dataclasses import dataclass
from pathlib import Path

_MEMINFO = Path("/proc/meminfo")
_CPUINFO = Path("/proc/cpuinfo")
#: A start gets this long before anything scales it (model load, warm-up, first bind).
BASE_STARTUP_SECONDS = 20.0
#: A slow disk's read speed: a memory-mapped model still has to be paged in once.
SLOW_DISK_BYTES_PER_SECOND = 50e6


@dataclass(frozen=True)
class MachineMemory:
    """Memory in bytes; None where the system does not say.

    Attributes:
        available_bytes: What a new process can use without pushing others to swap
            (Linux's MemAvailable: free memory plus caches the kernel can drop).
        total_bytes: Installed memory.
    """

    available_bytes: int | None
    total_bytes: int | None


def machine_memory() -> MachineMemory:
    """Memory available and installed, now."""
    if _MEMINFO.is_file():
        fields = _meminfo_fields(_MEMINFO.read_text(encoding="ascii", errors="replace"))
        if "MemAvailable" in fields:
            return MachineMemory(fields["MemAvailable"], fields.get("MemTotal"))
    if sys.platform == "win32":
        return _windows_memory()
    return MachineMemory(_sysconf_bytes("SC_AVPHYS_PAGES"), _sysconf_bytes("SC_PHYS_PAGES"))


def physical_cores(cpuinfo: Path = _CPUINFO) -> int:
    """Cores this process may run on, not counting hyper-threads twice; at least 1.

    llama.cpp generates fastest with one thread per physical core: two threads on
    one core's siblings wait for each other at every step. Linux counts the distinct
    (``physical id``, ``core id``) pairs; a Linux that lists no core ids (ARM, which
    has no hyper-threads) counts every usable CPU; elsewhere half the logical CPUs.
    """
    logical = usable_cpus()
    try:
        text = cpuinfo.read_text(encoding="ascii", errors="replace")
    except OSError:
        return max(1, logical // 2) if sys.platform != "linux" else logical
    cores = _cpuinfo_cores(text)
    return max(1, min(cores, logical)) if cores else logical


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_threads() -> int:
    """Threads for the engine: the physical cores this process may use."""
    return physical_cores()


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
    return _meminfo_fields(status).get("VmRSS")


def _meminfo_fields(text: str) -> dict[str, int]:
    fields: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            fields[name] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return fields


def _cpuinfo_cores(text: str) -> int:
    """Distinct (physical id, core id) pairs; 0 when the file does not list them."""
    cores: set[tuple[str, str]] = set()
    physical = core = ""
    for line in [*text.splitlines(), ""]:
        name, _, value = (part.strip() for part in line.partition(":"))
        if name == "physical id":
            physical = value
        elif name == "core id":
            core = value
        elif not line.strip():
            if core:
                cores.add((physical, core))
            physical = core = ""
    return len(cores)


def _sysconf_bytes(pages_name: str) -> int | None:
    with contextlib.suppress(ValueError, OSError, AttributeError):
        pages = os.sysconf(pages_name)
        page_size = os.sysconf("SC_PAGE_SIZE")
        if pages > 0 and page_size > 0:
            return pages * page_size
    return None


def _windows_memory() -> MachineMemory:  # pragma: no cover - Windows only
    class _Status(ctypes.Structure):
        _fields_ = [("length", ctypes.c_ulong), ("load", ctypes.c_ulong),
                    *((name, ctypes.c_ulonglong) for name in (
                        "total_physical", "available_physical", "total_page", "available_page",
                        "total_virtual", "available_virtual", "available_extended"))]

    status = _Status()
    status.length = ctypes.sizeof(_Status)
    if not ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):  # type: ignore[attr-defined]
        return MachineMemory(None, None)
    return MachineMemory(int(status.available_physical), int(status.total_physical))
