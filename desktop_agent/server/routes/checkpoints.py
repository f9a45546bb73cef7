"""Checkpoints of a conversation's working folder: list, files changed per turn, undo, restore.

The session records a checkpoint before each tool round and each
``/commands`` call; these routes read them and put files back through the
same session methods as the window's Undo and Restore. A file changed after
the agent's change (by a person or another program) is a conflict: 409 with
the file names in ``details``, nothing restored, unless ``force`` is true.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from desktop_agent.server.api_models import ErrorBody
from desktop_agent.server.app_services import AppServices, services
from desktop_agent.server.checkpoint_models import (
    CheckpointList,
    CheckpointOut,
    FileChangeOut,
    FilesChangedList,
    RestoreRequest,
    RestoreResult,
    TurnFiles,
    UndoRequest,
)
from desktop_agent.server.routes.turns import runner_for
from desktop_agent.session import FileChangeView, RestoreReport

router = APIRouter(tags=["checkpoints"])

RESTORE_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "No such conversation, or nothing to undo."},
    409: {"model": ErrorBody, "description": "A turn runs, or files changed after the agent's "
                                             "change (their paths in details); nothing done."},
}


@router.get("/conversations/{conversation_id}/checkpoints", response_model=CheckpointList,
            responses={404: {"model": ErrorBody, "description": "No such conversation."}})
async def list_checkpoints(conversation_id: str,
                           svc: AppServices = Depends(services)) -> CheckpointList:  # noqa: B008
    """The working folder's checkpoints, oldest first, and the space they take."""
    session = (await runner_for(svc, conversation_id)).session
    found = await session.checkpoints.checkpoints()
    return CheckpointList(
        checkpoints=[CheckpointOut(id=c.id, at=c.at, kind=c.kind, turn=c.turn,
                                   message_id=c.message, notes=list(c.notes)) for c in found],
        size_bytes=await session.checkpoints.size_bytes())


@router.get("/conversations/{conversation_id}/files-changed", response_model=FilesChangedList,
            responses={404: {"model": ErrorBody, "description": "No such conversation."}})
async def files_changed(conversation_id: str, turn: str | None = None,
                        svc: AppServices = Depends(services)) -> FilesChangedList:  # noqa: B008
    """The files each turn changed, with a unified diff for text files (``turn``: one only)."""
    checkpoints = (await runner_for(svc, conversation_id)).session.checkpoints
    out: list[TurnFiles] = []
    for changes in await checkpoints.turns():
        if not changes.changes or (turn is not None and changes.turn != turn):
            continue
        views = await checkpoints.file_changes(changes)
        out.append(TurnFiles(turn=changes.turn, kind=changes.kind, message_id=changes.message,
                             files=[_file_out(v) for v in views]))
    return FilesChangedList(turns=out)


@router.post("/conversations/{conversation_id}/undo", response_model=RestoreResult,
             responses=RESTORE_ERRORS)
async def undo_turn(conversation_id: str, body: UndoRequest,
                    svc: AppServices = Depends(services)) -> RestoreResult:  # noqa: B008
    """Put back what a turn changed: created files removed, the rest byte for byte."""
    runner = await runner_for(svc, conversation_id)
    return _result(await runner.undo_turn(body.turn, body.force))


@router.post("/conversations/{conversation_id}/restore", response_model=RestoreResult,
             responses=RESTORE_ERRORS)
async def restore_files(conversation_id: str, body: RestoreRequest,
                        svc: AppServices = Depends(services)) -> RestoreResult:  # noqa: B008
    """Put files back as before a message (optionally branching there) or at a checkpoint."""
    runner = await runner_for(svc, conversation_id)
    report = await runner.restore_files(body.message_id, body.checkpoint_id, body.force,
                                        body.branch)
    if report is None:
        return RestoreResult(turn=None, restored=[], removed=[], kept=[], overwritten=[])
    return _result(report)


def _file_out(view: FileChangeView) -> FileChangeOut:
    diff = view.diff
    return FileChangeOut(path=view.path, change=view.change, kind=view.kind,
                         summary=view.summary,
                         added=diff.added if diff is not None else None,
                         removed=diff.removed if diff is not None else None,
                         diff=diff.unified_text() if diff is not None else None)


def _result(report: RestoreReport) -> RestoreResult:
    return RestoreResult(turn=report.turn.turn if report.turn is not None else None,
                         restored=report.applied.restored, removed=report.applied.removed,
                         kept=report.applied.kept, overwritten=report.overwritten)
