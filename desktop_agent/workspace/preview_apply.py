"""Applying a previewed command's changes to the working folder, or finding why not to.

A preview (``core/tooling/builtin/command_preview.py``) leaves the folder
untouched and its changes in an upper layer. :func:`apply_changes` moves
them into the folder:

* **Conflicts first.** Every path the changes touch was recorded as the
  preview found it (:attr:`.ChangeSet.before`); a path that differs now (a
  file you edited meanwhile, one that appeared inside a folder the command
  deleted or replaced) is a conflict. They are named all at once
  (:class:`PreviewConflictError`, as undo's ``RestoreConflictError``) and
  nothing is written unless the caller forces it.
* **Every write through** :class:`.FolderWriter`: the folder is walked by
  descriptors and no link in it is ever followed, not even one a program
  swaps in while Apply runs. Links are made as links (their text, never
  followed), files are copied from the upper layer descriptor to descriptor.
* **All or nothing per file**: each file, link or FIFO is made under a
  temporary name and renamed into place. A failure part way stops the apply
  and says what was applied before it (:class:`PreviewApplyError`); undo of
  the turn puts those back.

The order: deletions (deepest first, so a folder is empty before it goes;
an opaque folder's old contents are deletions already), folders, files,
links and FIFOs, hard links (once the name they join exists), then modes of
folders (last, so a read-only folder does not stop its own files).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

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
)
from desktop_agent.core.tooling.builtin.command_preview import CommandPreview, Decider
from desktop_agent.core.tooling.builtin.overlay_changes import LowerFolder, state_of

from .checkpoints import CheckpointError
from .folder_writer import FolderWriter

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_UPPER_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC


class PreviewConflictError(CheckpointError):
    """Paths changed in the folder after the preview ran; nothing was applied.

    Attributes:
        paths: The conflicting paths (relative to the working folder).
    """

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        shown = ", ".join(paths[:10]) + (f" and {len(paths) - 10} more" if len(paths) > 10
                                         else "")
        super().__init__(f"Not applied: {shown} changed after the command ran (by you or "
                         "another program). Apply anyway to overwrite them.")


class PreviewApplyError(CheckpointError):
    """Applying stopped part way; what was applied before stays (undo puts it back).

    Attributes:
        applied: Paths applied before the failure.
        failed: The path that could not be applied.
        remaining: How many changes were not applied.
    """

    def __init__(self, applied: list[str], failed: str, reason: str, remaining: int) -> None:
        self.applied = applied
        self.failed = failed
        self.remaining = remaining
        super().__init__(f"Applied {len(applied)} change{'' if len(applied) == 1 else 's'}, "
                         f"then {failed} could not be applied ({reason}); {remaining} "
                         f"change{'' if remaining == 1 else 's'} (that one included) were not "
                         "applied. Undo the turn to put back what was applied.")


@dataclass(slots=True)
class AppliedPreview:
    """What an apply did.

    Attributes:
        applied: Paths written, made, removed or changed, in the order done.
        overwritten: Conflicting paths overwritten because the apply was forced.
    """

    applied: list[str] = field(default_factory=list)
    overwritten: list[str] = field(default_factory=list)


def _same(now: PathState | None, then: PathState | None) -> bool:
    if now is None or then is None:
        return now is then
    if now.kind != then.kind or now.mode != then.mode:
        return False
    if now.kind == DIR:
        return True  # what a folder holds is checked entry by entry
    return (now.size, now.mtime_ns, now.ino) == (then.size, then.mtime_ns, then.ino)


def _covered(changes: ChangeSet) -> list[str]:
    """Folders whose every entry the changes account for: deleted, replaced, or opaque ones."""
    folders = list(changes.opaque)
    for change in changes.changes:
        removed = change.change == DELETED and change.kind == DIR
        replaced = change.old_kind == DIR and change.kind != DIR
        if removed or replaced:
            folders.append(change.path)
    return folders


def _going(changes: ChangeSet) -> tuple[set[str], tuple[str, ...]]:
    """Paths the changes remove, and the folders removed with all in them (as prefixes)."""
    paths = {c.path for c in changes.changes if c.change == DELETED}
    paths |= {c.renamed_from for c in changes.changes if c.change == RENAMED and c.renamed_from}
    prefixes = tuple(f"{c.path}/" for c in changes.changes
                     if c.change == DELETED and c.kind == DIR)
    return paths, prefixes


def find_conflicts(workdir: str, changes: ChangeSet) -> list[str]:
    """Paths the changes touch that are no longer as the preview found them. Blocking.

    A path the changes delete that is gone already is no conflict: the outcome is the same.
    """
    going, gone_with = _going(changes)
    fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        with LowerFolder(fd) as folder:
            found: set[str] = set()
            for rel, then in changes.before.items():
                info = folder.lstat(rel)
                if info is None and (rel in going or rel.startswith(gone_with)):
                    continue
                if not _same(None if info is None else state_of(info), then):
                    found.add(rel)
            made = {c.path for c in changes.changes}
            for top in _covered(changes):
                for rel, _info in folder.tree(top):
                    if rel not in changes.before and rel not in made:
                        found.add(rel)  # appeared inside since: Apply would remove it
            return sorted(found, key=lambda p: p.split("/"))
    finally:
        os.close(fd)


@contextlib.contextmanager
def _upper_file(upper: str, rel: str) -> Iterator[int]:
    fd = os.open(os.path.join(upper, rel), _UPPER_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{rel} is no longer a file in the preview")
        yield fd
    finally:
        os.close(fd)


def _steps(changes: ChangeSet) -> list[tuple[str, PathChange]]:
    """The changes as ordered steps ``(what, change)``: see the module docstring."""
    steps: list[tuple[str, PathChange]] = []
    removals = [c for c in changes.changes if c.change == DELETED]
    removals += [PathChange(c.renamed_from, DELETED, FILE) for c in changes.changes
                 if c.change == RENAMED and c.renamed_from and c.kind == FILE]
    for change in sorted(removals, key=lambda c: c.path.count("/"), reverse=True):
        steps.append(("remove", change))
    for change in changes.changes:
        if change.kind == DIR and change.change in (CREATED, MODIFIED):
            steps.append(("folder", change))
    for change in changes.changes:
        if change.change == DELETED or change.kind == DIR or change.hard_link_of:
            continue
        if change.change == MODE:
            steps.append(("mode", change))
        elif change.kind in (FILE, LINK, FIFO):
            steps.append((change.kind, change))
    steps.extend(("hard_link", c) for c in changes.changes
                 if c.hard_link_of and c.change != DELETED)
    folder_modes = [c for c in changes.changes if c.kind == DIR and c.change != DELETED]
    for change in sorted(folder_modes, key=lambda c: c.path.count("/"), reverse=True):
        steps.append(("mode", change))
    return steps


def apply_changes(workdir: str, upper: str, changes: ChangeSet, *,
                  force: bool = False) -> AppliedPreview:
    """Move the changes in the upper layer ``upper`` into the folder ``workdir``. Blocking.

    Raises:
        PreviewConflictError: Paths changed since the preview (named); nothing done.
        PreviewApplyError: A change could not be applied; the ones before it were.
    """
    conflicts = find_conflicts(workdir, changes)
    if conflicts and not force:
        raise PreviewConflictError(conflicts)
    done = AppliedPreview(overwritten=conflicts)
    steps = _steps(changes)
    with FolderWriter(workdir) as folder:
        for index, (what, change) in enumerate(steps):
            try:
                _apply_step(folder, upper, what, change)
            except OSError as exc:
                reason = exc.strerror or str(exc)
                raise PreviewApplyError(done.applied, change.path, reason,
                                        len(steps) - index) from exc
            if what != "mode" or change.change == MODE:
                done.applied.append(change.path)
    return done


def _apply_step(folder: FolderWriter, upper: str, what: str, change: PathChange) -> None:
    rel = change.path
    if what == "remove":
        folder.remove_tree(rel)
    elif what == "folder":
        folder.make_dir(rel)
    elif what == FILE:
        with _upper_file(upper, rel) as source:
            folder.copy_file(rel, source, change.mode if change.mode is not None else 0o644)
    elif what == LINK:
        folder.symlink(rel, change.target or "")
    elif what == FIFO:
        folder.make_fifo(rel, change.mode if change.mode is not None else 0o644)
    elif what == "hard_link":
        folder.hard_link(rel, change.hard_link_of or "")
    elif what == "mode" and change.mode is not None:
        folder.chmod(rel, change.mode)


def apply_preview(preview: CommandPreview, *, force: bool = False) -> AppliedPreview:
    """Apply a :class:`.CommandPreview` to its working folder (see :func:`apply_changes`)."""
    return apply_changes(str(preview.workdir), str(preview.layers.upper), preview.changes,
                         force=force)


Choice = Callable[[CommandPreview], Awaitable[bool | str]]
"""A script's answer to a preview: True applies it; False or a reason (text) discards it."""


def applying_decider(choose: Choice, *, force: bool = False) -> Decider:
    """A ``decide`` for :class:`.CommandPreviews` in a script: apply when ``choose`` says so.

    The SDK's bash tool previews with it::

        async def choose(preview):
            if any(c.change == "deleted" for c in preview.changes.changes):
                return "deletions need a person"
            return True

        tools = builtin_tools(workdir, previews=CommandPreviews(
            Path("/var/tmp/previews"), applying_decider(choose)))

    A conflict (files changed since the command ran) discards the preview
    unless ``force``; the model reads why.
    """
    async def decide(preview: CommandPreview) -> str:
        answer = await choose(preview)
        if answer is not True:
            reason = answer if isinstance(answer, str) and answer.strip() \
                else "the script chose not to apply the changes"
            return f"discarded: {reason}"
        try:
            applied = await asyncio.to_thread(apply_preview, preview, force=force)
        except PreviewConflictError as exc:
            return f"discarded: {exc}"
        except PreviewApplyError as exc:
            return f"partly applied: {exc}"
        return "applied" + (f" (overwriting {len(applied.overwritten)} changed meanwhile)"
                            if applied.overwritten else "")

    return decide
