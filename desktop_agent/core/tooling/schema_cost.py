"""What each tool's schema costs in prompt tokens, per tool and per MCP server.

Every request carries the schema of every enabled tool; on a 2,048-token
model one MCP server can take most of the window before the conversation
starts. These figures let the settings show a person what a tool or a
server costs, counted the way compaction counts them (the JSON as sent,
with the app's tokenizer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from desktop_agent.core.context.prompt_size import tools_tokens
from desktop_agent.core.tooling.builtin.declare import BUILTIN_SOURCE
from desktop_agent.core.tooling.tools import Tool

#: The group of tools defined in code (neither built-in nor from an MCP server).
CUSTOM_GROUP = "custom"
BUILTIN_GROUP = "built-in"


@dataclass(frozen=True, slots=True)
class SchemaCost:
    """One tool's share of every prompt.

    Attributes:
        name: The tool's name as the model sees it.
        group: ``built-in``, ``custom``, or the MCP server's name.
        tokens: Tokens its schema adds to each request.
    """

    name: str
    group: str
    tokens: int


def tool_group(tool: Tool) -> str:
    """Where ``tool`` comes from, as the settings group it."""
    if tool.source == BUILTIN_SOURCE:
        return BUILTIN_GROUP
    return tool.source or CUSTOM_GROUP


def schema_costs(tools: Sequence[Tool]) -> list[SchemaCost]:
    """The cost of each tool's schema, in the order the tools are sent."""
    return [SchemaCost(t.name, tool_group(t), tools_tokens([t])) for t in tools]


def costs_by_group(tools: Sequence[Tool]) -> dict[str, int]:
    """Total schema tokens per group (built-in, each MCP server, custom)."""
    totals: dict[str, int] = {}
    for cost in schema_costs(tools):
        totals[cost.group] = totals.get(cost.group, 0) + cost.tokens
    return totals
