"""The working folder's project instructions (``AGENTS.md``) as a conversation sends them.

A script driving the server sees what the window's settings show: which file
goes into the system prompt, whether it was cut at the cap, what it costs in
tokens per request, and whether the conversation's switch
(``project_instructions``) leaves it out.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from desktop_agent.server.app_services import AppServices, services
from desktop_agent.server.routes.conversations import NOT_FOUND
from desktop_agent.session import MAX_INSTRUCTION_BYTES, project_instructions_for

router = APIRouter(tags=["conversations"])


class ProjectInstructionsOut(BaseModel):
    """The instruction file of a conversation's working folder."""

    found: bool = Field(description="Whether the working folder has AGENTS.md or CLAUDE.md.")
    file: str | None = Field(default=None, description="'AGENTS.md' or 'CLAUDE.md'.")
    path: str | None = None
    bytes: int = Field(default=0, description="The file's size on disk.")
    cap_bytes: int = Field(default=MAX_INSTRUCTION_BYTES,
                           description="At most this much of the file is sent.")
    truncated: bool = Field(default=False, description="Whether the file is over the cap.")
    included: bool = Field(default=False, description="Whether the next turn sends it (the "
                                                      "'project_instructions' setting).")
    tokens: int = Field(default=0, description="Prompt tokens it adds to every request.")


@router.get("/conversations/{conversation_id}/project-instructions",
            response_model=ProjectInstructionsOut, responses=NOT_FOUND)
async def project_instructions(conversation_id: str,
                               svc: AppServices = Depends(services),  # noqa: B008
                               ) -> ProjectInstructionsOut:
    """The AGENTS.md (or CLAUDE.md) the conversation's next turn puts in its system prompt."""
    def read() -> ProjectInstructionsOut:
        record = svc.conversation(conversation_id)
        found = project_instructions_for(record.id, record.settings or {}, svc.workdirs_root)
        if found is None:
            return ProjectInstructionsOut(found=False)
        return ProjectInstructionsOut(found=True, **found.as_dict())

    return await asyncio.to_thread(read)
