"""The tools a conversation may name, and what each one's schema costs per request.

Every request carries the schemas of the conversation's tools; on a small
local model that is a real share of the context window, so the listing says
how many tokens each tool (and each group: built-in, each MCP server) adds.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from desktop_agent.core.tooling.schema_cost import costs_by_group, schema_costs
from desktop_agent.server.app_services import AppServices, services

router = APIRouter(tags=["tools"])


class ToolInfo(BaseModel):
    """One tool a conversation may enable in its ``tools`` setting."""

    name: str
    description: str
    group: str = Field(description="'built-in', 'custom', or the MCP server's name.")
    read_only: bool
    schema_tokens: int = Field(description="Prompt tokens its schema adds to every request.")


class ToolList(BaseModel):
    """The tools, with their schema cost per tool and per group."""

    tools: list[ToolInfo]
    schema_tokens: int = Field(description="All the schemas together (every tool enabled).")
    schema_tokens_by_group: dict[str, int]


@router.get("/tools", response_model=ToolList)
async def list_tools(svc: AppServices = Depends(services)) -> ToolList:  # noqa: B008
    """Tools a conversation may name, with the prompt tokens each schema costs."""
    tools = svc.session.tools.offered_tools()
    costs = schema_costs(tools)
    return ToolList(
        tools=[ToolInfo(name=t.name, description=t.description, group=c.group,
                        read_only=t.read_only, schema_tokens=c.tokens)
               for t, c in zip(tools, costs, strict=True)],
        schema_tokens=sum(c.tokens for c in costs),
        schema_tokens_by_group=costs_by_group(tools))
