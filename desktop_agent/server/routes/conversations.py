"""Conversations: create, list, get, update settings, delete; and their messages.

Conversations are rows of the same store the window uses, so one made here
shows up in the window's sidebar, and vice versa.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
from typing import Any

from fastapi import APIRouter, Depends, Query, status

from desktop_agent.server.api_errors import ApiError
from desktop_agent.server.api_models import (
    ConversationCreate,
    ConversationList,
    ConversationOut,
    ConversationUpdate,
    DeleteResult,
    ErrorBody,
    MessageCreate,
    MessageList,
    MessageOut,
    SandboxOut,
)
from desktop_agent.server.app_services import AppServices, services
from desktop_agent.server.message_content import refuse_if_blind, stored_content
from desktop_agent.session import (
    LOCAL_SERVER,
    BadWorkdirError,
    PermissionModeError,
    SettingsError,
    UnknownToolError,
    asks_before_tools,
    check_usable_settings,
    sandbox_status,
)
from desktop_agent.session import create_conversation as create_with_work_folder
from desktop_agent.session import delete_conversation as delete_stored_conversation
from desktop_agent.store import ConversationRecord

router = APIRouter(tags=["conversations"])

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "No such conversation."},
}


def conversation_out(svc: AppServices, record: ConversationRecord) -> ConversationOut:
    """The API view of a record, with the runner's live state."""
    runner = svc.runners.peek(record.id)
    settings = dict(record.settings or {})
    confirm = runner.confirm_tools if runner else asks_before_tools(settings)
    return ConversationOut(
        id=record.id,
        title=record.title,
        created_at=record.created_at,
        updated_at=record.updated_at,
        settings=settings,
        state=runner.state if runner else "idle",  # type: ignore[arg-type]
        confirm_tools=confirm,
        pending_approvals=len(runner.approvals.all()) if runner else 0,
        workdir=_shown_workdir(svc, record),
        sandbox=SandboxOut(**dataclasses.asdict(sandbox_status(settings))),
    )


def _shown_workdir(svc: AppServices, record: ConversationRecord) -> str:
    """The workdir to show; one that breaks the rule is shown as set (using it is refused)."""
    try:
        return str(svc.workdir_of(record))
    except ApiError:
        return str((record.settings or {}).get("workdir", ""))


def check_settings(svc: AppServices, settings: dict[str, Any],
                   changed: list[str] | None = None) -> None:
    """Refuse settings the API cannot honour, as a 422 saying why (the session's rule)."""
    try:
        check_usable_settings(settings, svc.session.tools, svc.workdirs_root, changed)
    except UnknownToolError as exc:
        raise ApiError(422, "unknown_tool", str(exc)) from exc
    except BadWorkdirError as exc:
        raise ApiError(422, "bad_workdir", str(exc)) from exc
    except PermissionModeError as exc:
        raise ApiError(422, "permission_mode", str(exc)) from exc


def message_out(record: Any) -> MessageOut:
    return MessageOut(id=record.id, parent_id=record.parent_id, role=record.role,
                      message=record.message, status=record.status,
                      created_at=record.created_at)


@router.post("/conversations", status_code=status.HTTP_201_CREATED,
             response_model=ConversationOut)
async def create_conversation(body: ConversationCreate,
                              svc: AppServices = Depends(services)) -> ConversationOut:  # noqa: B008
    """Create a conversation (it appears in the window too), with a working folder of its own.

    Under ``serve --model``, one created without a ``base_url`` (and no ``server``) runs on
    that model: its settings get ``server: "local"`` and, unless given, that ``model``.
    """
    settings = body.settings.model_dump(exclude_none=True)
    default_model = svc.local_engine.default_model
    if default_model and not settings.get("base_url") and not settings.get("server"):
        settings["server"] = LOCAL_SERVER
        settings.setdefault("model", default_model)
    check_settings(svc, settings)
    record = await asyncio.to_thread(create_with_work_folder, svc.store, svc.workdirs_root,
                                     title=body.title, settings=settings)
    return conversation_out(svc, record)


@router.get("/conversations", response_model=ConversationList)
async def list_conversations(
    limit: int = Query(100, ge=1, le=1000),
    offset: int = Query(0, ge=0, le=1_000_000_000),
    query: str | None = Query(None, max_length=1000, description="Filter by title text."),
    svc: AppServices = Depends(services),  # noqa: B008
) -> ConversationList:
    """Conversations, most recently updated first."""
    records = await asyncio.to_thread(svc.store.list_conversations, limit=limit, offset=offset,
                                      query=query or None)
    return ConversationList(conversations=[conversation_out(svc, r) for r in records])


@router.get("/conversations/{conversation_id}", response_model=ConversationOut,
            responses=NOT_FOUND)
async def get_conversation(conversation_id: str,
                           svc: AppServices = Depends(services)) -> ConversationOut:  # noqa: B008
    """One conversation with its settings and run state."""
    record = await asyncio.to_thread(svc.conversation, conversation_id)
    out = conversation_out(svc, record)
    if svc.shared_approvals and out.state == "idle":
        out = await asyncio.to_thread(_state_elsewhere, svc, out)
    return out


def _state_elsewhere(svc: AppServices, out: ConversationOut) -> ConversationOut:
    """``out`` with the state of a turn another replica runs (PostgreSQL, blocking).

    A turn runs in the replica holding its lease; the others learn from the
    database that it runs and whether it waits for an answer (its open
    questions), so a client polling one conversation through any replica sees
    ``waiting_approval`` and knows to approve. Only here, not in the list, which
    would pay two queries per conversation.
    """
    if svc.store.turn_lease_holder(out.id) is None:
        return out
    pending = len(svc.store.open_approvals(out.id))
    return out.model_copy(update={"state": "waiting_approval" if pending else "running",
                                  "pending_approvals": pending})


@router.patch("/conversations/{conversation_id}", response_model=ConversationOut,
              responses=NOT_FOUND)
async def update_conversation(conversation_id: str, body: ConversationUpdate,
                              svc: AppServices = Depends(services)) -> ConversationOut:  # noqa: B008
    """Change the title or settings; takes effect from the next turn (model, key, tools...).

    Through the conversation's session, as the window's settings are: the same
    schema check, the same patch by key (settings the window or another server
    wrote meanwhile are kept), and a running turn's approvals see the change.
    """
    record = await asyncio.to_thread(svc.conversation, conversation_id)
    changes = body.settings.model_dump(exclude_unset=True) if body.settings is not None else {}
    changed = list(changes)
    merged = {**(record.settings or {}), **changes}
    check_settings(svc, {k: v for k, v in merged.items() if v is not None}, changed)
    session = svc.runner(record).session
    try:  # a database write: off the loop, as the streams share it
        await asyncio.to_thread(session.update_settings, **changes)
    except SettingsError as exc:
        raise ApiError(422, "invalid_settings", str(exc)) from exc
    if body.title is not None:
        await asyncio.to_thread(svc.store.update_conversation, conversation_id,
                                title=body.title)
        await asyncio.to_thread(session.reload_settings)
    if changed or body.title is not None:
        svc.events.append(conversation_id, "settings",
                          {"changed": sorted(changed), "title_changed": body.title is not None})
    return conversation_out(svc, session.record)


@router.delete("/conversations/{conversation_id}", response_model=DeleteResult,
               responses=NOT_FOUND)
async def delete_conversation(
    conversation_id: str,
    delete_workdir: bool = Query(False, description="Also delete the server-made workdir."),
    svc: AppServices = Depends(services),  # noqa: B008
) -> DeleteResult:
    """Delete a conversation, its events, callbacks and secrets; the workdir stays unless asked."""
    record = await asyncio.to_thread(svc.conversation, conversation_id)
    await svc.runners.discard(conversation_id)
    await svc.callbacks.remove_conversation(conversation_id)
    await delete_stored_conversation(svc.store, conversation_id)
    svc.events.forget(conversation_id)
    workdir = svc.workdir_of(record)
    removed, note = False, None
    if delete_workdir:
        if svc.is_managed_workdir(workdir):
            await asyncio.to_thread(shutil.rmtree, workdir, True)
            removed = not workdir.exists()
        else:
            note = "The workdir was chosen in the settings, so the server left it in place."
    return DeleteResult(deleted=True, workdir_deleted=removed, note=note)


@router.get("/conversations/{conversation_id}/messages", response_model=MessageList,
            responses=NOT_FOUND)
async def list_messages(
    conversation_id: str,
    limit: int | None = Query(None, ge=1, le=10_000, description="Only the last N."),
    svc: AppServices = Depends(services),  # noqa: B008
) -> MessageList:
    """The active branch, oldest first."""
    await asyncio.to_thread(svc.conversation, conversation_id)
    records = await asyncio.to_thread(svc.store.active_path, conversation_id, limit)
    return MessageList(messages=[message_out(r) for r in records])


@router.post("/conversations/{conversation_id}/messages", status_code=status.HTTP_201_CREATED,
             response_model=MessageOut,
             responses={**NOT_FOUND, 409: {"model": ErrorBody, "description": "A turn runs."}})
async def send_message(conversation_id: str, body: MessageCreate,
                       svc: AppServices = Depends(services)) -> MessageOut:  # noqa: B008
    """Add a user message; ``POST .../run`` answers it."""
    record = await asyncio.to_thread(svc.conversation, conversation_id)
    content = stored_content(body.content)
    refuse_if_blind(record.settings or {}, content)
    added = svc.runner(record).add_message(content)
    return message_out(added)


