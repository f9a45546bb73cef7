"""Building the core's :class:`~desktop_agent.core.options.AgentOptions` from settings.

A conversation's settings are a plain dict in the store; this is the one
place that says how each key becomes an agent option, so a new setting is
wired in one spot. The core is imported here, on the first turn, not when
the window starts.
"""

from __future__ import annotations

from typing import Any

from . import permission_settings


def build_agent_options(settings: dict[str, Any], api_key: str, tools: list[Any],
                        can_use_tool: Any, approval_timeout: float | None) -> Any:
    """The options for the next turn of a conversation with these settings.

    Args:
        settings: The conversation's settings (server, model, sampling...).
        api_key: The key to send ('not-needed' for local servers without one).
        tools: The tools the conversation offers.
        can_use_tool: The approval callback every tool call passes through.
        approval_timeout: Seconds the approval gate waits (None: forever).
    """
    from desktop_agent.core.options import AgentOptions

    s = settings
    return AgentOptions(
        model=str(s.get("model") or ""),
        base_url=str(s.get("base_url") or ""),
        system_prompt=s.get("system_prompt") or None,
        tools=tools,
        max_turns=None,
        max_tokens=s.get("max_tokens", 4096),
        temperature=s.get("temperature", 0.7),
        api_key=api_key,
        auto_execute_tools=True,
        max_tool_iterations=int(s.get("max_tool_iterations", 10)),
        permission_rules=permission_settings.effective_rules(s),
        can_use_tool=can_use_tool,
        # The gate times out (visibly) first; the core's limit is a backstop.
        approval_timeout=None if approval_timeout is None else approval_timeout + 30.0,
        context_length=s.get("context_length"),
        # per-conversation override of what discovery found (None: unknown)
        vision=s.get("vision") if isinstance(s.get("vision"), bool) else None,
        # Server-specific request fields (e.g. llama.cpp's ``cache_prompt``).
        extra_body=dict(s.get("extra_body") or {}),
    )
