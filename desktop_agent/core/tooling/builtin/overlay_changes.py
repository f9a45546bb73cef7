"""Reading a preview's upper layer into a :class:`.ChangeSet`.

The command ran on an overlay: the working folder as the lower layer, a
private upper layer in the data folder. Once it has ended, the upper layer
holds every effect it had on the folder, in overlayfs's own terms:

* a file, link or FIFO in the upper layer is what the path now is (new, or
  copied up and changed; a copy-up that changed nothing, such as ``touch``,
  is not a change);
* a **whiteout** hides the lower path: a character device 0/0 (what the
  kernel makes, as root and, since 5.8, in a user namespace too), or a
  zero-size file carrying ``trusted.overlay.whiteout`` / ``user.overlay.whiteout``
  (the form newer kernels use inside layers that are themselves on an
  overlay);
* an **opaque** folder (``trusted.overlay.opaque`` or, for an overlay mounted
  in a user namespace with ``userxattr``, ``user.overlay.opaque`` set to
  ``y``) hides everything the lower folder held: ``rm -rf d; mkdir d``. The
  value ``x`` says only that the folder holds xattr whiteouts.

Which xattr namespace shows up depends on who mounted the overlay (the app
as root: ``trusted.``; as a normal user, in its user namespace: ``user.``),
so both are read. The lower layer is read by descriptors from the pinned
working folder, each folder opened with ``O_NOFOLLOW``: a link in the folder
is compared as a link, never followed.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from desktop_agent.core.tooling.builtin.change_set import (
    CREATED,
    DELETED,
    DIR,
    FIFO,
    FILE,
    LINK,
    MODE,
    MODIFIED,
    RENAMED,
    ChangeSet,
    PathChange,
    PathState,
    sorted_changes,
)

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | _CLOEXEC
_WHITEOUT_XATTRS = ("trusted.overlay.whiteout", "user.overlay.whiteout")
_OPAQUE_XATTRS = ("trusted.overlay.opaque", "user.overlay.opaque")
_CHUNK = 1 << 20
_OPEN_FOLDERS = 64
"""Lower folders kept open while reading (the walk is depth first: a few suffice)."""
_RENAME_BYTES = 256 << 20
"""Bytes compared at most while looking for renames (a huge change set stays cheap)."""


def kind_of(mode: int) -> str:
    """``file``, ``dir``, ``link``, ``fifo`` or ``other`` for an ``st_mode``."""
    if stat.S_ISREG(mode):
        return FILE
    if stat.S_ISDIR(mode):
        return DIR
    if stat.S_ISLNK(mode):
        return LINK
    if stat.S_ISFIFO(mode):
        return FIFO
    return "other"


def state_of(info: os.stat_result) -> PathState:
    """The :class:`PathState` of an ``lstat`` result."""
    kind = kind_of(info.st_mode)
    return PathState(kind, stat.S_IMODE(info.st_mode), info.st_size if kind == FILE else 0,
                     info.st_mtime_ns, info.st_ino)


class LowerFolder:
    """The working folder, read relative to a descriptor and never through a link.

    Args:
        root_fd: An open descriptor of the folder (not closed here).
    """

    def __init__(self, root_fd: int) -> None:
        self._root = root_fd
        self._open: collections.OrderedDict[str, int] = collections.OrderedDict()

    def close(self) -> None:
        """Close the folders opened on the way (not the root)."""
        for fd in self._open.values():
            os.close(fd)
        self._open.clear()

    def __enter__(self) -> LowerFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def folder(self, rel: str) -> int | None:
        """A descriptor of the folder ``rel`` ("" is the root); None when it is no real folder."""
        if not rel:
            return self._root
        fd = self._open.get(rel)
        if fd is not None:
            self._open.move_to_end(rel)
            return fd
        parent, _, name = rel.rpartition("/")
        above = self.folder(parent)
        if above is None:
            return None
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=above)
        except OSError:
            return None  # missing, a link, a file: no folder to read through
        self._open[rel] = fd
        while len(self._open) > _OPEN_FOLDERS:
            os.close(self._open.popitem(last=False)[1])
        return fd

    def lstat(self, rel: str) -> os.stat_result | None:
        """``lstat`` of ``rel``; None when absent (or a link or file is on the way)."""
        parent, _, name = rel.rpartition("/")
        fd = self.folder(parent)
        if fd is None:
            return None
        try:
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            return None

    def readlink(self, rel: str) -> str | None:
        """A link's text; None when ``rel`` is no link."""
        parent, _, name = rel.rpartition("/")
        fd = self.folder(parent)
        if fd is None:
            return None
        try:
            return os.readlink(name, dir_fd=fd)
        except OSError:
            return None

    @contextlib.contextmanager
    def opened(self, rel: str) -> Iterator[int | None]:
        """A read descriptor of the regular file ``rel`` (None: not a regular file now)."""
        parent, _, name = rel.rpartition("/")
        fd = self.folder(parent)
        handle = None
        if fd is not None:
            with contextlib.suppress(OSError):
                handle = os.open(name, _FILE_FLAGS, dir_fd=fd)
        if handle is not None and not stat.S_ISREG(os.fstat(handle).st_mode):
            os.close(handle)
            handle = None
        try:
            yield handle
        finally:
            if handle is not None:
                os.close(handle)

    def read(self, rel: str) -> bytes | None:
        """The bytes of the regular file ``rel`` (None: it is not one)."""
        with self.opened(rel) as fd:
            if fd is None:
                return None
            chunks = []
            while chunk := os.read(fd, _CHUNK):
                chunks.append(chunk)
            return b"".join(chunks)

    def names(self, rel: str) -> list[str]:
        """What the folder ``rel`` holds (empty when it is no real folder)."""
        fd = self.folder(rel)
        if fd is None:
            return []
        try:
            return os.listdir(fd)
        except OSError:
            return []

    def tree(self, rel: str) -> Iterator[tuple[str, os.stat_result]]:
        """Every path under the folder ``rel`` with its ``lstat``, folders before their contents."""
        pending = [rel]
        while pending:
            folder = pending.pop()
            for name in sorted(self.names(folder)):
                child = f"{folder}/{name}"
                info = self.lstat(child)
                if info is None:
                    continue
                yield child, info
                if stat.S_ISDIR(info.st_mode):
                    pending.append(child)


def _xattr(path: str, names: tuple[str, ...]) -> bytes | None:
    for name in names:
        try:
            return os.getxattr(path, name, follow_symlinks=False)
        except OSError:
            continue
    return None


def _is_whiteout(path: str, info: os.stat_result) -> bool:
    if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:
        return True
    return stat.S_ISREG(info.st_mode) and info.st_size == 0 \
        and _xattr(path, _WHITEOUT_XATTRS) is not None


def _is_opaque(path: str) -> bool:
    return _xattr(path, _OPAQUE_XATTRS) == b"y"


def _readable(path: str, bits: int) -> None:
    """Give the app (the upper layer's owner) ``bits`` on ``path`` if it lacks them.

    A command may ``chmod 000`` what it made; the app must still read it to
    show and apply it. The mode the command gave is the one recorded (read
    before this) and the one applied.
    """
    try:
        mode = stat.S_IMODE(os.lstat(path).st_mode)
        if mode & bits != bits:
            os.chmod(path, mode | bits)
    except OSError:
        pass  # reading it says why


def _same_file(upper_path: str, lower: LowerFolder, rel: str) -> bool:
    """Whether the upper file holds the lower file's bytes (sizes are already equal)."""
    with lower.opened(rel) as theirs:
        if theirs is None:
            return False
        mine = os.open(upper_path, _FILE_FLAGS)
        try:
            # No bigger reads than the file: a read allocates all it asks for.
            chunk = min(_CHUNK, os.fstat(mine).st_size + 1)
            while True:
                a, b = os.read(mine, chunk), os.read(theirs, chunk)
                if a != b:
                    return False
                if not a:
                    return True
        finally:
            os.close(mine)


@dataclass(slots=True)
class _Reading:
    """The state of one read of an upper layer."""

    upper: str
    lower: LowerFolder
    result: ChangeSet
    links: dict[int, list[str]]
    deleted_files: dict[str, PathState]
    created_files: dict[str, PathState]


def read_changes(upper: str, lower_fd: int) -> ChangeSet:
    """What the upper layer ``upper`` changes in the folder open as ``lower_fd``.

    Blocking: call it in a worker thread. The command must have ended (its
    mount namespace gone), so nothing writes to ``upper`` meanwhile.
    """
    with LowerFolder(lower_fd) as lower:
        reading = _Reading(upper, lower, ChangeSet(), {}, {}, {})
        _visit(reading, "", lower_is_folder=True, opaque=False)
        _tie_hard_links(reading)
        _find_renames(reading)
        reading.result.changes = sorted_changes(reading.result.changes)
        return reading.result


def _visit(reading: _Reading, folder: str, *, lower_is_folder: bool, opaque: bool) -> None:
    """Read one upper folder (and, depth first, the folders in it)."""
    upper_folder = os.path.join(reading.upper, folder) if folder else reading.upper
    lower = reading.lower
    pending: list[tuple[str, bool, bool]] = []
    seen: set[str] = set()
    _readable(upper_folder, 0o500)
    with os.scandir(upper_folder) as entries:
        found = sorted((e.name, e.path, e.stat(follow_symlinks=False)) for e in entries)
    for name, path, info in found:
        rel = f"{folder}/{name}" if folder else name
        seen.add(name)
        old = lower.lstat(rel) if lower_is_folder else None
        if _is_whiteout(path, info):
            if old is not None:
                _deleted(reading, rel, old)
            continue
        if stat.S_ISDIR(info.st_mode):
            pending.append(_folder(reading, rel, path, info, old))
        elif stat.S_ISREG(info.st_mode):
            _file(reading, rel, path, info, old)
        elif stat.S_ISLNK(info.st_mode):
            _link(reading, rel, path, info, old)
        elif stat.S_ISFIFO(info.st_mode):
            _fifo(reading, rel, info, old)
        else:
            reading.result.notes.append(
                f"{rel} is a {'socket' if stat.S_ISSOCK(info.st_mode) else 'device'}: "
                "it is not applied.")
    if opaque and lower_is_folder:
        for name in sorted(set(lower.names(folder)) - seen):
            rel = f"{folder}/{name}" if folder else name
            old = lower.lstat(rel)
            if old is not None:
                _deleted(reading, rel, old)
    for rel, below, is_opaque in pending:
        _visit(reading, rel, lower_is_folder=below, opaque=is_opaque)


def _record(reading: _Reading, change: PathChange, old: os.stat_result | None) -> None:
    reading.result.changes.append(change)
    reading.result.before[change.path] = None if old is None else state_of(old)


def _deleted(reading: _Reading, rel: str, old: os.stat_result) -> None:
    """The lower path ``rel`` is gone (with everything in it, for a folder)."""
    state = state_of(old)
    files = 0
    if state.kind == DIR:
        for child, info in reading.lower.tree(rel):
            reading.result.before[child] = state_of(info)
            files += not stat.S_ISDIR(info.st_mode)
    elif state.kind == FILE:
        reading.deleted_files[rel] = state
    _record(reading, PathChange(rel, DELETED, state.kind, old_kind=state.kind,
                                old_mode=state.mode,
                                old_size=state.size if state.kind == FILE else None,
                                old_target=reading.lower.readlink(rel)
                                if state.kind == LINK else None, files=files), old)


def _replaced(reading: _Reading, rel: str, old: os.stat_result | None) -> None:
    """A lower folder at ``rel`` replaced by something else: record what it held."""
    if old is not None and stat.S_ISDIR(old.st_mode):
        for child, info in reading.lower.tree(rel):
            reading.result.before[child] = state_of(info)


def _folder(reading: _Reading, rel: str, path: str, info: os.stat_result,
            old: os.stat_result | None) -> tuple[str, bool, bool]:
    """An upper folder: new, over a lower folder (merged or opaque), or over something else."""
    mode = stat.S_IMODE(info.st_mode)
    opaque = _is_opaque(path)
    if old is not None and stat.S_ISDIR(old.st_mode):
        if opaque:
            reading.result.opaque.append(rel)
        if stat.S_IMODE(old.st_mode) != mode:
            _record(reading, PathChange(rel, MODE, DIR, mode, DIR, stat.S_IMODE(old.st_mode)),
                    old)
        return rel, True, opaque
    old_state = None if old is None else state_of(old)
    _record(reading, PathChange(
        rel, CREATED if old is None else MODIFIED, DIR, mode,
        None if old_state is None else old_state.kind,
        None if old_state is None else old_state.mode,
        old_size=old_state.size if old_state and old_state.kind == FILE else None,
        old_target=reading.lower.readlink(rel) if old_state and old_state.kind == LINK
        else None), old)
    return rel, False, False


def _file(reading: _Reading, rel: str, path: str, info: os.stat_result,
          old: os.stat_result | None) -> None:
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o400 == 0:
        _readable(path, 0o400)
    if info.st_nlink > 1:
        reading.links.setdefault(info.st_ino, []).append(rel)
    if old is not None and stat.S_ISREG(old.st_mode):
        old_mode = stat.S_IMODE(old.st_mode)
        same = old.st_size == info.st_size and _same_file(path, reading.lower, rel)
        if same and old_mode == mode:
            return  # copied up (opened for writing, touched) but not changed
        _record(reading, PathChange(rel, MODE if same else MODIFIED, FILE, mode, FILE, old_mode,
                                    info.st_size, old.st_size), old)
        return
    _replaced(reading, rel, old)
    old_state = None if old is None else state_of(old)
    change = PathChange(rel, CREATED if old is None else MODIFIED, FILE, mode,
                        None if old_state is None else old_state.kind,
                        None if old_state is None else old_state.mode, info.st_size,
                        old_target=reading.lower.readlink(rel)
                        if old_state and old_state.kind == LINK else None)
    if old is None:
        reading.created_files[rel] = state_of(info)
    _record(reading, change, old)


def _link(reading: _Reading, rel: str, path: str, info: os.stat_result,
          old: os.stat_result | None) -> None:
    target = os.readlink(path)
    old_target = reading.lower.readlink(rel) if old is not None else None
    if old is not None and stat.S_ISLNK(old.st_mode) and old_target == target:
        return
    _replaced(reading, rel, old)
    old_state = None if old is None else state_of(old)
    _record(reading, PathChange(
        rel, CREATED if old is None else MODIFIED, LINK, stat.S_IMODE(info.st_mode),
        None if old_state is None else old_state.kind,
        None if old_state is None else old_state.mode, target=target,
        old_size=old_state.size if old_state and old_state.kind == FILE else None,
        old_target=old_target), old)


def _fifo(reading: _Reading, rel: str, info: os.stat_result,
          old: os.stat_result | None) -> None:
    mode = stat.S_IMODE(info.st_mode)
    if old is not None and stat.S_ISFIFO(old.st_mode):
        if stat.S_IMODE(old.st_mode) != mode:
            _record(reading, PathChange(rel, MODE, FIFO, mode, FIFO, stat.S_IMODE(old.st_mode)),
                    old)
        return
    _replaced(reading, rel, old)
    old_state = None if old is None else state_of(old)
    _record(reading, PathChange(rel, CREATED if old is None else MODIFIED, FIFO, mode,
                                None if old_state is None else old_state.kind,
                                None if old_state is None else old_state.mode), old)


def _tie_hard_links(reading: _Reading) -> None:
    """Mark the second and later names of a file with several names as hard links."""
    if not reading.links:
        return
    anchors: dict[str, str] = {}
    for names in reading.links.values():
        if len(names) < 2:
            continue
        first, *others = sorted(names, key=lambda p: p.split("/"))
        for other in others:
            anchors[other] = first
    changes = reading.result.changes
    for index, change in enumerate(changes):
        anchor = anchors.get(change.path)
        if anchor is not None and change.change in (CREATED, MODIFIED):
            changes[index] = _with(change, hard_link_of=anchor)
            reading.created_files.pop(change.path, None)


def _find_renames(reading: _Reading) -> None:
    """Pair a deleted file with a created one holding the same bytes and mode: a rename.

    Sizes and modes are compared first; bytes only for equal ones, and at
    most :data:`_RENAME_BYTES` in all. A moved folder stays a deletion and a
    creation (its files are applied as new ones), but the new folder says
    where it came from when it holds the very same files.
    """
    _find_moved_folders(reading)
    if not reading.deleted_files or not reading.created_files:
        return
    by_shape: dict[tuple[int, int], list[str]] = {}
    for rel, state in reading.deleted_files.items():
        by_shape.setdefault((state.size, state.mode), []).append(rel)
    budget = _RENAME_BYTES
    pairs: dict[str, str] = {}
    for rel, state in sorted(reading.created_files.items()):
        candidates = by_shape.get((state.size, state.mode))
        if not candidates or budget < state.size:
            continue
        for old in candidates:
            budget -= state.size
            if _same_file(os.path.join(reading.upper, rel), reading.lower, old):
                pairs[rel] = old
                candidates.remove(old)
                break
    if not pairs:
        return
    gone = set(pairs.values())
    kept: list[PathChange] = []
    for change in reading.result.changes:
        if change.change == DELETED and change.path in gone:
            continue
        if change.path in pairs and change.change == CREATED:
            change = _with(change, change=RENAMED, renamed_from=pairs[change.path])
        kept.append(change)
    reading.result.changes = kept


def _find_moved_folders(reading: _Reading) -> None:
    changes = reading.result.changes
    gone = [c for c in changes if c.change == DELETED and c.kind == DIR]
    made = [i for i, c in enumerate(changes) if c.change == CREATED and c.kind == DIR]
    if not gone or not made:
        return
    made_paths = {changes[i].path for i in made}
    budget = _RENAME_BYTES
    for index in made:
        new = changes[index]
        if new.path.rpartition("/")[0] in made_paths:
            continue  # inside a new folder: its top says it
        shape = _upper_shape(os.path.join(reading.upper, new.path))
        for old in gone:
            if _lower_shape(reading.lower, old.path) != shape:
                continue
            size = sum(entry[2] for entry in shape)
            if size > budget:
                return
            budget -= size
            if all(_same_file(os.path.join(reading.upper, new.path, rel), reading.lower,
                              f"{old.path}/{rel}") for rel, kind, _, _ in shape if kind == FILE):
                changes[index] = _with(new, renamed_from=old.path)
                gone.remove(old)
                break


Shape = list[tuple[str, str, int, int]]
"""A folder's contents for comparing two: (relative path, kind, size, mode), sorted."""


def _upper_shape(folder: str) -> Shape:
    found: Shape = []
    for parent, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(parent, name)
            info = os.lstat(path)
            found.append((os.path.relpath(path, folder), kind_of(info.st_mode),
                           info.st_size if stat.S_ISREG(info.st_mode) else 0,
                           stat.S_IMODE(info.st_mode)))
    return sorted(found)


def _lower_shape(lower: LowerFolder, rel: str) -> Shape:
    return sorted((child[len(rel) + 1:], kind_of(info.st_mode),
                   info.st_size if stat.S_ISREG(info.st_mode) else 0, stat.S_IMODE(info.st_mode))
                  for child, info in lower.tree(rel))


def _with(original: PathChange, **fields: object) -> PathChange:
    return dataclasses.replace(original, **fields)  # type: ignore[arg-type]
