"""What a previewed command would change in the working folder, path by path.

A :class:`ChangeSet` is read from a preview's upper layer
(:mod:`.overlay_changes`) and is plain data: the front ends show it (counts,
a tree, diffs), the workspace applies it (``workspace/preview_apply.py``),
REST sends it as JSON (:meth:`ChangeSet.to_dict`).

Each :class:`PathChange` is one path: ``created``, ``modified`` (contents,
or what the path is: a folder replaced by a file), ``deleted`` (a folder
with everything in it is one change, its files counted), ``mode`` (only the
permission bits) or ``renamed`` (a file deleted in one place and created
with the same bytes and mode in another). Renames are found by content: the
overlay is mounted without ``redirect_dir``, so a moved folder reaches the
upper layer as a copy and a deletion, and only equal bytes tie the two.

Times are not changes (as in the checkpoints): a file rewritten with the
same bytes is not listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

FILE = "file"
DIR = "dir"
LINK = "link"
FIFO = "fifo"

CREATED = "created"
MODIFIED = "modified"
DELETED = "deleted"
MODE = "mode"
RENAMED = "renamed"


@dataclass(frozen=True, slots=True)
class PathState:
    """A path of the working folder as the preview found it (for conflicts at Apply).

    Attributes:
        kind: ``file``, ``dir``, ``link``, ``fifo`` or ``other``.
        mode: Permission bits.
        size: Bytes (files), 0 otherwise.
        mtime_ns: Modification time.
        ino: Inode.
    """

    kind: str
    mode: int
    size: int
    mtime_ns: int
    ino: int

    def to_list(self) -> list[Any]:
        """Compact JSON form."""
        return [self.kind, self.mode, self.size, self.mtime_ns, self.ino]

    @classmethod
    def from_list(cls, data: list[Any]) -> PathState:
        """Read back :meth:`to_list`."""
        return cls(str(data[0]), int(data[1]), int(data[2]), int(data[3]), int(data[4]))


@dataclass(frozen=True, slots=True)
class PathChange:
    """One path the command changed.

    Attributes:
        path: Relative POSIX path in the working folder.
        change: ``created``, ``modified``, ``deleted``, ``mode`` or ``renamed``.
        kind: What is there after (``file``, ``dir``, ``link``, ``fifo``); for a
            deletion, what was there.
        mode: Permission bits after (None: deleted).
        old_kind: What was there before (None: nothing).
        old_mode: Permission bits before (None: nothing was there).
        size: Bytes after (files).
        old_size: Bytes before (files), None when it was no file.
        target: A link's text after.
        old_target: A link's text before.
        hard_link_of: Another name of the same file in this change set (it is
            applied as a hard link to that name).
        renamed_from: For ``renamed``: where the file was; for a created folder
            holding the same files as a deleted one: that folder (a move, still
            applied as a deletion and a creation).
        files: For a deleted folder: the files (and links) it held.
    """

    path: str
    change: str
    kind: str
    mode: int | None = None
    old_kind: str | None = None
    old_mode: int | None = None
    size: int = 0
    old_size: int | None = None
    target: str | None = None
    old_target: str | None = None
    hard_link_of: str | None = None
    renamed_from: str | None = None
    files: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON form (REST, events); None fields are left out."""
        return {k: v for k in self.__slots__ if (v := getattr(self, k)) is not None
                and not (k == "files" and v == 0)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PathChange:
        """Read back :meth:`to_dict`."""
        return cls(**{k: data[k] for k in cls.__slots__ if k in data})

    @property
    def summary(self) -> str:
        """One line in words."""
        what = {FILE: "file", DIR: "folder", LINK: "link", FIFO: "named pipe"}.get(self.kind,
                                                                                 self.kind)
        if self.change == CREATED:
            if self.kind == LINK:
                return f"Creates link {self.path} \u2192 {self.target}."
            if self.hard_link_of:
                return f"Creates {self.path}, another name (hard link) of {self.hard_link_of}."
            if self.renamed_from:
                return (f"Creates {what} {self.path} (moved from {self.renamed_from}: "
                        "the same files).")
            return f"Creates {what} {self.path}."
        if self.change == DELETED:
            held = f" and the {self.files} file{'' if self.files == 1 else 's'} in it" \
                if self.kind == DIR and self.files else ""
            return f"Deletes {what} {self.path}{held}."
        if self.change == MODE:
            return (f"Changes the mode of {self.path} from {_mode(self.old_mode)} "
                    f"to {_mode(self.mode)}.")
        if self.change == RENAMED:
            return f"Renames {self.renamed_from} to {self.path}."
        if self.old_kind is not None and self.old_kind != self.kind:
            return f"Replaces the {self.old_kind} {self.path} with a {what}."
        if self.kind == LINK:
            return f"Points link {self.path} at {self.target} (was {self.old_target})."
        mode = f" and its mode ({_mode(self.old_mode)} \u2192 {_mode(self.mode)})" \
            if self.mode != self.old_mode else ""
        return f"Changes {self.path}{mode}."


def _mode(mode: int | None) -> str:
    return "none" if mode is None else f"{mode & 0o7777:o}"


@dataclass(frozen=True, slots=True)
class ChangeCounts:
    """How many paths of each sort a change set holds (folders are not counted as files)."""

    created: int = 0
    modified: int = 0
    deleted: int = 0
    renamed: int = 0
    modes: int = 0
    links: int = 0
    folders_created: int = 0
    folders_deleted: int = 0

    @property
    def total(self) -> int:
        """Paths changed in all."""
        return (self.created + self.modified + self.deleted + self.renamed + self.modes
                + self.links + self.folders_created + self.folders_deleted)

    def sentence(self) -> str:
        """``changes 3 files, deletes 1``: the card's and the model's words.

        The first count names its unit, as one says it; folders are named only
        when no file count speaks for them (``mkdir -p a/b``: creates 2 folders).
        """
        parts: list[str] = []
        for count, verb in ((self.created, "creates"), (self.modified, "changes"),
                            (self.deleted, "deletes"), (self.renamed, "renames")):
            if count:
                unit = "" if parts else f" file{_s(count)}"
                parts.append(f"{verb} {count:,}{unit}")
        if self.folders_created and not self.created:
            parts.append(f"creates {self.folders_created:,} folder{_s(self.folders_created)}")
        if self.folders_deleted and not self.deleted:
            parts.append(f"deletes {self.folders_deleted:,} folder{_s(self.folders_deleted)}")
        if self.links:
            parts.append(f"makes {self.links:,} link{_s(self.links)}")
        if self.modes:
            parts.append(f"changes the mode of {self.modes:,} path{_s(self.modes)}")
        return ", ".join(parts) if parts else "changes nothing"


def _s(count: int) -> str:
    return "" if count == 1 else "s"


@dataclass(slots=True)
class ChangeSet:
    """Everything a previewed command would change in the working folder.

    Attributes:
        changes: The changes, sorted by path.
        before: Each path Apply will touch, as the folder had it when the
            preview was read (None: absent). A path that differs at Apply was
            changed by something else meanwhile: a conflict.
        opaque: Folders whose old contents the command replaced as a whole
            (``rm -rf d; mkdir d``): Apply removes what the preview did not keep.
        notes: Sentences about what cannot be applied (sockets, devices).
    """

    changes: list[PathChange] = field(default_factory=list)
    before: dict[str, PathState | None] = field(default_factory=dict)
    opaque: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when the command changed nothing in the folder."""
        return not self.changes

    def counts(self) -> ChangeCounts:
        """How many of each sort."""
        created = modified = deleted = renamed = modes = links = 0
        folders_created = folders_deleted = 0
        for change in self.changes:
            if change.change == DELETED:
                if change.kind == DIR:
                    folders_deleted += 1
                    deleted += change.files
                else:
                    deleted += 1
            elif change.change == RENAMED:
                renamed += 1
            elif change.change == MODE:
                modes += 1
            elif change.kind == LINK:
                links += 1
            elif change.kind == DIR:
                if change.change == CREATED:
                    folders_created += 1
                else:
                    modified += 1
            elif change.change == CREATED:
                created += 1
            else:
                modified += 1
        return ChangeCounts(created, modified, deleted, renamed, modes, links,
                            folders_created, folders_deleted)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (REST, events, the preview's record on disk)."""
        return {"changes": [c.to_dict() for c in self.changes],
                "before": {p: None if s is None else s.to_list() for p, s in self.before.items()},
                "opaque": list(self.opaque), "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChangeSet:
        """Read back :meth:`to_dict`."""
        return cls([PathChange.from_dict(c) for c in data.get("changes", ())],
                   {p: None if s is None else PathState.from_list(s)
                    for p, s in (data.get("before") or {}).items()},
                   list(data.get("opaque", ())), list(data.get("notes", ())))


def sorted_changes(changes: Iterable[PathChange]) -> list[PathChange]:
    """Changes in path order (a folder before what is in it)."""
    return sorted(changes, key=lambda c: c.path.split("/"))
