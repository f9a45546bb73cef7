"""The window's side of undo and restore: session calls in, sentences and signals out.

Undo this turn, Restore files and the Files changed panel all go through the
session (:meth:`ConversationSession.undo_turn`, ``restore_files``, its
``checkpoints``), the same calls the REST routes make. This adapter turns
their outcomes and typed refusals into :class:`RestoreOutcome` sentences
for the widgets, and the session's ``FilesChanged`` events into a signal.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from desktop_agent.gui.conversation.restore_wording import (
    EARLIER_CHANGES,
    Undone,
    name_list,
    restore_summary,
    shown_files,
)
from desktop_agent.gui.loop_work import OwnedTasks
from desktop_agent.session import BUSY_ELSEWHERE, FilesChanged, SessionError, SessionEvent
from desktop_agent.store.errors import ConversationBusyError

if TYPE_CHECKING:
    from desktop_agent.session import (
        ConversationSession,
        FileChange,
        FileChangeView,
        RestoreReport,
        TurnChanges,
    )
    from desktop_agent.store import Store

log = logging.getLogger("desktop_agent.gui.folder_undo")

LABEL_LENGTH = 60
"""Characters of a turn's message shown as its name in the Files changed panel."""


@dataclass(frozen=True, slots=True)
class RestoreOutcome:
    """What an undo or restore did, in words.

    Attributes:
        sentence: For the person.
        conflicts: Files changed after the agent's change (nothing was done);
            asking again with ``force`` overwrites them.
        done: Files were put back (the restore, a turn of its own, can be undone).
        carried_out: The session did what was asked (even if no file needed
            putting back); False when it refused, asked about conflicts or failed.
    """

    sentence: str
    conflicts: tuple[str, ...] = ()
    done: bool = False
    carried_out: bool = False


@dataclass(frozen=True, slots=True)
class TurnFiles:
    """One turn's changed files for the panel: its name, and each file with its diff."""

    changes: TurnChanges
    label: str
    files: list[FileChangeView] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PlannedRestore:
    """What a restore would do, asked for before it runs.

    Attributes:
        changes: Each path as the restore would change it (empty: nothing to put back).
        problem: Why it cannot be planned, as a sentence ('' when it can).
    """

    changes: tuple[FileChange, ...] = ()
    problem: str = ""


def turn_summary(changes: TurnChanges, undone: Undone = EARLIER_CHANGES) -> str:
    """``This turn changed 3 files: a.py, b.txt and new.txt`` (folders left out of the count).

    A restore (an undo is one) says what it did to each file instead, naming
    whose changes it took back as ``undone`` says.
    """
    if changes.kind == "restore":
        return restore_summary(changes.changes, undone)
    names = [c.path for c in shown_files(changes.changes)]
    verb = "The command changed" if changes.kind == "command" else "This turn changed"
    return f"{verb} {len(names)} file{'s' if len(names) != 1 else ''}: {name_list(names)}."


class FolderUndoActions(QObject):
    """Undo and restore for one conversation's window tab.

    Args:
        session: The conversation's session.
        store: The store (for the names of turns: their messages' first words).

    Signals:
        files_changed(object): A turn, command or restore changed files
            (its :class:`TurnChanges`).
    """

    files_changed = Signal(object)

    def __init__(self, session: ConversationSession, store: Store,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._session = session
        self._store = store
        self._tasks = OwnedTasks()
        session.subscribe(self._on_event)

    def start(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``work`` (an undo, loading the panel) as a task this object owns.

        Why owned here: the conversation's close cancels them (:meth:`cancel_all`),
        so none reads the store after the window shut it.
        """
        return self._tasks.start(work)

    async def cancel_all(self) -> None:
        """Cancel the running undo or panel load (the conversation closes)."""
        await self._tasks.cancel_and_wait()

    def _on_event(self, event: SessionEvent) -> None:
        if isinstance(event, FilesChanged):
            self.files_changed.emit(event.changes)

    async def undo_turn(self, turn: str | None, *, force: bool = False) -> RestoreOutcome:
        """Undo ``turn`` (None: the latest that changed files)."""
        return await self._outcome(lambda: self._session.undo_turn(turn, force=force))

    async def restore_before(self, message_id: str, *, branch: bool,
                             force: bool = False) -> RestoreOutcome:
        """Restore files to before ``message_id``; ``branch``: go back in the conversation too."""
        return await self._outcome(lambda: self._session.restore_files(
            message_id, force=force, branch=branch))

    async def restore_plan(self, message_id: str) -> PlannedRestore:
        """What restoring files to before ``message_id`` would do (nothing is done yet)."""
        from desktop_agent.session import CheckpointError

        try:
            return PlannedRestore(await self._session.restore_plan(message_id))
        except (CheckpointError, SessionError) as exc:
            return PlannedRestore(problem=str(exc))
        except OSError as exc:
            log.warning("the restore could not be planned: %s", exc)
            return PlannedRestore(problem=f"The checkpoints could not be read "
                                          f"({exc.strerror or exc}).")

    async def has_changes(self) -> bool:
        """Whether any turn, command or restore of this conversation changed files."""
        return await self._session.has_file_changes()

    async def turn_files(self) -> list[TurnFiles]:
        """Every turn that changed files, newest first, each file with its diff."""
        checkpoints = self._session.checkpoints
        out: list[TurnFiles] = []
        for changes in reversed(await checkpoints.turns()):
            if changes.changes:
                out.append(TurnFiles(changes, self._label(changes),
                                     await checkpoints.file_changes(changes)))
        return out

    def _label(self, changes: TurnChanges) -> str:
        if changes.kind == "restore":
            return "Undo or restore"
        if changes.kind == "command" or changes.message is None:
            return "Command"
        record = self._store.get_message(changes.message)
        content = record.message.get("content") if record is not None else None
        text = " ".join(content.split()) if isinstance(content, str) else ""
        if not text:
            return "A turn"
        return text if len(text) <= LABEL_LENGTH else text[:LABEL_LENGTH - 1] + "…"

    async def _outcome(self, action: Callable[[], Awaitable[RestoreReport | None]],
                       ) -> RestoreOutcome:
        # Loaded with the checkpoints the action uses, not by an idle window.
        from desktop_agent.session import CheckpointError, RestoreConflictError

        try:
            report = await action()
        except RestoreConflictError as exc:
            return RestoreOutcome(str(exc), tuple(exc.paths))
        except CheckpointError as exc:
            return RestoreOutcome(str(exc))
        except ConversationBusyError:
            return RestoreOutcome(f"{BUSY_ELSEWHERE} Wait for its reply, then try again.")
        except SessionError as exc:
            return RestoreOutcome(str(exc))
        except OSError as exc:
            log.warning("a restore failed part way: %s", exc)
            return RestoreOutcome(f"Files could not all be put back ({exc.strerror or exc}); "
                                  "the ones before it were.")
        if report is None or report.turn is None:
            return RestoreOutcome("Nothing to put back: the files are already as they were.",
                                  carried_out=True)
        applied = report.applied
        count = len(applied.restored) + len(applied.removed)
        kept = f" {len(applied.kept)} left as they are." if applied.kept else ""
        return RestoreOutcome(f"Put back {count} file{'s' if count != 1 else ''}.{kept}",
                              done=True, carried_out=True)
