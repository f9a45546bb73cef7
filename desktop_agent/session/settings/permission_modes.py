"""A conversation's permission mode: the setting, its words, and the sandbox it needs.

The core applies the mode to every call
(:func:`~desktop_agent.core.tooling.permissions.apply_permission_mode`); this
is the app's side: the ``permission_mode`` setting as both front ends read it,
what the window calls each mode, the order Shift+Tab cycles through (Claude
Code's, without ``bypassPermissions``, which is only ever chosen on purpose),
and the one rule the app adds: **bypassPermissions only with an active sandbox**
(everything would otherwise run with the account's full rights, unasked). A
setting that asks for it without one is refused with the reason
(:func:`~desktop_agent.session.settings.settings_check.check_permission_mode`);
a turn that finds it without one (bubblewrap removed since) runs in
``default`` instead.

No pydantic here: the window's header imports it before it paints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from desktop_agent.core.tooling.permissions import (
    EXIT_PLAN_TOOL,
    PERMISSION_MODES,
    PermissionMode,
)

__all__ = ["EXIT_PLAN_TOOL", "PERMISSION_MODE_CYCLE", "PERMISSION_MODE_DETAILS",
           "PERMISSION_MODE_LABELS", "bypass_refusal", "effective_mode",
           "next_permission_mode", "permission_mode_of"]

#: What the window's selector shows for each mode.
PERMISSION_MODE_LABELS: dict[str, str] = {
    "default": "Ask first",
    "acceptEdits": "Accept edits",
    "plan": "Plan only",
    "bypassPermissions": "Bypass all",
}
#: A sentence on each mode (tooltips, the REST schema's description).
PERMISSION_MODE_DETAILS: dict[str, str] = {
    "default": "Rules decide first; every other tool call waits for your approval.",
    "acceptEdits": "File edits in the working folder run without asking; commands still ask.",
    "plan": "Only read-only tools run. The model investigates and hands in a plan; "
            "approving it switches to Ask first or Accept edits.",
    "bypassPermissions": "Every tool call runs without asking (deny rules still apply). "
                         "Only with the command sandbox active.",
}
#: Shift+Tab in the composer steps through these (Claude Code's cycle).
PERMISSION_MODE_CYCLE: tuple[PermissionMode, ...] = ("default", "acceptEdits", "plan")


def permission_mode_of(settings: Mapping[str, Any]) -> PermissionMode:
    """The conversation's mode as set (``default`` when unset or unknown)."""
    mode = settings.get("permission_mode")
    for known in PERMISSION_MODES:
        if mode == known:
            return known
    return "default"


def next_permission_mode(mode: str) -> PermissionMode:
    """The mode Shift+Tab moves to from ``mode``."""
    cycle = PERMISSION_MODE_CYCLE
    if mode not in cycle:
        return cycle[0]
    return cycle[(cycle.index(mode) + 1) % len(cycle)]


def bypass_refusal(settings: Mapping[str, Any]) -> str | None:
    """Why ``bypassPermissions`` cannot apply to these settings here (None: it can).

    Blocking the first time: the sandbox is probed once per process.
    """
    from desktop_agent.session.settings.sandbox_settings import sandbox_status

    status = sandbox_status(settings)
    if status.sandboxed:
        return None
    return ("Bypass permissions needs the command sandbox, and commands here would run "
            f"without one ({status.label}): every call would run with your account's full "
            "rights, unasked. Turn the sandbox on (or install bubblewrap) first.")


def effective_mode(settings: Mapping[str, Any]) -> PermissionMode:
    """The mode a turn runs in: the setting, but never bypass without a sandbox."""
    mode = permission_mode_of(settings)
    if mode == "bypassPermissions" and bypass_refusal(settings) is not None:
        return "default"
    return mode
