"""What a preview card shows: the diffs of the changed files and a folded tree with totals.

A preview may change three files or ten thousand (``npm install``). The
card shows the diffs of the first :data:`DIFF_FILES` text files (as the
write and edit cards show theirs) and, for every change set, a tree of
folders with totals: a folder with many changes is one line ("node_modules/:
creates 9,812 files, 41.2 MB") that opens on demand. Both are plain data,
made in a worker thread, so the front ends only draw.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from desktop_agent.core.tooling.builtin.change_set import (
    CREATED,
    DELETED,
    DIR,
    FILE,
    MODE,
    MODIFIED,
    RENAMED,
    ChangeSet,
    PathChange,
)
from desktop_agent.core.tooling.builtin.overlay_changes import LowerFolder

from .diffs import MAX_DIFF_BYTES, FileDiff, diff_bytes

#: Files whose diffs a preview shows at most (the rest are in the tree, counted).
DIFF_FILES = 200
#: Bytes of file contents read for diffs at most, both sides together.
DIFF_BYTES = 32 << 20

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_UPPER_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC


@dataclass(slots=True)
class TreeTotals:
    """How many files under a folder (or the file itself) each change touches."""

    created: int = 0
    modified: int = 0
    deleted: int = 0
    renamed: int = 0
    modes: int = 0
    bytes: int = 0

    def add(self, other: TreeTotals) -> None:
        """Count ``other`` in too."""
        self.created += other.created
        self.modified += other.modified
        self.deleted += other.deleted
        self.renamed += other.renamed
        self.modes += other.modes
        self.bytes += other.bytes

    @property
    def files(self) -> int:
        """Files changed in all."""
        return self.created + self.modified + self.deleted + self.renamed + self.modes

    def sentence(self) -> str:
        """``creates 9,812 files, deletes 3 (41.2 MB)``."""
        text = self.counts_sentence()
        return f"{text} ({_size(self.bytes)})" if self.bytes else text

    def counts_sentence(self) -> str:
        """``creates 9,812 files, deletes 3``: the counts without the size."""
        parts: list[str] = []
        for count, verb in ((self.created, "creates"), (self.modified, "changes"),
                            (self.deleted, "deletes"), (self.renamed, "renames"),
                            (self.modes, "changes the mode of")):
            if count:
                unit = "" if parts else f" file{'' if count == 1 else 's'}"
                parts.append(f"{verb} {count:,}{unit}")
        return ", ".join(parts) or "no files"

    def to_dict(self) -> dict[str, int]:
        """JSON form."""
        return {"created": self.created, "modified": self.modified, "deleted": self.deleted,
                "renamed": self.renamed, "modes": self.modes, "bytes": self.bytes}


def _size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB"):
        if value < 1024:
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


@dataclass(slots=True)
class ChangeTree:
    """One folder (or file) of a change set, with the totals of everything under it.

    Attributes:
        name: Its last name ("" for the root).
        path: Its path in the working folder ("" for the root).
        change: Its own change, when it has one (a file, a created or deleted folder).
        totals: What changes under it (itself included).
        children: Folders first, then files, by name as a file manager orders
            them (``pkg2`` before ``pkg10``, case aside).
    """

    name: str
    path: str
    change: PathChange | None = None
    totals: TreeTotals = field(default_factory=TreeTotals)
    children: list[ChangeTree] = field(default_factory=list)

    def count(self) -> int:
        """Entries in this tree, itself excluded."""
        return sum(1 + child.count() for child in self.children)

    def first_path(self, wanted: Callable[[str], bool]) -> str | None:
        """The first path ``wanted`` accepts, in the order a tree view lists them."""
        for child in self.children:
            if child.change is not None and wanted(child.path):
                return child.path
            found = child.first_path(wanted)
            if found is not None:
                return found
        return None

    @property
    def is_folder(self) -> bool:
        """Whether it holds other entries (or is a folder change)."""
        return bool(self.children) or (self.change is not None and self.change.kind == DIR)

    def to_dict(self, depth: int = 64) -> dict[str, Any]:
        """JSON form, cut at ``depth`` levels (deeper folders keep their totals only)."""
        data: dict[str, Any] = {"name": self.name, "path": self.path,
                                "totals": self.totals.to_dict()}
        if self.change is not None:
            data["change"] = self.change.change
            data["kind"] = self.change.kind
        if self.children:
            data["entries"] = sum(1 for _ in self.children)
            if depth > 0:
                data["children"] = [c.to_dict(depth - 1) for c in self.children]
        return data


def _own_totals(change: PathChange) -> TreeTotals:
    totals = TreeTotals()
    if change.kind == DIR:
        if change.change == DELETED:
            totals.deleted = change.files
        elif change.change == MODE:
            totals.modes = 1
        return totals
    if change.change == CREATED:
        totals.created = 1
    elif change.change == MODIFIED:
        totals.modified = 1
    elif change.change == DELETED:
        totals.deleted = 1
    elif change.change == RENAMED:
        totals.renamed = 1
    elif change.change == MODE:
        totals.modes = 1
    if change.change != DELETED:
        totals.bytes = change.size
    return totals


_DIGITS = re.compile(r"(\d+)")


def _listing_order(node: ChangeTree) -> tuple[bool, list[str | int], str]:
    """Folders first, then names with their numbers compared as numbers.

    ``re.split`` with a group alternates text and digits, text first, so the
    pieces at one position are always of one type.
    """
    pieces = _DIGITS.split(node.name.casefold())
    return (not node.is_folder,
            [int(piece) if index % 2 else piece for index, piece in enumerate(pieces)],
            node.name)


def change_tree(changes: ChangeSet) -> ChangeTree:
    """The change set as a tree of folders, each with the totals of what is under it."""
    root = ChangeTree("", "")
    nodes: dict[str, ChangeTree] = {"": root}

    def node(path: str) -> ChangeTree:
        found = nodes.get(path)
        if found is None:
            parent_path, _, name = path.rpartition("/")
            found = ChangeTree(name, path)
            nodes[path] = found
            node(parent_path).children.append(found)
        return found

    for change in changes.changes:
        node(change.path).change = change
    for change in changes.changes:
        own = _own_totals(change)
        path = change.path
        while True:
            nodes[path].totals.add(own)
            if not path:
                break
            path = path.rpartition("/")[0]
    for found in nodes.values():
        found.children.sort(key=_listing_order)
    return root


def _read_upper(upper: str, rel: str, limit: int) -> bytes | None:
    try:
        fd = os.open(os.path.join(upper, rel), _UPPER_FLAGS)
    except OSError:
        return None
    try:
        return _read_some(fd, limit)
    finally:
        os.close(fd)


def _read_some(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes of an open file, asking for no more than it holds.

    ``os.read(fd, limit)`` allocates ``limit`` bytes first: two megabytes per
    small file, most of the cost of diffing a thousand of them.
    """
    wanted = min(limit, os.fstat(fd).st_size + 1)
    chunks = []
    while wanted > 0 and (chunk := os.read(fd, wanted)):
        chunks.append(chunk)
        wanted -= len(chunk)
    return b"".join(chunks)


def file_diffs(workdir: str, upper: str, changes: ChangeSet, *, max_files: int = DIFF_FILES,
               max_bytes: int = DIFF_BYTES) -> dict[str, FileDiff]:
    """The diffs of the change set's files, the first ``max_files`` by path. Blocking.

    The old side is read from the working folder by descriptors (never
    through a link), the new side from the upper layer. A file larger than
    the diff cap is read only as far as the cap (its diff says it is too
    large), so a preview of a 1 GB file reads 2 MB of it.
    """
    found: dict[str, FileDiff] = {}
    budget = max_bytes
    fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        with LowerFolder(fd) as lower:
            for change in changes.changes:
                if len(found) >= max_files or budget <= 0:
                    break
                if change.kind != FILE or change.hard_link_of \
                        or change.change in (MODE, RENAMED):
                    continue  # a rename moves the same bytes: its line says all
                if change.change == DELETED and change.old_kind != FILE:
                    continue
                old = _read_lower(lower, change.path, MAX_DIFF_BYTES + 1) \
                    if change.old_kind == FILE else None
                new = None if change.change == DELETED else \
                    _read_upper(upper, change.path, MAX_DIFF_BYTES + 1)
                if old is None and new is None:
                    continue
                budget -= len(old or b"") + len(new or b"")
                diff = diff_bytes(change.path, old, new)
                found[change.path] = _with_sizes(diff, change)
    finally:
        os.close(fd)
    return found


def _read_lower(lower: LowerFolder, rel: str, limit: int) -> bytes | None:
    with lower.opened(rel) as fd:
        return None if fd is None else _read_some(fd, limit)


def _with_sizes(diff: FileDiff, change: PathChange) -> FileDiff:
    """The diff with the files' real sizes (a big file was read only up to the cap)."""
    new_size = None if change.change == DELETED else change.size
    old_size = change.old_size if change.change != CREATED else None
    if diff.kind.value == "over_cap" or (new_size is not None and new_size > MAX_DIFF_BYTES) \
            or (old_size is not None and old_size > MAX_DIFF_BYTES):
        return replace(diff, old_size=old_size, new_size=new_size)
    return diff
