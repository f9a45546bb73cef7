"""A conversation's own permission rules, kept in its settings under ``permission_rules``.

"Allow for this conversation" is remembered here, beside the other settings,
not in ``config.json`` (whose global rules are
:mod:`~desktop_agent.session.tools.config`'s): the conversation carries its
rules to an export and to every front end that opens it. The rules' parser
is the core's (:mod:`desktop_agent.core.tooling.config`); a malformed list
counts as no rules, so calls are asked about.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from desktop_agent.core.tooling import config as tool_config
from desktop_agent.core.tooling.config import ToolConfigError
from desktop_agent.core.tooling.permissions import PermissionRule

log = logging.getLogger("desktop_agent.session.config")

RULES_KEY = "permission_rules"
"""Key of a conversation's own rule list in its settings dict."""


def conversation_rules(settings: Mapping[str, Any]) -> list[PermissionRule]:
    """The conversation's own rules (none when its settings hold a malformed list)."""
    try:
        return parse_conversation_rules(settings)
    except ToolConfigError as exc:
        log.warning("conversation rules ignored: %s", exc)
        return []


def parse_conversation_rules(settings: Mapping[str, Any]) -> list[PermissionRule]:
    """The rules a conversation's settings hold under :data:`RULES_KEY`.

    Raises:
        ToolConfigError: The list or one of its rules is malformed (named).
    """
    return tool_config.rules_from_list(settings.get(RULES_KEY, []) or [],
                                       f"conversation settings: {RULES_KEY}")


def with_conversation_rules(settings: Mapping[str, Any],
                            rules: list[PermissionRule]) -> dict[str, Any]:
    """A copy of ``settings`` holding ``rules`` as the conversation's own."""
    return {**settings, RULES_KEY: tool_config.rules_to_list(rules)}


def allow_in_conversation(settings: Mapping[str, Any], tool_name: str) -> list[dict[str, Any]]:
    """The conversation's rule list once ``tool_name`` is allowed without asking."""
    rules = tool_config.add_rule(conversation_rules(settings),
                                 tool_config.always_allow_rule(tool_name))
    return tool_config.rules_to_list(rules)


def revoke_in_conversation(settings: Mapping[str, Any], tool_name: str) -> list[dict[str, Any]]:
    """The conversation's rule list once ``tool_name`` is asked about again."""
    rule = tool_config.always_allow_rule(tool_name)
    return tool_config.rules_to_list(tool_config.remove_rule(conversation_rules(settings), rule))


def conversation_allowed_tools(settings: Mapping[str, Any]) -> list[str]:
    """Tools allowed without asking in this conversation (whole-tool allow rules)."""
    return [r.tool for r in conversation_rules(settings)
            if r.decision == "allow" and not r.arguments and r.read_only is None]
