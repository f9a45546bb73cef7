"""Settings a conversation could store but not use: tools nobody offers, a refused working folder.

The schema (:mod:`~desktop_agent.session.settings.conversation_settings`) says
whether a value has the right type and range; this says whether the app can
honour it: each tool named is one the catalog has (built-in, extra, or of a
configured MCP server, known by its prefix before the server starts), a
``workdir`` keeps the working-folder rule, and ``bypassPermissions`` has an
active sandbox. The REST server refuses a
conversation created or changed with either, naming what is wrong; it asks
here, so the rule is the session layer's, beside the schema, not the route's.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from desktop_agent.session.settings.conversation_settings import SettingsError


class OfferedTools(Protocol):
    """What the check asks of the tool catalog (a ``ToolCatalog``)."""

    def unknown(self, names: Sequence[str]) -> list[str]:
        """The names no tool has."""

    def tool_names(self) -> list[str]:
        """The names of every tool a conversation could enable."""


class UnknownToolError(SettingsError):
    """The ``tools`` setting names tools no one offers; the message lists those available."""


class BadWorkdirError(SettingsError):
    """The ``workdir`` setting breaks the working-folder rule; the message says which part."""


class PermissionModeError(SettingsError):
    """The permission mode asked for cannot be used here; the message says why."""


def check_permission_mode(settings: Mapping[str, Any],
                          changed: Collection[str] | None = None) -> None:
    """Refuse ``bypassPermissions`` without an active command sandbox, saying why.

    Checked when the mode or the sandbox changes (``changed``; None: always),
    so turning the sandbox off under a bypassing conversation is refused too.
    Blocking the first time: the sandbox is probed once per process.

    Raises:
        PermissionModeError: With the reason, in words.
    """
    if changed is not None and not {"permission_mode", "sandbox"} & set(changed):
        return
    from desktop_agent.session.settings.permission_modes import (
        bypass_refusal,
        permission_mode_of,
    )

    if permission_mode_of(settings) == "bypassPermissions":
        refusal = bypass_refusal(settings)
        if refusal is not None:
            raise PermissionModeError(refusal)


def check_usable_settings(settings: Mapping[str, Any], tools: OfferedTools,
                          workdirs_root: Path | None,
                          changed: Collection[str] | None = None) -> None:
    """Refuse settings the app cannot honour, with a sentence saying why.

    Only the keys being changed are checked (``changed``; None: all), so a
    conversation made in the window with, say, an MCP tool whose server is
    not running can still have its temperature changed.

    Args:
        settings: The settings as they would be stored (the patch merged in).
        tools: The tool catalog the conversation's tools come from.
        workdirs_root: Where the app makes per-conversation folders (None: the
            data folder's).
        changed: The keys being changed; None checks every key.

    Raises:
        UnknownToolError: A tool name is not one the catalog knows.
        BadWorkdirError: The working folder breaks the rule.
        PermissionModeError: ``bypassPermissions`` without an active sandbox.
    """
    check_permission_mode(settings, changed)
    if changed is None or "tools" in changed:
        unknown = tools.unknown(settings.get("tools") or [])
        if unknown:
            raise UnknownToolError(f"Unknown tool name(s): {', '.join(sorted(unknown))}. "
                                   f"Available: {', '.join(sorted(tools.tool_names()))}.")
    workdir = settings.get("workdir")
    if (changed is None or "workdir" in changed) and workdir is not None:
        from desktop_agent.appdata.workdir_rule import WorkdirRefused, checked_workdir

        try:
            checked_workdir(workdir, workdirs_root)
        except WorkdirRefused as exc:
            raise BadWorkdirError(f"workdir: {exc}.") from exc
