"""MCP servers as tools: each configured server's tools become core :class:`Tool` s.

A tool ``search`` on server ``github`` is offered to the model as
``github__search``, with the server's input schema and description, its
``readOnlyHint`` as ``read_only`` and the server's name as ``source``, so it
passes through the same rules and approval dock as the built-in tools.

:class:`McpServerPool` owns the connections. Servers start lazily (on the first
``list_tools()`` or call), each in a task of its own: the SDK's transports are
anyio context managers that must be entered and left in one task, so every
session lives inside one long-lived task and calls reach it through a queue.
A server that dies is restarted once; after that it stays failed until
:meth:`McpServerPool.restart`. Each stdio server's stderr is kept (last lines,
secrets blanked) so the window can show why it failed. One broken server never
blocks the others, and ``aclose()`` stops them all.

The names below load on first use (PEP 562): the official ``mcp`` SDK and its
types take about a second to import, and :mod:`.server_usage` is needed (to
check tool names) by every conversation, including the many that use no MCP
server at all; the REST server used to import the SDK inside its event loop
on the first conversation it created.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from desktop_agent.core.tooling.mcp.elicitation_form import (
        FormField,
        UnsupportedForm,
        check_answer,
        form_fields,
    )
    from desktop_agent.core.tooling.mcp.mcp_items import (
        McpPrompt,
        McpResource,
        McpResourceTemplate,
        PromptArgument,
        PromptText,
        ResourceContent,
    )
    from desktop_agent.core.tooling.mcp.server_connection import (
        DEFAULT_CALL_TIMEOUT,
        DEFAULT_STARTUP_TIMEOUT,
        DEFAULT_STDERR_LINES,
        MAX_RESTARTS,
        McpServerConnection,
        McpServerError,
        McpServerStatus,
        ServerState,
    )
    from desktop_agent.core.tooling.mcp.server_log import LOG_LEVELS, LogEntry
    from desktop_agent.core.tooling.mcp.server_pool import McpServerPool, McpToolError
    from desktop_agent.core.tooling.mcp.server_requests import (
        DEFAULT_SAMPLING_LIMIT,
        ElicitationAnswer,
        ElicitationRequest,
        McpCaller,
        SamplingMessage,
        SamplingReply,
        SamplingRequest,
        ServerRequestRefused,
        using_caller,
    )
    from desktop_agent.core.tooling.mcp.tool_mapping import core_tool_name, render_result

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_SAMPLING_LIMIT",
    "DEFAULT_STARTUP_TIMEOUT",
    "DEFAULT_STDERR_LINES",
    "LOG_LEVELS",
    "MAX_RESTARTS",
    "ElicitationAnswer",
    "ElicitationRequest",
    "FormField",
    "LogEntry",
    "McpCaller",
    "McpPrompt",
    "McpResource",
    "McpResourceTemplate",
    "McpServerConnection",
    "McpServerError",
    "McpServerPool",
    "McpServerStatus",
    "McpToolError",
    "PromptArgument",
    "PromptText",
    "ResourceContent",
    "SamplingMessage",
    "SamplingReply",
    "SamplingRequest",
    "ServerRequestRefused",
    "ServerState",
    "UnsupportedForm",
    "check_answer",
    "core_tool_name",
    "form_fields",
    "render_result",
    "using_caller",
]

_HOMES = {
    **dict.fromkeys(("DEFAULT_CALL_TIMEOUT", "DEFAULT_STARTUP_TIMEOUT", "DEFAULT_STDERR_LINES",
                     "MAX_RESTARTS", "McpServerConnection", "McpServerError",
                     "McpServerStatus", "ServerState"), ".server_connection"),
    **dict.fromkeys(("McpServerPool", "McpToolError"), ".server_pool"),
    **dict.fromkeys(("core_tool_name", "render_result"), ".tool_mapping"),
    **dict.fromkeys(("FormField", "UnsupportedForm", "check_answer", "form_fields"),
                    ".elicitation_form"),
    **dict.fromkeys(("McpPrompt", "McpResource", "McpResourceTemplate", "PromptArgument",
                     "PromptText", "ResourceContent"), ".mcp_items"),
    **dict.fromkeys(("LOG_LEVELS", "LogEntry"), ".server_log"),
    **dict.fromkeys(("DEFAULT_SAMPLING_LIMIT", "ElicitationAnswer", "ElicitationRequest",
                     "McpCaller", "SamplingMessage", "SamplingReply", "SamplingRequest",
                     "ServerRequestRefused", "using_caller"), ".server_requests"),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module(home, __name__)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types"):
            raise
        # the SDK installed alone: MCP is the `mcp` extra
        raise ModuleNotFoundError(
            "MCP servers need the mcp package, which this install lacks: "
            "pip install 'desktop-agent[mcp]'", name=exc.name) from exc
    value = getattr(module, name)
    globals()[name] = value
    return value
