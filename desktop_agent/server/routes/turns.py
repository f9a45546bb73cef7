"""Running turns: run, interrupt, confirmation mode, and tool approvals."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, status

from desktop_agent.server.api_errors import ApiError
from desktop_agent.server.api_models import (
    ApprovalDecision,
    ApprovalList,
    ApprovalOut,
    ApproveRequest,
    ConfirmationMode,
    ErrorBody,
    InterruptResult,
    RejectRequest,
    RunRequest,
    RunStatus,
    ToolCallProbeOut,
    ToolCallStopResult,
)
from desktop_agent.server.app_services import AppServices, services
from desktop_agent.server.conversation_runner import ConversationRunner
from desktop_agent.server.message_content import stored_content

router = APIRouter(tags=["turns"])

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "No such conversation or request."},
}


async def runner_for(svc: AppServices, conversation_id: str) -> ConversationRunner:
    """The conversation's runner (404 if the conversation does not exist)."""
    return svc.runner(await asyncio.to_thread(svc.conversation, conversation_id))


@router.post(
    "/conversations/{conversation_id}/run", status_code=status.HTTP_202_ACCEPTED,
    response_model=RunStatus,
    responses={**NOT_FOUND, 409: {"model": ErrorBody,
                                  "description": "A turn runs, or nothing to answer."}},
)
async def run_turn(conversation_id: str, body: RunRequest | None = None,
                   svc: AppServices = Depends(services)) -> RunStatus:  # noqa: B008
    """Start a turn in the background and return at once; follow it through the events."""
    # What the start needs read, in one call off the loop (see AppServices.turn_start_read).
    mark = svc.callbacks.changes
    read = await asyncio.to_thread(svc.turn_start_read, conversation_id)
    await svc.pacer.step()  # see start_pacer
    await svc.callbacks.took_for_turn(conversation_id, read.callbacks, mark)
    runner = svc.runner(read.record)
    message = body.message if body is not None else None
    try:
        await runner.start_turn(stored_content(message) if message is not None else None,
                                read.record, read.path)
    except BaseException:
        svc.callbacks.not_started(conversation_id)
        raise
    return RunStatus(conversation_id=conversation_id, state=runner.state)  # type: ignore[arg-type]


@router.post("/conversations/{conversation_id}/interrupt", response_model=InterruptResult,
             responses=NOT_FOUND)
async def interrupt_turn(conversation_id: str,
                         svc: AppServices = Depends(services)) -> InterruptResult:  # noqa: B008
    """Stop the running turn, keeping what streamed so far (no-op when idle)."""
    runner = await runner_for(svc, conversation_id)
    stopped = await runner.interrupt()
    return InterruptResult(interrupted=stopped, state=runner.state)  # type: ignore[arg-type]


@router.post("/conversations/{conversation_id}/tool_calls/{tool_use_id}/stop",
             response_model=ToolCallStopResult, responses=NOT_FOUND)
async def stop_tool_call(conversation_id: str, tool_use_id: str,
                         svc: AppServices = Depends(services)) -> ToolCallStopResult:  # noqa: B008
    """End just one running command (its result says so); the turn goes on."""
    runner = await runner_for(svc, conversation_id)
    return ToolCallStopResult(stopped=runner.session.stop_tool_call(tool_use_id))


@router.post("/conversations/{conversation_id}/test-model", response_model=ToolCallProbeOut,
             responses={**NOT_FOUND, 409: {"model": ErrorBody,
                                           "description": "No server or model is chosen."}})
async def test_model(conversation_id: str,
                     svc: AppServices = Depends(services)) -> ToolCallProbeOut:  # noqa: B008
    """Run the tool-call probe on the conversation's server and model (about a minute on a CPU).

    The result is kept for the server and model and decides the automatic tool-call
    mode from then on; a probe already under way for them is waited for, not repeated.
    """
    runner = await runner_for(svc, conversation_id)
    return await runner.test_model()


@router.put("/conversations/{conversation_id}/confirmation", response_model=ConfirmationMode,
            responses=NOT_FOUND)
async def set_confirmation(conversation_id: str, body: ConfirmationMode,
                           svc: AppServices = Depends(services)) -> ConfirmationMode:  # noqa: B008
    """Turn confirmation mode on (tool calls wait for approval) or off (they run)."""
    runner = await runner_for(svc, conversation_id)
    runner.set_confirmation(body.enabled)
    runner.emit("settings", {"changed": ["confirm_tools"], "confirm_tools": body.enabled})
    return ConfirmationMode(enabled=body.enabled)


@router.get("/conversations/{conversation_id}/approvals", response_model=ApprovalList,
            responses=NOT_FOUND)
async def list_approvals(conversation_id: str,
                         svc: AppServices = Depends(services)) -> ApprovalList:  # noqa: B008
    """Tool calls waiting for approve or reject."""
    runner = await runner_for(svc, conversation_id)
    return ApprovalList(approvals=[ApprovalOut(**p) for p in await runner.approvals.listed()])


@router.post("/conversations/{conversation_id}/approvals/{tool_use_id}/approve",
             response_model=ApprovalDecision, responses=NOT_FOUND)
async def approve_call(conversation_id: str, tool_use_id: str, body: ApproveRequest | None = None,
                       svc: AppServices = Depends(services)) -> ApprovalDecision:  # noqa: B008
    """Let a waiting call run, optionally with edited input."""
    runner = await runner_for(svc, conversation_id)
    if not await runner.approve(tool_use_id, body.input if body is not None else None,
                                body.preview if body is not None else False):
        raise ApiError(404, "not_found", f"No tool call {tool_use_id!r} is waiting for approval.")
    return ApprovalDecision(tool_use_id=tool_use_id, decision="approved")


@router.post("/conversations/{conversation_id}/approvals/{tool_use_id}/reject",
             response_model=ApprovalDecision, responses=NOT_FOUND)
async def reject_call(conversation_id: str, tool_use_id: str, body: RejectRequest | None = None,
                      svc: AppServices = Depends(services)) -> ApprovalDecision:  # noqa: B008
    """Refuse a waiting call; the reason is sent to the model as the tool's error."""
    runner = await runner_for(svc, conversation_id)
    reason = body.reason if body is not None else RejectRequest().reason
    if not await runner.reject(tool_use_id, reason):
        raise ApiError(404, "not_found", f"No tool call {tool_use_id!r} is waiting for approval.")
    return ApprovalDecision(tool_use_id=tool_use_id, decision="rejected")
