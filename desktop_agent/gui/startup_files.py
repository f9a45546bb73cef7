"""The parts of files the window's start reads, listed for the single file to read ahead.

From a cold page cache (after a reboot, or once other work pushed the app out of
memory) the window's first paint waits on the disk: the shared libraries it maps (Qt,
PySide6, libpython, OpenSSL: about 60 MB touched, 90 MB read with the kernel's
read-around), then the ~300 ``.pyc`` files it imports, each read by one small
synchronous read while the other core of the machine has nothing to do. The single
file's stub (``packaging/onefile/stub.c``) asks the kernel to read ahead what is
listed here in a background process just before it starts the app, so most of it is
in memory by the time the app asks for it: the disk's reads overlap the app's CPU work
instead of interrupting it, as browsers read their own start ahead.

The list is made by the app itself, on the machine it runs on: the stub names the file
to write in ``DESKTOP_AGENT_STARTUP_FILES`` when its unpacked folder has none (once per
build), and the window writes it once its conversations are shown, with what this
process has touched by then: the pages of each mapped file it has in its page tables
(``/proc/self/pagemap``; a library is mapped whole but only a part is read, ICU's
32 MB data file a few pages), Qt's plugins (which Qt reads and lets go of) and
the modules it imported, in about the order they were first needed. The platform
plugin, the fonts and the system libraries this machine's window uses are in it; a
build-time list could only guess them.

One line per range: ``<offset> <length> <path>``, decimal bytes, length 0 for the
whole file. Paths holding a newline are left out; a file gone since is skipped by the
stub. Nothing here is needed to start: a list that cannot be written (read-only cache
folder) only means no read-ahead.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterable, Iterator

log = logging.getLogger("desktop_agent.gui.startup_files")

#: Set by the single file's stub when its unpacked folder has no list yet: where to write it.
STARTUP_FILES_ENV = "DESKTOP_AGENT_STARTUP_FILES"

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
#: Touched pages closer than this are read as one range: one request instead of many,
#: for a few pages more than the start used.
MERGE_GAP = 64 * 1024
_PRESENT = 1 << 63  # pagemap: the page is in this process's memory
_SWAPPED = 1 << 62
#: Devices that are not files on a disk (/dev/zero, shared memory, the X server's memfd).
_NOT_ON_DISK = ("/dev/", "/memfd:", "/proc/", "/sys/", "/SYSV")


class Mapping:
    """One file-backed region of ``/proc/self/maps``."""

    __slots__ = ("end", "offset", "path", "start")

    def __init__(self, start: int, end: int, offset: int, path: str) -> None:
        self.start, self.end, self.offset, self.path = start, end, offset, path


def read_maps(text: str) -> list[Mapping]:
    """The regions of a ``/proc/<pid>/maps`` text that map a file on disk.

    Writable shared mappings are left out (a database's shared memory, which the
    start writes and needs no reading ahead), as are deleted files and devices.
    """
    regions = []
    for line in text.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6 or not fields[5].startswith("/"):
            continue
        path = fields[5]
        if path.startswith(_NOT_ON_DISK) or path.endswith(" (deleted)"):
            continue
        permissions = fields[1]
        if "w" in permissions and "s" in permissions:
            continue
        start, end = (int(part, 16) for part in fields[0].split("-"))
        regions.append(Mapping(start, end, int(fields[2], 16), path))
    return regions


def touched_ranges(regions: Iterable[Mapping], pagemap_fd: int) -> list[tuple[str, int, int]]:
    """``(path, offset, length)`` of the pages of each mapped file this process has in memory.

    Files run from the highest address down, which is the order the dynamic loader
    mapped the libraries in (each new one goes below the last): libpython first, Qt's
    plugins last. Within a file the ranges run by offset, pages of all its regions
    (code, read-only data, data) merged.
    """
    pages_of: dict[str, set[int]] = {}
    base_of: dict[str, int] = {}
    for region in regions:
        count = (region.end - region.start) // PAGE
        try:
            data = os.pread(pagemap_fd, count * 8, region.start // PAGE * 8)
        except OSError:
            continue
        entries = memoryview(data[:len(data) // 8 * 8]).cast("Q")
        first = region.offset // PAGE
        touched = {first + index for index, entry in enumerate(entries)
                   if entry & (_PRESENT | _SWAPPED)}
        pages_of.setdefault(region.path, set()).update(touched)
        base_of[region.path] = min(base_of.get(region.path, region.start), region.start)
    ranges: list[tuple[str, int, int]] = []
    for path in sorted(pages_of, key=lambda p: base_of[p], reverse=True):
        run_start = run_end = -1
        for page in sorted(pages_of[path]):
            offset = page * PAGE
            if run_start >= 0 and offset - run_end <= MERGE_GAP:
                run_end = offset + PAGE
                continue
            if run_start >= 0:
                ranges.append((path, run_start, run_end - run_start))
            run_start, run_end = offset, offset + PAGE
        if run_start >= 0:
            ranges.append((path, run_start, run_end - run_start))
    return ranges


def imported_files(modules: Iterable[object]) -> Iterator[str]:
    """The files of ``modules`` (in import order) that were read as bytecode or source."""
    for module in modules:
        spec = getattr(module, "__spec__", None)
        origin = getattr(spec, "origin", None)
        if isinstance(origin, str) and origin.endswith((".pyc", ".py")) \
                and os.path.isabs(origin):
            cached = getattr(spec, "cached", None)
            if origin.endswith(".py") and isinstance(cached, str) and os.path.isfile(cached):
                yield cached  # from source: the bytecode read in its place
            else:
                yield origin


def qt_plugin_files() -> list[str]:
    """Every file in Qt's plugin folders, which Qt reads at the start without keeping them.

    To pick a platform, a theme, an input method and image formats, Qt maps each plugin
    of those folders for a moment to read its metadata, and unmaps the ones it does not
    load: gone from ``/proc/self/maps`` by the time the list is written, they were each
    one synchronous read of a cold start (a dozen of them). The folders hold ~2 MB.
    """
    from PySide6.QtCore import QLibraryInfo

    root = QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath)
    found: list[str] = []
    for folder, _dirs, names in os.walk(root):
        found.extend(os.path.join(folder, name) for name in names)
    return sorted(found)


def startup_lines() -> list[str]:
    """The list's lines for this process as it is now.

    The touched pages of mapped files first (the libraries are mapped first), then Qt's
    plugins (read as the application is made), then the imported modules.
    """
    with open("/proc/self/maps", encoding="utf-8", errors="surrogateescape") as handle:
        regions = read_maps(handle.read())
    fd = os.open("/proc/self/pagemap", os.O_RDONLY)
    try:
        ranges = touched_ranges(regions, fd)
    finally:
        os.close(fd)
    lines = [f"{offset} {length} {path}" for path, offset, length in ranges]
    seen = {path for path, _offset, _length in ranges}
    for path in [*qt_plugin_files(), *imported_files(list(sys.modules.values()))]:
        if path not in seen and os.path.isfile(path):
            seen.add(path)
            lines.append(f"0 0 {path}")
    return [line for line in lines if "\n" not in line and "\r" not in line]


def write_startup_files(target: str) -> bool:
    """Write the list to ``target`` (whole or not at all); False, logged, when it cannot."""
    scratch = f"{target}.{os.getpid()}.part"
    try:
        lines = startup_lines()
        with open(scratch, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write("".join(line + "\n" for line in lines))
        os.replace(scratch, target)
    except OSError as exc:
        log.info("no read-ahead list for the next cold start (%s)", exc)
        with contextlib.suppress(OSError):
            os.unlink(scratch)
        return False
    return True


def take_target() -> str | None:
    """Where the stub asked for the list, taken out of the environment.

    Out of ``os.environ`` at once: the processes the app starts (model engines, MCP
    servers, tool commands) must not write the list too.
    """
    return os.environ.pop(STARTUP_FILES_ENV, None) or None
