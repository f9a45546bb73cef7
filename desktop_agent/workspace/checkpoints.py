"""Checkpoints of a working folder, kept outside it, to undo a turn or restore to a point.

A :class:`CheckpointStore` lives in a folder of the app's data folder (one
per conversation; never inside the working folder, and it never reads or
writes a ``.git``). It holds:

- ``objects/``: file contents by SHA-256 (:mod:`.object_store`, which says
  why our own files and not a git object store);
- ``manifests/``: one JSON file per distinct state of the folder (every
  path's kind, mode, size, mtime, inode and digest, :mod:`.folder_scan`);
- ``journal.jsonl``: in time order, each checkpoint (which manifest, which
  working folder, for which turn and message) and each closed turn (its
  first and last checkpoint and the paths that changed between them).

A checkpoint of an unchanged folder writes no object and no manifest: the
scan reuses the previous digests (size + mtime + inode) and the journal
points at the previous manifest again.

Restoring puts back only paths that recorded turns changed (an undo: that
turn's paths; a restore to a checkpoint: every turn's paths since), so a
file nobody recorded a change to is never touched. A path whose state now
differs from the last recorded one was changed by something else after the
agent: a conflict, reported by name (:class:`RestoreConflictError`) and
overwritten only when the caller forces it. A restore is recorded as a turn
of its own, so it can be undone too.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .folder_restore import AppliedRestore, apply_restore
from .folder_scan import FILE, Entry, Limits, Manifest, ScanResult, same_state, scan_folder
from .folder_writer import FolderWriter
from .object_store import ObjectStore

KEEP_TURNS = 50
"""Pruning keeps the checkpoints of a conversation's latest turns (undo, restore) this many."""

PRUNE_SLACK = 10
"""Turns beyond :data:`KEEP_TURNS` allowed before pruning runs (it reads every manifest)."""
_MANIFESTS_KEPT = 4
_DELTA_DEPTH = 16


class CheckpointError(Exception):
    """A checkpoint cannot be taken or used; the message is a sentence for the person."""


class RestoreConflictError(CheckpointError):
    """Files changed by something else after the agent's change; nothing was restored.

    Attributes:
        paths: The conflicting paths (relative to the working folder).
    """

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        shown = ", ".join(paths[:10]) + (f" and {len(paths) - 10} more" if len(paths) > 10
                                         else "")
        super().__init__(f"Not restored: {shown} changed after the agent's change (by you or "
                         "another program). Restore anyway to overwrite them.")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One recorded state of the working folder.

    Attributes:
        id: Its id in the journal.
        manifest: The id of its manifest (equal ids: equal folders).
        workdir: The folder it recorded.
        at: When (seconds since the epoch).
        kind: Why: ``tool_round``, ``command``, ``turn_end``, ``restore``.
        turn: The turn it belongs to.
        message: The message that turn answers, if any.
        notes: Sentences about what was left out (caps).
    """

    id: str
    manifest: str
    workdir: str
    at: float
    kind: str
    turn: str
    message: str | None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FileChange:
    """One path a turn changed: ``added``, ``modified`` or ``deleted`` (and what it is)."""

    path: str
    change: str
    kind: str


@dataclass(frozen=True, slots=True)
class TurnChanges:
    """A closed turn: what it changed between its first and last checkpoint.

    Attributes:
        turn: The turn's id.
        message: The message it answered (None: a command, a restore).
        kind: ``turn``, ``command`` or ``restore``.
        before: The checkpoint before its first change.
        after: The checkpoint at its end.
        changes: The changed paths, sorted.
    """

    turn: str
    message: str | None
    kind: str
    before: str
    after: str
    changes: tuple[FileChange, ...]


@dataclass(slots=True)
class RestoreReport:
    """What a restore did; ``turn`` is the restore's own turn (undo it to go back)."""

    turn: TurnChanges | None
    applied: AppliedRestore = field(default_factory=AppliedRestore)
    overwritten: list[str] = field(default_factory=list)


def _changes(before: Manifest, after: Manifest) -> tuple[FileChange, ...]:
    found: list[FileChange] = []
    for path, entry in after.items():
        old = before.get(path)
        if old is None:
            found.append(FileChange(path, "added", entry.kind))
        elif not same_state(old, entry):
            found.append(FileChange(path, "modified", entry.kind))
    found.extend(FileChange(p, "deleted", e.kind) for p, e in before.items() if p not in after)
    return tuple(sorted(found, key=lambda c: c.path))


class CheckpointStore:
    """The checkpoints of one conversation's working folder(s).

    Blocking (disk reads and writes): call it from a worker thread. Several
    processes may share one store (the window and ``serve``); journal writes
    take a file lock.

    Args:
        root: The store's folder (in the app's data folder, not the working folder).
        limits: Caps and exclusions for new checkpoints.
    """

    def __init__(self, root: Path, limits: Limits | None = None) -> None:
        self.root = root
        self.limits = limits or Limits()
        self.objects = ObjectStore(root / "objects")
        self._manifests: dict[str, tuple[dict[str, Entry], int]] = {}
        self._bases: dict[str, tuple[str | None, int]] = {}  # manifest -> (base, depth)
        self._journal_key: tuple[int, int] | None = None
        self._journal: list[dict[str, Any]] = []

    # -- the journal --------------------------------------------------------------------
    @property
    def _journal_path(self) -> Path:
        return self.root / "journal.jsonl"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(self.root / "lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _records(self) -> list[dict[str, Any]]:
        try:
            st = self._journal_path.stat()
        except FileNotFoundError:
            self._journal, self._journal_key = [], None
            return []
        key = (st.st_size, st.st_mtime_ns)
        if key != self._journal_key:
            records = []
            for line in self._journal_path.read_text("utf-8").splitlines():
                with contextlib.suppress(ValueError):  # a torn last line after a crash
                    records.append(json.loads(line))
            self._journal, self._journal_key = records, key
        return self._journal

    def _append(self, record: dict[str, Any]) -> None:
        records = self._records()  # current (one stat when nothing changed), then extended
        with open(self._journal_path, "a", encoding="utf-8") as out:
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
            out.flush()
            st = os.fstat(out.fileno())
        records.append(record)
        self._journal, self._journal_key = records, (st.st_size, st.st_mtime_ns)

    # -- manifests ----------------------------------------------------------------------
    def _manifest(self, manifest_id: str) -> tuple[dict[str, Entry], int]:
        cached = self._manifests.get(manifest_id)
        if cached is None:
            path = self.root / "manifests" / f"{manifest_id}.json"
            try:
                raw = json.loads(path.read_bytes())
                base = raw.get("base")
                entries = dict(self._manifest(base)[0]) if base else {}
                for removed in raw.get("removed", ()):
                    entries.pop(removed, None)
                entries.update({p: Entry(*e) for p, e in raw["entries"].items()})
                cached = (entries, int(raw["scanned_ns"]))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise CheckpointError("That checkpoint's record is missing or damaged "
                                      "(the data folder was changed by hand?).") from exc
            self._bases[manifest_id] = (base, int(raw.get("depth", 0)))
            self._remember(manifest_id, cached)
        return cached

    def _raw_manifest(self, manifest_id: str) -> dict[str, Any]:
        try:
            raw: dict[str, Any] = json.loads(
                (self.root / "manifests" / f"{manifest_id}.json").read_bytes())
        except (OSError, ValueError):
            return {}
        return raw

    def _remember(self, manifest_id: str, manifest: tuple[dict[str, Entry], int]) -> None:
        """Keep a few manifests read (the newest first in line for the next scan)."""
        self._manifests[manifest_id] = manifest
        while len(self._manifests) > _MANIFESTS_KEPT:
            del self._manifests[next(iter(self._manifests))]

    def _save_manifest(self, entries: dict[str, Entry], scanned_ns: int,
                       previous: str | None) -> str:
        """Write a manifest: as the paths that differ from ``previous`` when that is cheaper.

        Why deltas: writing 10,000 entries as JSON costs more than scanning
        them; a checkpoint after a few changes writes those few. A chain is
        cut at :data:`_DELTA_DEPTH` (a full manifest), so reading one back
        reads a bounded number of files.
        """
        manifest_id = uuid.uuid4().hex
        folder = self.root / "manifests"
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        body: dict[str, Any] = {"scanned_ns": scanned_ns, "entries": entries}
        base: tuple[str | None, int] = (None, 0)
        known = self._manifests.get(previous) if previous else None
        depth = self._bases.get(previous, (None, _DELTA_DEPTH))[1] if previous else 0
        if known is not None and depth < _DELTA_DEPTH:
            old = known[0]
            changed = {p: e for p, e in entries.items()
                       if (o := old.get(p)) is not e and o != e}
            removed = [p for p in old if p not in entries]
            if len(changed) + len(removed) < len(entries) // 4:
                body = {"scanned_ns": scanned_ns, "base": previous, "depth": depth + 1,
                        "entries": changed, "removed": removed}
                base = (previous, depth + 1)
        temporary = folder / f".{manifest_id}.tmp"
        temporary.write_bytes(json.dumps(body, separators=(",", ":")).encode())
        os.replace(temporary, folder / f"{manifest_id}.json")
        self._bases[manifest_id] = base
        self._remember(manifest_id, (entries, scanned_ns))
        return manifest_id

    # -- reading ------------------------------------------------------------------------
    def checkpoints(self) -> list[Checkpoint]:
        """Every checkpoint, oldest first."""
        return [_checkpoint(r) for r in self._records() if r.get("type") == "checkpoint"]

    def turns(self) -> list[TurnChanges]:
        """Every closed turn that changed files or not, oldest first."""
        return [_turn(r) for r in self._records() if r.get("type") == "turn"]

    def entries_of(self, checkpoint_id: str) -> Mapping[str, Entry]:
        """The paths a checkpoint recorded."""
        return self._manifest(self._find(checkpoint_id).manifest)[0]

    def read_contents(self, entry: Entry) -> bytes:
        """A recorded file's bytes (for diffs)."""
        return self.objects.read(entry.digest)

    def _find(self, checkpoint_id: str) -> Checkpoint:
        for record in self._records():
            if record.get("type") == "checkpoint" and record["id"] == checkpoint_id:
                return _checkpoint(record)
        raise CheckpointError("There is no such checkpoint (it may have been pruned).")

    def size_bytes(self) -> int:
        """Bytes the store takes on disk (it counts in the data folder's size)."""
        total = 0
        for folder, _dirs, files in os.walk(self.root):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(folder, name)).st_size
        return total

    # -- recording ----------------------------------------------------------------------
    def checkpoint(self, workdir: Path, *, kind: str, turn: str,
                   message: str | None = None) -> Checkpoint:
        """Record the working folder as it is now.

        Raises:
            CheckpointError: The folder is not a folder.
        """
        folder = str(workdir)
        if not os.path.isdir(folder):
            raise CheckpointError(f"The working folder {folder} does not exist, so no "
                                  "checkpoint of it can be taken.")
        with self._locked():
            previous = self._latest(folder)
            old_entries, old_ns = self._manifest(previous.manifest) if previous else ({}, 0)
            result = scan_folder(folder, old_entries, old_ns, self.limits, self.objects)
            record = self._record(folder, result, previous, kind=kind, turn=turn,
                                  message=message)
        return _checkpoint(record)

    def _record(self, folder: str, result: ScanResult, previous: Checkpoint | None, *,
                kind: str, turn: str, message: str | None) -> dict[str, Any]:
        """Journal a scan (under the lock); an unchanged folder reuses the previous manifest."""
        if previous is not None and (result.unchanged or
                                     result.entries == self._manifest(previous.manifest)[0]):
            manifest_id = previous.manifest
        else:
            manifest_id = self._save_manifest(result.entries, result.scanned_ns,
                                              previous.manifest if previous else None)
        record = {"type": "checkpoint", "id": uuid.uuid4().hex[:16], "manifest": manifest_id,
                  "workdir": folder, "at": result.scanned_ns / 1e9, "kind": kind,
                  "turn": turn, "message": message, "notes": result.notes}
        self._append(record)
        return record

    def _latest(self, folder: str) -> Checkpoint | None:
        for record in reversed(self._records()):
            if record.get("type") == "checkpoint" and record["workdir"] == folder:
                return _checkpoint(record)
        return None

    def close_turn(self, workdir: Path, turn: str, *, message: str | None = None,
                   kind: str = "turn") -> TurnChanges | None:
        """Record the folder at the end of ``turn`` and what the turn changed.

        Returns None when the turn took no checkpoint (no tool ran).
        """
        first = next((c for c in self.checkpoints() if c.turn == turn), None)
        if first is None:
            return None
        after = self.checkpoint(workdir, kind="turn_end", turn=turn, message=message)
        return self._journal_turn(first, after, kind)

    def _journal_turn(self, first: Checkpoint, after: Checkpoint, kind: str) -> TurnChanges:
        changes = _changes(self._manifest(first.manifest)[0], self._manifest(after.manifest)[0])
        record = {"type": "turn", "turn": first.turn, "message": first.message, "kind": kind,
                  "before": first.id, "after": after.id,
                  "changes": [[c.path, c.change, c.kind] for c in changes]}
        with self._locked():
            self._append(record)
        return _turn(record)

    # -- restoring ----------------------------------------------------------------------
    def undo_turn(self, workdir: Path, turn: str, *, force: bool = False) -> RestoreReport:
        """Put back what ``turn`` changed, as it was before the turn.

        Raises:
            RestoreConflictError: Some of those files changed since (nothing done).
            CheckpointError: No such turn, or it worked in another folder.
        """
        found = next((t for t in self.turns() if t.turn == turn), None)
        if found is None:
            raise CheckpointError("That turn changed no files the app recorded, "
                                  "so there is nothing to undo.")
        return self._restore(workdir, self._find(found.before),
                             {c.path for c in found.changes}, force)

    def restore_to(self, workdir: Path, checkpoint_id: str, *,
                   force: bool = False) -> RestoreReport:
        """Put back every path that turns changed since ``checkpoint_id``, as it was then.

        Raises:
            RestoreConflictError: Some of those files changed since (nothing done).
            CheckpointError: No such checkpoint, or it recorded another folder.
        """
        target = self._find(checkpoint_id)
        return self._restore(workdir, target, self._changed_since(target), force)

    def restore_plan(self, workdir: Path, checkpoint_id: str) -> tuple[FileChange, ...]:
        """What :meth:`restore_to` would change, read from the record (not from the folder).

        Each path as the restore's own turn would record it: ``deleted`` (it
        goes: made since), ``added`` (it comes back: deleted since) or
        ``modified`` (put back). A file changed by hand since is not told apart
        here: the restore itself finds it and asks first.

        Raises:
            CheckpointError: No such checkpoint, or it recorded another folder.
        """
        target = self._find(checkpoint_id)
        self._check_folder(target, str(workdir))
        paths = self._changed_since(target)
        with self._locked():
            latest = self._latest(target.workdir)
            expected = self._manifest(latest.manifest)[0] if latest else {}
            wanted = self._manifest(target.manifest)[0]
        return _changes({p: e for p in paths if (e := expected.get(p)) is not None},
                        {p: e for p in paths if (e := wanted.get(p)) is not None})

    def _changed_since(self, target: Checkpoint) -> set[str]:
        """Every path a turn changed from ``target`` on."""
        order = {c.id: i for i, c in enumerate(self.checkpoints())}
        since = order[target.id]
        return {c.path for t in self.turns() if order.get(t.before, -1) >= since
                for c in t.changes}

    @staticmethod
    def _check_folder(target: Checkpoint, folder: str) -> None:
        if target.workdir != folder:
            raise CheckpointError(f"That checkpoint recorded {target.workdir}; the conversation "
                                  f"now works in {folder}, so it cannot be restored there.")

    def _restore(self, workdir: Path, target: Checkpoint, paths: set[str],
                 force: bool) -> RestoreReport:
        folder = str(workdir)
        self._check_folder(target, folder)
        turn = f"restore-{uuid.uuid4().hex[:12]}"
        with self._locked():
            expected_at = self._latest(folder)
            expected, expected_ns = (self._manifest(expected_at.manifest) if expected_at
                                     else ({}, 0))
            wanted = self._manifest(target.manifest)[0]
            # Only paths the recorded turns left unlike the target: what the agent did.
            paths = {p for p in paths if not same_state(expected.get(p), wanted.get(p))}
            now = scan_folder(folder, expected, expected_ns, self.limits, self.objects)
            todo = sorted(p for p in paths if not same_state(now.entries.get(p), wanted.get(p)))
            conflicts = [p for p in todo
                         if not same_state(now.entries.get(p), expected.get(p))]
            if conflicts and not force:
                raise RestoreConflictError(conflicts)
            if not todo:
                return RestoreReport(None)
            first = _checkpoint(self._record(folder, now, expected_at, kind="restore",
                                             turn=turn, message=None))
            started = time.time_ns()
            applied = apply_restore(folder, todo, wanted, now.entries, self.objects)
            # What was written is known: recorded without reading the files back.
            after = ScanResult(_after_restore(folder, now.entries, wanted, applied), started)
            last = _checkpoint(self._record(folder, after, first, kind="turn_end", turn=turn,
                                            message=None))
        return RestoreReport(self._journal_turn(first, last, "restore"), applied, conflicts)

    def drop_contents(self, holds: Callable[[bytes], bool]) -> int:
        """Drop every stored content ``holds`` accepts (it holds a secret); how many.

        For a secret set (or deleted) after files holding it were checkpointed:
        the data folder keeps no copy of it. Those files' earlier versions can
        then be neither shown nor restored (undo leaves them as they are).
        """
        with self._locked():
            return len(self.objects.remove_matching(holds))

    # -- pruning ------------------------------------------------------------------------
    def prune(self, keep_turns: int = KEEP_TURNS, slack: int = 0) -> int:
        """Keep the latest ``keep_turns`` turns' checkpoints; return the bytes freed.

        ``slack``: do nothing until there are that many turns more than
        ``keep_turns`` (so a long conversation prunes every few turns, not
        after each one).

        The policy (README, "Checkpoints"): older turns can no longer be
        undone nor restored to; contents no remaining checkpoint uses are
        deleted. Checkpoints of the latest state are always kept.
        """
        with self._locked():
            records = self._records()
            turns = [r for r in records if r.get("type") == "turn"]
            if len(turns) <= keep_turns + slack:
                return 0
            kept_turns = {r["turn"] for r in turns[-keep_turns:]}
            checkpoints = [r for r in records if r.get("type") == "checkpoint"]
            newest = checkpoints[-1]["id"] if checkpoints else None
            kept = [r for r in records
                    if r.get("turn") in kept_turns or r.get("id") == newest]
            temporary = self._journal_path.with_suffix(".tmp")
            temporary.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n"
                                         for r in kept), "utf-8")
            os.replace(temporary, self._journal_path)
            # Each manifest file, full or delta, names its own entries: the union over the
            # kept ones and their bases is every content a kept checkpoint can need.
            used_objects: set[str] = set()
            used_manifests: set[str] = set()
            pending = [r["manifest"] for r in kept if r.get("type") == "checkpoint"]
            while pending:
                manifest = pending.pop()
                if manifest in used_manifests:
                    continue
                used_manifests.add(manifest)
                raw = self._raw_manifest(manifest)
                used_objects.update(e[5] for e in raw.get("entries", {}).values()
                                    if e[0] == FILE)
                if raw.get("base"):
                    pending.append(raw["base"])
            freed = 0
            for path in (self.root / "manifests").glob("*.json"):
                if path.stem not in used_manifests:
                    freed += path.stat().st_size
                    path.unlink()
                    self._manifests.pop(path.stem, None)
            return freed + self.objects.remove_unused(used_objects)

    def delete(self) -> None:
        """Remove the store and everything in it (its conversation was deleted)."""
        shutil.rmtree(self.root, ignore_errors=True)
        self._manifests.clear()
        self._journal, self._journal_key = [], None


def _after_restore(folder: str, now: Mapping[str, Entry], wanted: Mapping[str, Entry],
                   applied: AppliedRestore) -> dict[str, Entry]:
    """The folder's entries once ``applied``: ``now`` with what was removed and written."""
    after = dict(now)
    for rel in applied.removed:
        after.pop(rel, None)
    with FolderWriter(folder) as written:  # its stat never reads through a link swapped in
        for rel in applied.restored:
            entry = wanted[rel]
            try:
                st = written.stat(rel)
            except OSError:
                st = None
            if st is None:
                after.pop(rel, None)
                continue
            after[rel] = Entry(entry.kind, entry.mode, st.st_size if entry.kind == FILE else 0,
                               st.st_mtime_ns, st.st_ino, entry.digest)
    return after


def _checkpoint(record: Mapping[str, Any]) -> Checkpoint:
    return Checkpoint(record["id"], record["manifest"], record["workdir"], record["at"],
                      record["kind"], record["turn"], record.get("message"),
                      tuple(record.get("notes") or ()))


def _turn(record: Mapping[str, Any]) -> TurnChanges:
    return TurnChanges(record["turn"], record.get("message"), record.get("kind", "turn"),
                       record["before"], record["after"],
                       tuple(FileChange(*c) for c in record["changes"]))
