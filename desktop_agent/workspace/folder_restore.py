"""Putting paths of a working folder back as a checkpoint recorded them.

Every write, removal and mode change goes through a :class:`.FolderWriter`,
which walks the folder by descriptors and never follows a link: a symlink
found where the plan has a folder (put there after the checkpoint, or it
would not be in the plan) is replaced by a real folder, even one swapped in
while the restore runs, so a link the agent planted never redirects a
restore out of the folder. Links are restored as links (their target text,
never followed), files byte for byte, then their mode; folders are made
first and get their modes last (a read-only folder must not stop its own
files from coming back).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from .folder_scan import DIR, FILE, LINK, SKIPPED, Entry
from .folder_writer import FolderWriter
from .object_store import ObjectStore


@dataclass(slots=True)
class AppliedRestore:
    """What a restore did, path by path (relative POSIX paths)."""

    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    """Paths left as they are: not stored (over a cap, holding a secret), or a busy folder."""


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
    with FolderWriter(workdir) as folder:
        # Removals first, deepest first, so a folder is emptied before it goes.
        for rel in sorted((p for p in wanted if target.get(p) is None and p in current),
                          key=lambda p: p.count("/"), reverse=True):
            if current[rel].kind == SKIPPED:
                done.kept.append(rel)
                continue
            try:
                if current[rel].kind == DIR:
                    folder.remove_dir(rel)  # only an empty one: files nobody recorded stay
                else:
                    folder.remove(rel)
                done.removed.append(rel)  # or already gone
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
            if entry.kind == DIR:
                folder.make_dir(rel)
                folder_modes.append((rel, entry.mode))
            elif entry.kind == FILE:
                data = contents.get(entry.digest)
                if data is None:  # its content was dropped (it held a secret): left as it is
                    done.kept.append(rel)
                    continue
                # In place when it can: a rename costs a new inode, most of a big undo.
                folder.write_file(rel, data, entry.mode, in_place=True)
            elif entry.kind == LINK:
                folder.symlink(rel, entry.digest)
            done.restored.append(rel)
        for rel, mode in reversed(folder_modes):
            folder.chmod(rel, mode)
    return done
