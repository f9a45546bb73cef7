"""What this machine offers a model: memory free now, and physical cores.

Read from the operating system without psutil: ``/proc/meminfo`` and
``/proc/cpuinfo`` on Linux, ``os.sysconf`` where it knows the figures, and
``GlobalMemoryStatusEx`` on Windows. A figure the system does not give is None, and
callers say "unknown" rather than guess.
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


def physical_cores() -> int:
    """Cores this process may run on, not counting hyper-threads twice.

    llama.cpp generates fastest with one thread per physical core: a second thread
    on a core's sibling competes for the same units.
    """
    logical = _usable_cpus()
    if _CPUINFO.is_file():
        cores = _cpuinfo_cores(_CPUINFO.read_text(encoding="ascii", errors="replace"))
        if cores:
            return max(1, min(cores, logical))
    return max(1, logical)


def _usable_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


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
