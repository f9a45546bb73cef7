"""A conversation's project context: its ``AGENTS.md`` and the model's plan.

A script driving the server sees what the window shows: which instruction
file goes into the system prompt, whether it was cut at the cap, what it
costs in tokens per request, whether the conversation's switch
(``project_instructions``) leaves it out; and the checklist the model keeps
with ``update_plan`` (also sent live as ``plan`` events).
"""

from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from desktop_agent.server.app_services import AppServices, services
from desktop_agent.server.routes.conversations import NOT_FOUND
from desktop_agent.session import MAX_INSTRUCTION_BYTES, plan_of, project_instructions_for

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


class PlanStepOut(BaseModel):
    """One step of the model's checklist."""

    step: str
    status: Literal["pending", "in_progress", "completed"]


class PlanOut(BaseModel):
    """The model's checklist: the input of its last successful ``update_plan`` call."""

    explanation: str | None = None
    plan: list[PlanStepOut] = Field(default_factory=list,
                                    description="Empty when the model set no plan.")


@router.get("/conversations/{conversation_id}/plan", response_model=PlanOut,
            responses=NOT_FOUND)
async def conversation_plan(conversation_id: str,
                            svc: AppServices = Depends(services),  # noqa: B008
                            ) -> PlanOut:
    """The plan on the conversation's active branch (kept with its messages)."""
    def read() -> PlanOut:
        svc.conversation(conversation_id)
        plan = plan_of(svc.store.active_path(conversation_id))
        return PlanOut() if plan is None else PlanOut.model_validate(plan.as_dict())

    return await asyncio.to_thread(read)
