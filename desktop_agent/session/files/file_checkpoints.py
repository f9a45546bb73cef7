"""A conversation's checkpoints of its working folder: record before tools, undo, restore.

The one implementation behind the window's Undo and Restore and the REST
routes (:mod:`desktop_agent.workspace.checkpoints` does the disk work, Qt-free
and knowing no conversation). Before each tool round that may change the
folder (any call to a tool not marked read-only: built-in writes and edits,
``bash``, every MCP tool) and around each REST ``/commands`` call, a
checkpoint is recorded; at the end of the turn (or command) the files it
changed are recorded with it.

Checkpoints live in ``<data folder>/checkpoints/<conversation id>/`` (never
in the working folder), survive restarts, are deleted with the conversation
(:mod:`~desktop_agent.session.lifecycle.deletion`) and are pruned after each turn to the latest
:data:`~desktop_agent.workspace.checkpoints.KEEP_TURNS` turns (README,
"Checkpoints"). Every method that touches the disk runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_agent.session.files.checkpoint_paths import checkpoints_folder
from desktop_agent.session.settings.conversation_secrets import MIN_BLANKED_LENGTH
from desktop_agent.session.tools.tool_catalog import WorkdirError
from desktop_agent.workspace.checkpoints import (
    KEEP_TURNS,
    PRUNE_SLACK,
    Checkpoint,
    CheckpointError,
    CheckpointStore,
    FileChange,
    RestoreConflictError,
    RestoreReport,
    TurnChanges,
)
from desktop_agent.workspace.folder_scan import FILE, HOLDS_SECRET, LINK, SKIPPED, Entry, Limits

if TYPE_CHECKING:
    from desktop_agent.core.tooling.tools import Tool
    from desktop_agent.core.types import ToolUseBlock
    from desktop_agent.workspace.diffs import FileDiff

log = logging.getLogger("desktop_agent.session.checkpoints")

__all__ = ["Checkpoint", "CheckpointError", "ConversationCheckpoints", "FileChange",
           "FileChangeView",
           "RestoreConflictError", "RestoreReport", "TurnChanges", "TurnMark",
           "checkpoints_folder", "delete_checkpoints"]


def delete_checkpoints(conversation_id: str) -> None:
    """Remove a deleted conversation's checkpoints (blocking)."""
    shutil.rmtree(checkpoints_folder(conversation_id), ignore_errors=True)


def limits_from(settings: Mapping[str, Any], secrets: Collection[str] = ()) -> Limits:
    """What checkpoints leave out: caps, ``checkpoint_excluded`` folders, files holding ``secrets``.

    The caps are the defaults (README); the folders are the conversation's setting.
    """
    excluded = settings.get("checkpoint_excluded") or ()
    return Limits(excluded=frozenset(str(e).strip("/") for e in excluded if str(e).strip("/")),
                  holds_secret=holds_any_of(secrets) if secrets else None)


def holds_any_of(secrets: Collection[str]) -> Callable[[bytes], bool]:
    """Whether a file's bytes hold one of ``secrets`` in any of its forms."""
    from desktop_agent.core.secret_forms import contains_secret

    values = tuple(secrets)
    return lambda data: contains_secret(data.decode("utf-8", errors="replace"), values)


@dataclass(slots=True)
class TurnMark:
    """One turn (or REST command) being recorded.

    Attributes:
        turn: Its id in the checkpoint journal.
        message: The user message it answers (None for a command).
        kind: ``turn`` or ``command``.
        notes: Sentences about files left out of its checkpoints (caps).
        recorded: Whether it took a checkpoint (else there is nothing to close).
    """

    turn: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    message: str | None = None
    kind: str = "turn"
    notes: list[str] = field(default_factory=list)
    recorded: bool = False


@dataclass(frozen=True, slots=True)
class FileChangeView:
    """One file a turn changed, with its diff when it has one (for the window and REST)."""

    path: str
    change: str
    kind: str
    diff: FileDiff | None
    summary: str


class ConversationCheckpoints:
    """The checkpoints of one conversation, used by its session.

    Args:
        conversation_id: The conversation.
        workdir: Returns its working folder now, created if missing (blocking).
        settings: Returns its settings as last read.
        secret_marks: Returns its secret values and their marks (blocking): blanked
            out of every diff shown.
    """

    def __init__(self, conversation_id: str, workdir: Callable[[], Path],
                 settings: Callable[[], Mapping[str, Any]],
                 secret_marks: Callable[[], Mapping[str, str]] = dict) -> None:
        self._conversation_id = conversation_id
        self._workdir = workdir
        self._settings = settings
        self._secret_marks = secret_marks
        self._store = CheckpointStore(checkpoints_folder(conversation_id))

    @property
    def store(self) -> CheckpointStore:
        """The Qt-free store (for reading in a worker thread)."""
        self._store.limits = limits_from(self._settings())
        return self._store

    def _recording_store(self) -> CheckpointStore:
        """The store, set to record: it keeps no file holding a secret (blocking: the keyring).

        For every call that scans the folder (a checkpoint, a turn's end, a
        restore). The values are read at each one: a secret set a moment ago
        counts for the next scan.
        """
        self._store.limits = limits_from(self._settings(), tuple(self._secret_marks()))
        return self._store

    # -- recording ---------------------------------------------------------------------
    async def before_round(self, mark: TurnMark, calls: Sequence[ToolUseBlock],
                           tool_named: Callable[[str], Tool | None]) -> None:
        """Record a checkpoint unless every call is to a read-only tool.

        A failure is logged and noted, never raised: a turn is not stopped
        because its folder could not be recorded (the note says undo cannot
        cover that round).
        """
        if all((t := tool_named(c.name)) is not None and t.read_only for c in calls):
            return
        await self._record(mark, "tool_round")

    async def before_command(self, mark: TurnMark) -> None:
        """Record a checkpoint before a REST command runs."""
        await self._record(mark, "command")

    async def _record(self, mark: TurnMark, kind: str) -> None:
        def take() -> Checkpoint:
            return self._recording_store().checkpoint(self._workdir(), kind=kind, turn=mark.turn,
                                         message=mark.message)

        try:
            taken = await asyncio.to_thread(take)
        except Exception as exc:  # a checkpoint never stops the turn: it is said instead
            log.warning("no checkpoint before a tool round: %s", exc,
                        exc_info=not isinstance(exc, OSError | CheckpointError | WorkdirError))
            mark.notes.append(f"No checkpoint could be taken before these tools ran ({exc}); "
                              "undo cannot bring back what they changed.")
            return
        mark.recorded = True
        mark.notes.extend(n for n in taken.notes if n not in mark.notes)

    async def close(self, mark: TurnMark) -> TurnChanges | None:
        """Record what the turn changed (None: it took no checkpoint), then prune."""
        if not mark.recorded:
            return None

        def close() -> TurnChanges | None:
            store = self._recording_store()
            closed = store.close_turn(self._workdir(), mark.turn, message=mark.message,
                                      kind=mark.kind)
            store.prune(KEEP_TURNS, PRUNE_SLACK)
            return closed

        try:
            return await asyncio.to_thread(close)
        except Exception as exc:  # the turn's record is kept whatever happens here
            log.warning("the turn's changes could not be recorded: %s", exc,
                        exc_info=not isinstance(exc, OSError | CheckpointError | WorkdirError))
            return None

    # -- reading -----------------------------------------------------------------------
    async def checkpoints(self) -> list[Checkpoint]:
        """Every checkpoint, oldest first."""
        return await asyncio.to_thread(lambda: self.store.checkpoints())

    async def turns(self) -> list[TurnChanges]:
        """Every recorded turn with the files it changed, oldest first."""
        return await asyncio.to_thread(lambda: self.store.turns())

    async def file_changes(self, turn: TurnChanges) -> list[FileChangeView]:
        """The files ``turn`` changed, each with its diff (files) or a sentence."""
        return await asyncio.to_thread(self._views, turn)

    def _views(self, turn: TurnChanges) -> list[FileChangeView]:
        from desktop_agent.session.files.file_changes import blanker
        from desktop_agent.workspace.diffs import diff_bytes

        blank = blanker(self._secret_marks())
        store = self.store
        before = store.entries_of(turn.before)
        after = store.entries_of(turn.after)
        views: list[FileChangeView] = []
        for change in turn.changes:
            old, new = before.get(change.path), after.get(change.path)
            if (old is None or old.kind == FILE) and (new is None or new.kind == FILE) \
                    and (old or new):
                try:
                    diff = diff_bytes(change.path, _contents(store, old), _contents(store, new),
                                      blank=blank)
                except FileNotFoundError:
                    dropped = store.objects.dropped
                    held = any(e is not None and e.digest in dropped for e in (old, new))
                    views.append(FileChangeView(
                        change.path, change.change, change.kind, None,
                        f"{change.path} could not be kept in the checkpoint because it holds a "
                        "secret: its change is not shown and undo leaves it as it is." if held
                        else f"{change.path}: its contents were pruned."))
                    continue
                views.append(FileChangeView(change.path, change.change, change.kind, diff,
                                            diff.summary))
            else:
                views.append(FileChangeView(change.path, change.change, change.kind, None,
                                            _summary(change.path, change.change, old, new)))
        return views

    # -- restoring ---------------------------------------------------------------------
    async def undo_turn(self, turn: str | None, *, force: bool = False) -> RestoreReport:
        """Undo ``turn`` (None: the latest turn that changed files).

        Raises:
            RestoreConflictError: Files changed since (named); nothing was done.
            CheckpointError: Nothing to undo, or the folder moved.
        """
        def undo() -> RestoreReport:
            store = self._recording_store()
            chosen = turn
            if chosen is None:
                changed = [t for t in store.turns() if t.changes]
                if not changed:
                    raise CheckpointError("No turn of this conversation changed files, "
                                          "so there is nothing to undo.")
                chosen = changed[-1].turn
            return store.undo_turn(self._workdir(), chosen, force=force)

        return await asyncio.to_thread(undo)

    async def restore_before(self, message_ids: Sequence[str], *,
                             force: bool = False) -> RestoreReport | None:
        """Put files back as they were before the first turn answering one of ``message_ids``.

        ``message_ids``: the message and every later one on its branch. None
        when no turn since changed files (nothing to do).

        Raises:
            RestoreConflictError: Files changed since (named); nothing was done.
        """
        wanted = set(message_ids)

        def restore() -> RestoreReport | None:
            store = self._recording_store()
            first = next((c for c in store.checkpoints() if c.message in wanted), None)
            if first is None:
                return None
            return store.restore_to(self._workdir(), first.id, force=force)

        return await asyncio.to_thread(restore)

    async def restore_plan(self, message_ids: Sequence[str]) -> tuple[FileChange, ...]:
        """What :meth:`restore_before` would change (nothing yet): see ``restore_plan``.

        Empty when no turn since changed files.
        """
        wanted = set(message_ids)

        def plan() -> tuple[FileChange, ...]:
            store = self.store
            first = next((c for c in store.checkpoints() if c.message in wanted), None)
            return () if first is None else store.restore_plan(self._workdir(), first.id)

        return await asyncio.to_thread(plan)

    async def restore_to(self, checkpoint_id: str, *, force: bool = False) -> RestoreReport:
        """Put files back as they were at ``checkpoint_id``.

        Raises:
            RestoreConflictError: Files changed since (named); nothing was done.
            CheckpointError: No such checkpoint, or the folder moved.
        """
        return await asyncio.to_thread(
            lambda: self._recording_store().restore_to(self._workdir(), checkpoint_id, force=force))

    async def forget_secret(self, values: Collection[str]) -> int:
        """Drop every checkpointed content holding one of ``values``; how many were dropped.

        Called when a secret is set (files checkpointed before it was a secret
        hold it) and when one is deleted (no copy outlives it in the data folder).
        """
        values = [v for v in values if len(v) >= MIN_BLANKED_LENGTH]
        if not values or not checkpoints_folder(self._conversation_id).is_dir():
            return 0
        holds = holds_any_of(values)
        return await asyncio.to_thread(lambda: self._store.drop_contents(holds))

    async def size_bytes(self) -> int:
        """Bytes the checkpoints take in the data folder."""
        return await asyncio.to_thread(lambda: self.store.size_bytes())


def _contents(store: CheckpointStore, entry: Entry | None) -> bytes | None:
    return None if entry is None else store.read_contents(entry)


def _summary(path: str, change: str, old: Entry | None, new: Entry | None) -> str:
    """A sentence for what has no line diff: folders, links, files over a cap."""
    entry = new or old
    if any(e is not None and e.kind == SKIPPED and e.digest == HOLDS_SECRET for e in (old, new)):
        return (f"{path} could not be checkpointed because it holds a secret: its change is "
                "not shown and undo leaves it as it is.")
    if entry is not None and entry.kind == SKIPPED:
        return f"{path} is over a checkpoint cap: its change is not recorded and undo leaves it."
    if new is not None and new.kind == LINK:
        return f"{path} is a link to {new.digest} ({change})."
    if old is not None and old.kind == LINK and new is None:
        return f"{path}, a link to {old.digest}, was deleted."
    noun = "Folder" if entry is not None and entry.kind == "dir" else "Path"
    return f"{noun} {path} {change}."
