"""Putting paths of a working folder back as a checkpoint recorded them.

Every write stays inside the folder: before a path is written, each folder
on the way to it is checked with ``lstat`` and a symlink found there is
replaced by a real folder (it was put there after the checkpoint, or it
would not be in the plan), so a link the agent planted never redirects a
restore out of the folder. Links are restored as links (their target text,
never followed), files byte for byte through a temporary file and a rename,
then their mode; folders are made first and get their modes last (a
read-only folder must not stop its own files from coming back).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from .folder_scan import DIR, FILE, LINK, SKIPPED, Entry
from .object_store import ObjectStore


@dataclass(slots=True)
class AppliedRestore:
    """What a restore did, path by path (relative POSIX paths)."""

    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    """Paths left as they are: over a cap when recorded, or a folder still holding files."""


def _remove(path: str) -> None:
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _real_parent(workdir: str, rel: str) -> str:
    """The folder that holds ``rel``, made real (no symlink on the way) and present."""
    current = workdir
    for part in rel.split("/")[:-1]:
        current = os.path.join(current, part)
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            os.mkdir(current, 0o700)
            continue
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(current)  # a link or a file where a folder belongs
            os.mkdir(current, 0o700)
    return current


def _write_file(target: str, data: bytes, mode: int) -> None:
    """Put ``data`` at ``target`` with ``mode``.

    A regular file with no other name is rewritten in place (a rename over an
    existing file costs a new inode and freeing the old one: most of an undo
    of many files on a busy disk); anything else (no file, a folder, a link,
    a file hard-linked elsewhere, which must not change with it) is replaced
    through a temporary file and a rename.
    """
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
        try:
            fd = os.open(target, os.O_WRONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            pass  # not writable by us (a read-only file): replace it below
        else:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.truncate()
                os.fchmod(out.fileno(), mode)
            return
    temporary = f"{target}.restore-{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(temporary, mode)
        with contextlib.suppress(FileNotFoundError, IsADirectoryError, NotADirectoryError):
            if stat.S_ISDIR(os.lstat(target).st_mode):
                shutil.rmtree(target)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _write_link(target: str, entry: Entry) -> None:
    with contextlib.suppress(FileNotFoundError):
        _remove(target)
    os.symlink(entry.digest, target)


def apply_restore(workdir: str, paths: Collection[str], target: Mapping[str, Entry],
                  current: Mapping[str, Entry], objects: ObjectStore) -> AppliedRestore:
    """Make each of ``paths`` what ``target`` recorded (absent when it recorded nothing).

    Args:
        workdir: The folder (absolute).
        paths: The relative paths to put back.
        target: The checkpoint's entries.
        current: The folder's entries now (to know what to remove).
        objects: Where the checkpoint's contents are.

    Raises:
        OSError: A path cannot be written; the paths before it are already restored.
    """
    done = AppliedRestore()
    wanted = sorted(paths)
    contents = objects.read_many([e.digest for p in wanted
                                  if (e := target.get(p)) is not None and e.kind == FILE])
    # Removals first, deepest first, so a folder is emptied before it goes.
    for rel in sorted((p for p in wanted if target.get(p) is None and p in current),
                      key=lambda p: p.count("/"), reverse=True):
        if current[rel].kind == SKIPPED:
            done.kept.append(rel)
            continue
        full = os.path.join(workdir, rel)
        try:
            if current[rel].kind == DIR:
                os.rmdir(full)  # only an empty one: files in it nobody recorded stay
            else:
                os.unlink(full)
            done.removed.append(rel)
        except FileNotFoundError:
            done.removed.append(rel)
        except OSError:
            done.kept.append(rel)
    folder_modes: list[tuple[str, int]] = []
    for rel in wanted:  # parents sort before their children
        entry = target.get(rel)
        if entry is None:
            continue
        if entry.kind == SKIPPED:
            done.kept.append(rel)
            continue
        full = os.path.join(_real_parent(workdir, rel), rel.rsplit("/", 1)[-1])
        if entry.kind == DIR:
            with contextlib.suppress(FileNotFoundError):
                if not stat.S_ISDIR(os.lstat(full).st_mode):
                    os.unlink(full)
            with contextlib.suppress(FileExistsError):
                os.mkdir(full, 0o700)
            folder_modes.append((full, entry.mode))
        elif entry.kind == FILE:
            _write_file(full, contents[entry.digest], entry.mode)
        elif entry.kind == LINK:
            _write_link(full, entry)
        done.restored.append(rel)
    for full, mode in reversed(folder_modes):
        os.chmod(full, mode)
    return done
