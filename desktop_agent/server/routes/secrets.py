"""Per-conversation secrets: set, list names, delete. Values never leave the vault here.

The vault is the OS keyring, or with ``serve --database`` the values sealed in the
shared database (:mod:`desktop_agent.appdata.encrypted_vault`); these routes do not
know which. Setting or deleting a secret also drops the conversation's checkpointed
file contents that hold its value: the data folder keeps no copy of a secret.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, Path, Response, status

from desktop_agent.server.api_errors import ApiError
from desktop_agent.server.api_models import (
    SECRET_NAME_PATTERN,
    ErrorBody,
    SecretNames,
    SecretSet,
    SecretStored,
)
from desktop_agent.server.app_services import AppServices, services
from desktop_agent.session import (
    conversation_environment,
    conversation_secret_names,
    delete_conversation_secret,
    set_conversation_secret,
)

router = APIRouter(tags=["secrets"])

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "No such conversation or secret."},
}
SecretName = Path(pattern=SECRET_NAME_PATTERN,
                  description="An environment variable name, e.g. GITHUB_TOKEN.")


@router.get("/conversations/{conversation_id}/secrets", response_model=SecretNames,
            responses=NOT_FOUND)
async def list_secrets(conversation_id: str,
                       svc: AppServices = Depends(services)) -> SecretNames:  # noqa: B008
    """Names of the conversation's secrets (never their values)."""
    await asyncio.to_thread(svc.conversation, conversation_id)
    names = await asyncio.to_thread(conversation_secret_names,
                                    conversation_id)
    return SecretNames(names=names)


@router.put("/conversations/{conversation_id}/secrets/{name}", response_model=SecretStored,
            responses=NOT_FOUND)
async def set_secret(conversation_id: str, body: SecretSet, name: str = SecretName,
                     svc: AppServices = Depends(services)) -> SecretStored:  # noqa: B008
    """Store a secret; commands and the bash tool get it as the environment variable ``name``.

    Files checkpointed before it was a secret may hold it: those copies are dropped.
    """
    record = await asyncio.to_thread(svc.conversation, conversation_id)
    persisted = await asyncio.to_thread(set_conversation_secret,
                                        conversation_id, name, body.value)
    await svc.runner(record).session.checkpoints.forget_secret([body.value])
    return SecretStored(name=name, persisted=persisted)


@router.delete("/conversations/{conversation_id}/secrets/{name}",
               status_code=status.HTTP_204_NO_CONTENT, response_class=Response,
               responses=NOT_FOUND)
async def delete_secret(conversation_id: str, name: str = SecretName,
                        svc: AppServices = Depends(services)) -> Response:  # noqa: B008
    """Forget a secret, and every checkpointed copy of a file that held it."""
    record = await asyncio.to_thread(svc.conversation, conversation_id)
    value = (await asyncio.to_thread(conversation_environment, conversation_id)).get(name)
    removed = await asyncio.to_thread(delete_conversation_secret,
                                      conversation_id, name)
    if not removed:
        raise ApiError(404, "not_found", f"No secret named {name!r} in this conversation.")
    if value:
        await svc.runner(record).session.checkpoints.forget_secret([value])
    return Response(status_code=status.HTTP_204_NO_CONTENT)
