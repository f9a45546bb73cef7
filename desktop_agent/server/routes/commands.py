"""Run a shell command in the conversation's workdir: sandboxed, with its own secrets."""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, Depends

from desktop_agent.core.tooling.builtin.shell_tool import run_command
from desktop_agent.core.tooling.builtin.workdir import BuiltinToolError, Workdir
from desktop_agent.server.api_errors import ApiError
from desktop_agent.server.api_models import CommandRequest, CommandResult, ErrorBody
from desktop_agent.server.app_services import AppServices, services
from desktop_agent.server.conversation_runner import as_http
from desktop_agent.server.preview_models import PreviewOut
from desktop_agent.server.workdir_paths import open_workdir
from desktop_agent.session import (
    ConversationSession,
    PreviewUnavailableError,
    conversation_environment,
    sandbox_policy,
)

router = APIRouter(tags=["commands"])

OUTPUT_CAP = 1_000_000
"""Bytes of stdout and of stderr returned; the rest is cut and flagged."""


@router.post("/conversations/{conversation_id}/commands", response_model=CommandResult,
             responses={404: {"model": ErrorBody, "description": "No such conversation."},
                        409: {"model": ErrorBody,
                              "description": "The conversation wants a sandbox and this "
                                             "machine has none, or a turn, a restore or "
                                             "another command runs in it (named)."}})
async def run_shell_command(conversation_id: str, body: CommandRequest,
                            svc: AppServices = Depends(services)) -> CommandResult:  # noqa: B008
    """Run ``bash -c command`` in the workdir, in the conversation's sandbox.

    The command sees only the workdir (read-write, or read-only with
    ``sandbox: read_only``), the system read-only and a private ``/tmp``; no
    network unless the conversation's ``network`` setting is true. Its
    environment is PATH, HOME (the workdir), LANG, TERM and the conversation's
    secrets, never the server's. On timeout everything it started is killed.
    Secret values are blanked out of the output.

    With ``preview``, the command runs on an overlay of the working folder and
    the folder stays untouched: the answer's ``preview`` says what it would
    change (a ``command_preview`` event says it too), and
    ``POST .../previews/{id}/apply`` or ``/discard`` decides.
    """
    record = await asyncio.to_thread(svc.conversation, conversation_id)
    workdir = open_workdir(svc.workdir_of(record))
    policy = sandbox_policy(record.settings)
    if policy.level != "off" and not policy.sandboxed:
        raise ApiError(409, "no_sandbox",
                       "This machine has no working command sandbox (install bubblewrap); "
                       "set the conversation's sandbox to 'off' to run commands unsandboxed.")
    env = await asyncio.to_thread(conversation_environment, conversation_id)
    session = svc.runner(record).session
    started = time.monotonic()
    if body.preview:
        return await _previewed(session, body, workdir, env, policy.sandboxed, started)
    # Recorded like a turn (a checkpoint before, the changed files after): POST .../undo
    # with the turn id from the files_changed event puts the folder back. It holds the
    # turn lease: no turn, restore or other command runs beside it (409 naming it).
    with as_http():
        async with session.command_checkpoint() as mark:
            try:
                result = await run_command(body.command, workdir, time_limit=body.timeout,
                                           env_secrets=env, output_cap=OUTPUT_CAP,
                                           sandbox=policy)
            except BuiltinToolError as exc:
                raise ApiError(422, "command_refused", str(exc)) from exc
    return CommandResult(
        exit_code=None if result.timed_out else result.exit_code,
        stdout=result.stdout,
        stderr=result.stderr,
        duration=time.monotonic() - started,
        timed_out=result.timed_out,
        truncated=bool(result.stdout_dropped or result.stderr_dropped),
        sandboxed=policy.sandboxed,
        limit=result.limit,
        turn=mark.turn if mark.recorded else None,
    )


async def _previewed(session: ConversationSession, body: CommandRequest, workdir: Workdir,
                     env: dict[str, str], sandboxed: bool, started: float) -> CommandResult:
    """Run the command on an overlay; the folder is untouched until the preview is applied."""
    try:
        card = await session.preview_command(body.command, workdir.root, time_limit=body.timeout,
                                             env_secrets=env, output_cap=OUTPUT_CAP)
    except PreviewUnavailableError as exc:
        raise ApiError(409, "no_preview", f"Commands cannot be previewed here: {exc}") from exc
    except BuiltinToolError as exc:
        raise ApiError(422, "command_refused", str(exc)) from exc
    result = card.result
    return CommandResult(
        exit_code=None if result.timed_out else result.exit_code,
        stdout=result.stdout, stderr=result.stderr,
        duration=time.monotonic() - started, timed_out=result.timed_out,
        truncated=bool(result.stdout_dropped or result.stderr_dropped), sandboxed=sandboxed,
        limit=result.limit, turn=None, preview=PreviewOut.of(card))
