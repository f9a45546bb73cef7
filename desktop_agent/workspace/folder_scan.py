"""One pass over a working folder: what each path is, and its contents stored.

The scan is incremental: a file whose size, mtime and inode equal the
previous checkpoint's entry keeps that entry's digest without being read, so
a checkpoint of an unchanged folder costs one ``lstat`` per path. A file
modified within :data:`RACY_NS` of the previous scan is read again anyway
(git's "racily clean" rule): a write in the same clock tick as the scan
could otherwise keep its old size and mtime unnoticed.

Symlinks are recorded as links (their target text) and never followed, not
even one swapped in for a folder while the scan runs (folders are walked by
descriptors, each opened without following a link);
folders named in the exclusions, and every ``.git`` folder (the person's own
repository: its index and branches are never checkpointed nor restored),
are not entered. Files over a cap are recorded as ``skipped``, so a restore
knows to leave them alone rather than treat them as created since; so are
files that hold a secret value (:attr:`Limits.holds_secret`): their contents
are never stored, so the data folder never keeps a copy of a secret a
command wrote into the working folder (nor one that outlives the file).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from .object_store import ObjectStore

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC

RACY_NS = 2_000_000_000
"""A file modified this close to the previous scan is read again (clock ticks, coarse mtimes)."""

ALWAYS_EXCLUDED = frozenset({".git"})
"""Folder names never entered: a repository's own data is the person's, not the agent's."""

FILE = "file"
LINK = "link"
DIR = "dir"
SKIPPED = "skipped"
HOLDS_SECRET = "secret"
"""The ``digest`` of a skipped entry whose file held a secret (a cap's entry has "")."""


class Entry(NamedTuple):
    """One path of a checkpoint.

    Attributes:
        kind: ``file``, ``link``, ``dir`` or ``skipped`` (a file over a cap).
        mode: Permission bits (``0o755``...).
        size: Bytes (files), 0 otherwise.
        mtime_ns: Modification time, to skip hashing an unchanged file.
        ino: Inode, to notice a file replaced by another of the same size and time.
        digest: SHA-256 of a file's contents, a link's target text; for a skipped
            file why (:data:`HOLDS_SECRET`, or "" for a cap); else "".
    """

    kind: str
    mode: int
    size: int
    mtime_ns: int
    ino: int
    digest: str


Manifest = Mapping[str, Entry]
"""Relative POSIX path -> entry; folders included, the root itself not."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What a checkpoint leaves out.

    Attributes:
        max_file_bytes: A larger file is not stored (recorded as skipped).
        max_total_bytes: Files past this total are not stored.
        excluded: Folder names (any depth) or relative paths not entered.
        holds_secret: Says whether a file's contents hold a secret value; such
            a file is not stored (recorded as skipped, with a note). None: no
            secret is known.
    """

    max_file_bytes: int = 50 * 1024 * 1024
    max_total_bytes: int = 2 * 1024 * 1024 * 1024
    excluded: frozenset[str] = field(default_factory=frozenset)
    holds_secret: Callable[[bytes], bool] | None = None


@dataclass(slots=True)
class ScanResult:
    """A scanned folder: its manifest, and sentences about what was left out.

    Its new contents are already written (the scan flushes the object store).
    """

    entries: dict[str, Entry]
    scanned_ns: int
    notes: list[str] = field(default_factory=list)
    unchanged: bool = False
    """Every entry is the previous scan's own, and no path was added or removed."""


def same_state(a: Entry | None, b: Entry | None) -> bool:
    """Whether two entries hold the same thing (contents, link target, mode), ignoring times."""
    if a is None or b is None:
        return a is b
    if SKIPPED in (a.kind, b.kind) and {a.kind, b.kind} <= {SKIPPED, FILE}:
        # A file not stored (a cap, a secret) is known by its size and time only; so is
        # one stored before it held a secret, whose contents were dropped since.
        return (a.size, a.mtime_ns) == (b.size, b.mtime_ns)
    if a.kind != b.kind:
        return False
    if a.kind == LINK:
        return a.digest == b.digest
    return a.mode == b.mode and a.digest == b.digest


def human_size(size: int) -> str:
    """``12.3 MB``: a size in words for a sentence."""
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"  # pragma: no cover - the loop returns


class _Walk:
    """The state of one scan (kept in one object so the loop stays a plain loop)."""

    def __init__(self, previous: Manifest, previous_ns: int, limits: Limits,
                 objects: ObjectStore) -> None:
        self.previous = previous
        self.racy_after = previous_ns - RACY_NS
        self.limits = limits
        self.objects = objects
        self.entries: dict[str, Entry] = {}
        self.total = 0
        self.over_total: list[tuple[str, int]] = []
        self.notes: list[str] = []
        self.reused = 0
        self.excluded = ALWAYS_EXCLUDED | limits.excluded
        self.dropped = objects.dropped  # read once a scan: entries whose content is gone

    def file(self, folder: int, name: str, rel: str, st: os.stat_result) -> None:
        size, mtime, ino = st.st_size, st.st_mtime_ns, st.st_ino
        mode = stat.S_IMODE(st.st_mode)
        old = self.previous.get(rel)
        limits = self.limits
        if size > limits.max_file_bytes:
            self.entries[rel] = Entry(SKIPPED, mode, size, mtime, ino, "")
            self.notes.append(
                f"{rel} ({human_size(size)}) is larger than the {human_size(limits.max_file_bytes)}"
                " cap for one file: it is not in the checkpoint, so undo leaves it as it is.")
            return
        if self.total + size > limits.max_total_bytes:
            self.entries[rel] = Entry(SKIPPED, mode, size, mtime, ino, "")
            self.over_total.append((rel, size))
            return
        self.total += size
        if (old is not None and old.kind == FILE and old.size == size and old.mtime_ns == mtime
                and old.ino == ino and mtime < self.racy_after
                and old.digest not in self.dropped):
            self.entries[rel] = Entry(FILE, mode, size, mtime, ino, old.digest)
            return
        try:
            digest = self.objects.put_file(name, dir_fd=folder, refuse=limits.holds_secret)
        except OSError:
            return  # gone or unreadable meanwhile: not in this checkpoint
        if digest is None:
            self.entries[rel] = Entry(SKIPPED, mode, size, mtime, ino, HOLDS_SECRET)
            self.notes.append(f"{rel} holds a secret value, so it is not kept in the checkpoint:"
                              " its change is not shown and undo leaves it as it is.")
            return
        self.entries[rel] = Entry(FILE, mode, size, mtime, ino, digest)

    def walk(self, top: str) -> None:
        """Visit every path, each folder through a descriptor of the one holding it.

        A folder is opened ``O_NOFOLLOW | O_DIRECTORY`` relative to its
        parent's descriptor and its entries read relative to its own, so a
        folder swapped for a symlink during the scan is never followed: no
        file outside the working folder is read into a checkpoint (where a
        restore would put it inside). Depth first, one descriptor per level.
        """
        try:
            root = os.open(top, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
        except OSError:
            return
        levels: list[tuple[int, list[tuple[str, str]]]] = [(root, [])]
        try:  # each level: a folder's descriptor, and its folders still to visit
            levels[-1][1].extend(self.listing(root, ""))
            while levels:
                folder, inner = levels[-1]
                if not inner:
                    os.close(folder)
                    levels.pop()
                    continue
                name, prefix = inner.pop()
                try:
                    fd = os.open(name, _DIR_FLAGS, dir_fd=folder)
                except OSError:
                    continue  # unreadable, gone, or no longer a folder: nothing of it recorded
                levels.append((fd, []))
                levels[-1][1].extend(self.listing(fd, prefix))
        finally:
            for folder, _inner in levels:
                os.close(folder)

    def listing(self, folder: int, prefix: str) -> list[tuple[str, str]]:
        """Record the entries of one folder; return its folders to visit (name, prefix).

        The loop is one function on purpose: at 10,000 files, each call or
        tuple made per file is a measurable part of a checkpoint (bench/checkpoints.py).
        An unchanged entry is the previous one (the same object).
        """
        excluded = self.excluded
        previous_get = self.previous.get
        entries = self.entries
        racy_after = self.racy_after
        max_file = self.limits.max_file_bytes
        max_total = self.limits.max_total_bytes
        dropped = self.dropped
        inner: list[tuple[str, str]] = []
        try:
            listing = os.scandir(folder)
        except OSError:
            return inner  # unreadable or gone: nothing of it can be recorded
        with listing:
            for item in listing:
                rel = prefix + item.name
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                kind = st.st_mode
                if stat.S_ISREG(kind):
                    old = previous_get(rel)
                    size = st.st_size
                    if (old is not None and old[0] == FILE and old[2] == size
                            and old[3] == st.st_mtime_ns and old[4] == st.st_ino
                            and old[3] < racy_after and old[1] == stat.S_IMODE(kind)
                            and self.total + size <= max_total and size <= max_file
                            and old[5] not in dropped):
                        entries[rel] = old
                        self.total += size
                        self.reused += 1
                    else:
                        self.file(folder, item.name, rel, st)
                elif stat.S_ISDIR(kind):
                    if item.name in excluded or rel in excluded:
                        continue
                    self.directory(rel, st)
                    inner.append((item.name, rel + "/"))
                elif stat.S_ISLNK(kind):
                    self.link(folder, item.name, rel, st)
                # sockets, fifos and devices are not content: never recorded, never touched
        return inner

    def directory(self, rel: str, st: os.stat_result) -> None:
        old = self.previous.get(rel)
        entry = Entry(DIR, stat.S_IMODE(st.st_mode), 0, st.st_mtime_ns, st.st_ino, "")
        if old == entry:
            self.entries[rel] = old
            self.reused += 1
        else:
            self.entries[rel] = entry

    def link(self, folder: int, name: str, rel: str, st: os.stat_result) -> None:
        try:
            target = os.readlink(name, dir_fd=folder)
        except OSError:
            return
        old = self.previous.get(rel)
        entry = Entry(LINK, 0o777, 0, st.st_mtime_ns, st.st_ino, target)
        if old == entry:
            self.entries[rel] = old
            self.reused += 1
        else:
            self.entries[rel] = entry

    def finish_notes(self) -> None:
        if self.over_total:
            size = sum(s for _, s in self.over_total)
            names = ", ".join(r for r, _ in self.over_total[:3])
            more = f" and {len(self.over_total) - 3} more" if len(self.over_total) > 3 else ""
            self.notes.append(
                f"The checkpoint reached its {human_size(self.limits.max_total_bytes)} total cap: "
                f"{len(self.over_total)} files ({human_size(size)}: {names}{more}) are not in it,"
                " so undo leaves them as they are.")


def scan_folder(workdir: str, previous: Manifest, previous_ns: int, limits: Limits,
                objects: ObjectStore) -> ScanResult:
    """Record ``workdir`` as it is now, storing every new content in ``objects``.

    Args:
        workdir: The folder (absolute).
        previous: The last checkpoint's entries (unchanged files are not read).
        previous_ns: When that checkpoint's scan started (``time.time_ns()``).
        limits: Caps and exclusions.
        objects: Where contents go.
    """
    started = time.time_ns()
    walk = _Walk(previous, previous_ns, limits, objects)
    walk.walk(workdir)
    walk.finish_notes()
    objects.flush()
    unchanged = walk.reused == len(walk.entries) == len(previous) and not walk.notes
    return ScanResult(walk.entries, started, walk.notes, unchanged)
