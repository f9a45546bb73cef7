"""Command previews: list the ones waiting, apply or discard one.

A preview is a command that ran on an overlay of the working folder
(``POST .../commands`` with ``preview``, or the model's bash in a
conversation that previews commands, or one approved with ``preview``); the
folder is untouched until it is applied. A file changed since the command
ran is a conflict: 409 with the file names in ``details``, nothing applied,
unless ``force`` is true. A preview is answered by the server that ran it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from desktop_agent.server.api_models import ErrorBody
from desktop_agent.server.app_services import AppServices, services
from desktop_agent.server.preview_models import (
    PreviewApplied,
    PreviewApplyRequest,
    PreviewDiscarded,
    PreviewDiscardRequest,
    PreviewList,
    PreviewOut,
)
from desktop_agent.server.routes.turns import runner_for

router = APIRouter(tags=["previews"])

PREVIEW_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "No such conversation, or no such preview "
                                             "waiting here (decided already, or run by "
                                             "another server)."},
    409: {"model": ErrorBody, "description": "Files changed after the command ran (their "
                                             "paths in details; nothing applied), or the "
                                             "apply stopped part way (what was applied in "
                                             "details)."},
}


@router.get("/conversations/{conversation_id}/previews", response_model=PreviewList,
            responses={404: {"model": ErrorBody, "description": "No such conversation."}})
async def list_previews(conversation_id: str,
                        svc: AppServices = Depends(services)) -> PreviewList:  # noqa: B008
    """Command previews waiting for apply or discard, oldest first."""
    session = (await runner_for(svc, conversation_id)).session
    return PreviewList(previews=[PreviewOut.of(card) for card in session.pending_previews])


@router.post("/conversations/{conversation_id}/previews/{preview_id}/apply",
             response_model=PreviewApplied, responses=PREVIEW_ERRORS)
async def apply_preview(conversation_id: str, preview_id: str,
                        body: PreviewApplyRequest | None = None,
                        svc: AppServices = Depends(services)) -> PreviewApplied:  # noqa: B008
    """Move a preview's changes into the working folder (never following a link).

    A model's call is told ``applied`` and its turn's checkpoint covers the
    change; a ``/commands`` preview is recorded as a command (a
    ``files_changed`` event with its turn id: POST .../undo puts it back).
    """
    runner = await runner_for(svc, conversation_id)
    applied = await runner.apply_preview(preview_id, body.force if body is not None else False)
    return PreviewApplied(id=preview_id, applied=applied.applied,
                          overwritten=applied.overwritten)


@router.post("/conversations/{conversation_id}/previews/{preview_id}/discard",
             response_model=PreviewDiscarded, responses=PREVIEW_ERRORS)
async def discard_preview(conversation_id: str, preview_id: str,
                          body: PreviewDiscardRequest | None = None,
                          svc: AppServices = Depends(services)) -> PreviewDiscarded:  # noqa: B008
    """Drop a preview's changes; the folder stays as it was. ``reason`` goes to the model."""
    runner = await runner_for(svc, conversation_id)
    await runner.discard_preview(preview_id, body.reason if body is not None else "")
    return PreviewDiscarded(id=preview_id)
