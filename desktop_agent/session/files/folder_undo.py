"""Undo and restore of a conversation's files: the session's side of its checkpoints.

One part of :class:`~desktop_agent.session.conversation.ConversationSession`,
given what it needs and nothing more: the working folder (its checkpoints), the
turn lease (so nothing changes the folder while it is restored: no turn, no
command, here or in another process; and a REST command holds it too, so no
restore or turn runs beside one), the active branch (a restore may move it
back) and the event sink (it reports what it changed as :class:`FilesChanged`,
like a turn does). The disk work is
:class:`~desktop_agent.session.files.file_checkpoints.ConversationCheckpoints`'.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from desktop_agent.session.errors import (
    COMMAND,
    RESTORE,
    NothingToAnswerError,
    TurnRunningError,
)
from desktop_agent.session.events import FilesChanged, SessionEvent
from desktop_agent.session.files.checkpoint_paths import checkpoints_folder
from desktop_agent.session.store_calls import on_the_spot

if TYPE_CHECKING:
    from desktop_agent.session.branch.branch_pages import BranchPages
    from desktop_agent.session.files.file_checkpoints import FileChange, RestoreReport, TurnMark
    from desktop_agent.session.files.working_folder import WorkingFolder
    from desktop_agent.store import MessageRecord


class FolderUndo:
    """Undo a turn, restore files to before a message or to a checkpoint, record commands.

    Args:
        folder: The conversation's working folder.
        branch: Its active branch.
        lease: Makes the conversation's turn lease for an activity (:data:`RESTORE`,
            :data:`COMMAND`), held while files are put back or a command runs.
        busy: Whether a turn runs (or is starting) in this session.
        emit: Reports session events.
    """

    def __init__(self, folder: WorkingFolder, branch: BranchPages,
                 lease: Callable[[str], AbstractAsyncContextManager[object]],
                 busy: Callable[[], bool], emit: Callable[[SessionEvent], None]) -> None:
        self._folder = folder
        self._branch = branch
        self._lease = lease
        self._busy = busy
        self._emit = emit

    async def has_file_changes(self) -> bool:
        """Whether any turn, command or restore of this conversation changed files.

        A conversation that never took a checkpoint has no folder for them: that
        is answered without loading the checkpoint and diff modules, which an
        idle window showing such a conversation would otherwise hold (~0.5 MB).
        """
        folder = checkpoints_folder(self._folder.conversation_id)
        if not await asyncio.to_thread(folder.is_dir):
            return False
        return any(turn.changes for turn in await self._folder.checkpoints.turns())

    async def undo_turn(self, turn: str | None = None, *, force: bool = False) -> RestoreReport:
        """Put back the files a turn changed (None: the latest turn that changed files).

        Holds the turn lease meanwhile, so no turn (here or in another
        process) changes the folder while it is restored.

        Raises:
            TurnRunningError: A turn runs here.
            ConversationBusyError: Another process runs a turn.
            RestoreConflictError: Files changed after the agent's change (named); nothing done.
            CheckpointError: Nothing to undo, or the working folder moved.
        """
        async with self._restoring():
            report = await self._folder.checkpoints.undo_turn(turn, force=force)
        self._report_restore(report)
        return report

    async def restore_files(self, message_id: str, *, force: bool = False,
                            branch: bool = False) -> RestoreReport | None:
        """Put files back as they were before ``message_id`` (a message on this branch).

        ``branch``: also move the conversation back to that point, so the next
        message starts a new branch beside it (the old one stays). None when
        no turn since that message changed files.

        Raises:
            NothingToAnswerError: The message is not on the active branch.
            TurnRunningError, ConversationBusyError, RestoreConflictError: as :meth:`undo_turn`.
        """
        path, index = self._position(message_id)
        async with self._restoring():
            report = await self._folder.checkpoints.restore_before(
                [r.id for r in path[index:]], force=force)
            if branch:
                await self._branch.move_leaf(on_the_spot, path[index].parent_id, path[:index])
        if report is not None:
            self._report_restore(report)
        return report

    async def restore_plan(self, message_id: str) -> tuple[FileChange, ...]:
        """What :meth:`restore_files` would change (nothing is done), to ask first.

        Empty when no turn since that message changed files.

        Raises:
            NothingToAnswerError: The message is not on the active branch.
            CheckpointError: The working folder moved since.
        """
        path, index = self._position(message_id)
        return await self._folder.checkpoints.restore_plan([r.id for r in path[index:]])

    def _position(self, message_id: str) -> tuple[list[MessageRecord], int]:
        """The active branch, and where ``message_id`` is on it."""
        path = self._branch.read_branch()
        index = next((i for i, r in enumerate(path) if r.id == message_id), None)
        if index is None:
            raise NothingToAnswerError("That message is not on the conversation's active branch.")
        return path, index

    async def restore_checkpoint(self, checkpoint_id: str, *,
                                 force: bool = False) -> RestoreReport:
        """Put files back as they were at a checkpoint (from ``checkpoints``).

        Raises:
            TurnRunningError, ConversationBusyError, RestoreConflictError: as :meth:`undo_turn`.
            CheckpointError: No such checkpoint, or the working folder moved.
        """
        async with self._restoring():
            report = await self._folder.checkpoints.restore_to(checkpoint_id, force=force)
        self._report_restore(report)
        return report

    @contextlib.asynccontextmanager
    async def command_checkpoint(self) -> AsyncIterator[TurnMark]:
        """Record the folder around a command run outside a turn (REST ``/commands``).

        The command is recorded as a turn of its own (kind ``command``), so it
        can be undone like one; its changed files are reported as :class:`FilesChanged`.
        It holds the turn lease meanwhile: a restore put files back beside a
        running command (which may swap a folder for a link under it), and a
        turn's checkpoints would take in the command's changes.

        Raises:
            TurnRunningError: A turn runs here.
            ConversationBusyError: A turn, a restore or another command holds the
                lease (its holder says which: :func:`~desktop_agent.session.errors.busy_sentence`).
        """
        from desktop_agent.session.files.file_checkpoints import TurnMark

        if self._busy():
            raise TurnRunningError("A turn is running in this conversation; wait for it (or "
                                   "stop it) before running a command.")
        async with self._lease(COMMAND):
            last = self._branch.last_message()
            mark = TurnMark(message=last.id if last is not None else None, kind="command")
            await self._folder.checkpoints.before_command(mark)
            try:
                yield mark
            finally:
                await asyncio.shield(self._folder.close_checkpoints(mark))

    @contextlib.asynccontextmanager
    async def _restoring(self) -> AsyncIterator[None]:
        if self._busy():
            raise TurnRunningError("A turn is running; stop it before restoring files.")
        async with self._lease(RESTORE):
            yield

    def _report_restore(self, report: RestoreReport) -> None:
        if report.turn is not None and report.turn.changes:
            self._emit(FilesChanged(report.turn))
