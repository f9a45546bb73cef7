"""Remembered approvals, in the places the core reads them from.

"Always allow this tool" is a global rule in ``config.json`` (next to the MCP
servers), written through :mod:`desktop_agent.core.tool_config` so hand edits
and the REST server see the same file. "Allow for this conversation" is a
rule in the conversation's own settings (``permission_rules``). Both lists go
to the core, which settles calls by rules before anyone is asked.

A malformed config file never lets a tool run: its rules are treated as
absent (so calls are asked about), it is not overwritten, and the problem is
reported in words.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from desktop_agent.core import tool_config
from desktop_agent.core.permissions import PermissionRule

log = logging.getLogger("desktop_agent.gui.permissions")


class PermissionSettingsError(Exception):
    """The config file cannot be read or written; the message says why, in words."""


def load_rules(path: Path | None = None) -> list[PermissionRule]:
    """The global rules (empty, with a warning logged, when the file is malformed)."""
    try:
        return list(tool_config.load_tool_config(path).permissions)
    except tool_config.ToolConfigError as exc:
        log.warning("permission rules not loaded: %s", exc)
        return []


def config_problem(path: Path | None = None) -> str | None:
    """Why the config file cannot be used, or None when it is fine."""
    try:
        tool_config.load_tool_config(path)
    except tool_config.ToolConfigError as exc:
        return str(exc)
    return None


def add_rule(rule: PermissionRule, path: Path | None = None) -> None:
    """Remember a global rule (re-reading the file first, so hand edits are kept).

    Raises:
        PermissionSettingsError: The file is malformed or cannot be written.
    """
    try:
        tool_config.save_global_rule(rule, path)
    except (tool_config.ToolConfigError, OSError) as exc:
        raise PermissionSettingsError(f"The rule was not saved: {exc}") from exc


def remove_rule(rule: PermissionRule, path: Path | None = None) -> None:
    """Forget a global rule (revoke a remembered approval).

    Raises:
        PermissionSettingsError: The file is malformed or cannot be written.
    """
    try:
        config = tool_config.load_tool_config(path)
        config.permissions = tool_config.remove_rule(config.permissions, rule)
        tool_config.save_tool_config(config, path)
    except (tool_config.ToolConfigError, OSError) as exc:
        raise PermissionSettingsError(f"The rule was not removed: {exc}") from exc


def conversation_rules(settings: Mapping[str, Any]) -> list[PermissionRule]:
    """The conversation's own rules (none when its settings hold a malformed list)."""
    try:
        return tool_config.conversation_rules(settings)
    except tool_config.ToolConfigError as exc:
        log.warning("conversation rules ignored: %s", exc)
        return []


def with_conversation_allow(settings: Mapping[str, Any], tool_name: str) -> dict[str, Any]:
    """Settings that also allow every call of ``tool_name`` in this conversation."""
    rules = tool_config.add_rule(conversation_rules(settings),
                                 tool_config.always_allow_rule(tool_name))
    return tool_config.with_conversation_rules(settings, rules)


def without_conversation_allow(settings: Mapping[str, Any], tool_name: str) -> dict[str, Any]:
    """Settings in which ``tool_name`` is no longer allowed without asking."""
    rule = tool_config.always_allow_rule(tool_name)
    rules = tool_config.remove_rule(conversation_rules(settings), rule)
    return tool_config.with_conversation_rules(settings, rules)


def conversation_allowed_tools(settings: Mapping[str, Any]) -> list[str]:
    """Tools allowed without asking in this conversation (whole-tool allow rules)."""
    return [r.tool for r in conversation_rules(settings)
            if r.decision == "allow" and not r.arguments and r.read_only is None]


def effective_rules(settings: Mapping[str, Any]) -> list[PermissionRule]:
    """Every rule that applies to a conversation: its own, then the global ones."""
    return tool_config.effective_rules(conversation_rules(settings), load_rules())
