"""A conversation's sandbox settings as the core's :class:`SandboxPolicy`.

The core knows nothing of the app's settings dict or data folder; this is the
one place that reads ``settings["sandbox"]`` and ``settings["network"]`` and
adds the data folder to what a command may never see (it is blanked out even
when a person picks a working folder that contains it). The window and the
REST server both build their bash tool and ``/commands`` through here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from desktop_agent.appdata.workdir_rule import hidden_folders
from desktop_agent.core.tooling.builtin.command_limits import CommandLimits
from desktop_agent.core.tooling.builtin.sandbox import SANDBOX_LEVELS, SandboxPolicy

#: The level a conversation gets when its settings name none (or a bad one).
DEFAULT_SANDBOX = "workdir"
#: Settings key -> CommandLimits field: what one command may use.
LIMIT_SETTINGS = {"command_memory_mb": "memory_mb", "command_processes": "processes",
                  "command_file_mb": "file_mb", "command_tmp_mb": "tmp_mb"}


def command_limits(settings: Mapping[str, Any]) -> CommandLimits:
    """The conversation's limits; a missing or malformed value keeps its default."""
    chosen = {field: value for key, field in LIMIT_SETTINGS.items()
              if isinstance(value := settings.get(key), int) and not isinstance(value, bool)
              and value >= 1}
    return CommandLimits(**chosen)


def sandbox_policy(settings: Mapping[str, Any] | None) -> SandboxPolicy:
    """The policy for a conversation's commands; unknown values fall back to the safe default."""
    settings = settings or {}
    level = settings.get("sandbox", DEFAULT_SANDBOX)
    if level not in SANDBOX_LEVELS:
        level = DEFAULT_SANDBOX
    return SandboxPolicy(level=level, network=settings.get("network") is True,
                         hidden=hidden_folders(), limits=command_limits(settings))
