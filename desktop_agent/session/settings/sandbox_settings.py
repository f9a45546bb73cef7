"""A conversation's sandbox settings as the core's :class:`SandboxPolicy`.

The core knows nothing of the app's settings dict or data folder; this is the
one place that reads ``settings["sandbox"]`` and ``settings["network"]`` and
adds the data folder to what a command may never see (it is blanked out even
when a person picks a working folder that contains it). The window and the
REST server both build their bash tool and ``/commands`` through here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from desktop_agent.appdata.workdir_rule import hidden_folders
from desktop_agent.core.tooling.builtin.command_limits import CommandLimits
from desktop_agent.core.tooling.builtin.sandbox import (
    INSTALL_BWRAP,
    NO_BWRAP,
    SANDBOX_LEVELS,
    SandboxLevel,
    SandboxPolicy,
    processes_capped,
    sandbox_problem,
)

#: The level a conversation gets when its settings name none (or a bad one).
DEFAULT_SANDBOX = "workdir"
#: Settings key -> CommandLimits field: what one command may use.
LIMIT_SETTINGS = {"command_memory_mb": "memory_mb", "command_processes": "processes",
                  "command_file_mb": "file_mb", "command_tmp_mb": "tmp_mb"}


def limit_defaults() -> dict[str, int]:
    """Each limit setting's default (what applies when the conversation names none)."""
    defaults = CommandLimits()
    return {key: getattr(defaults, field) for key, field in LIMIT_SETTINGS.items()}


def command_limits(settings: Mapping[str, Any]) -> CommandLimits:
    """The conversation's limits; a missing or malformed value keeps its default."""
    chosen = {field: value for key, field in LIMIT_SETTINGS.items()
              if isinstance(value := settings.get(key), int) and not isinstance(value, bool)
              and value >= 1}
    return CommandLimits(**chosen)


def sandbox_level(settings: Mapping[str, Any] | None) -> SandboxLevel:
    """The sandbox level a conversation's commands run at; unknown values give the safe default.

    What :func:`sandbox_policy` decides first, without the rest (the data folder's
    real path is read for that): a turn's start asks only this of it once.
    """
    level = (settings or {}).get("sandbox", DEFAULT_SANDBOX)
    return cast("SandboxLevel", level if level in SANDBOX_LEVELS else DEFAULT_SANDBOX)


def sandbox_policy(settings: Mapping[str, Any] | None) -> SandboxPolicy:
    """The policy for a conversation's commands; unknown values fall back to the safe default."""
    settings = settings or {}
    level = sandbox_level(settings)
    return SandboxPolicy(level=level, network=settings.get("network") is True,
                         hidden=hidden_folders(), limits=command_limits(settings))


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """The sandbox that will actually apply to a conversation's commands, in words.

    The chosen level is not enough: on a machine without bubblewrap a
    ``workdir`` conversation's commands would run with the account's full
    rights, and the header said "Sandboxed". Front ends show this instead.

    Attributes:
        level: The level the settings choose (``workdir``, ``read_only``, ``off``).
        sandboxed: True when commands will run inside an OS sandbox.
        label: What the header shows ("Sandboxed", "Read-only", "No sandbox",
            "No sandbox: bubblewrap is not installed").
        detail: A sentence on what commands can reach, and how to get a
            sandbox when one is missing.
        processes_capped: False when the sandbox cannot cap how many processes a
            command starts here (a fork bomb then runs until its time limit).
    """

    level: str
    sandboxed: bool
    label: str
    detail: str
    processes_capped: bool = True


_LABELS = {"workdir": "Sandboxed", "read_only": "Read-only", "off": "No sandbox"}
_DETAILS = {
    "workdir": "Commands may change only the working folder; the rest of the system is "
               "read-only and your home folder is hidden.",
    "read_only": "Commands may read the working folder and change nothing.",
    "off": "Commands run with your account's full rights. Every command asks first and is "
           "never remembered.",
}


NOT_CAPPED = ("This machine cannot cap how many processes a command starts (no pids cgroup is "
              "delegated to the app, and the kernel does not apply the process limit inside "
              "the sandbox): a runaway command, such as a fork bomb, runs until its time limit.")


def sandbox_status(settings: Mapping[str, Any] | None) -> SandboxStatus:
    """What will apply to the conversation's commands on this machine (probes once)."""
    level = sandbox_policy(settings).level
    if level == "off":
        return SandboxStatus(level, False, _LABELS[level], _DETAILS[level])
    problem = sandbox_problem()
    if problem is None:
        if not processes_capped():
            return SandboxStatus(level, True, f"{_LABELS[level]}, processes not capped",
                                 f"{_DETAILS[level]} {NOT_CAPPED}", processes_capped=False)
        return SandboxStatus(level, True, _LABELS[level], _DETAILS[level])
    label = f"No sandbox: {problem}" if problem == NO_BWRAP else "No sandbox here"
    advice = INSTALL_BWRAP if problem == NO_BWRAP else f"{problem[:1].upper()}{problem[1:]}."
    return SandboxStatus(level, False, label,
                         "Commands would run with your account's full rights, so each one "
                         f"asks first. {advice}")


#: The ``command_preview`` values: run on the folder (default) or preview changes first.
PREVIEW_MODES = ("folder", "preview")


def previews_on(settings: Mapping[str, Any] | None) -> bool:
    """Whether the conversation's commands are previewed first (*Preview changes first*)."""
    return (settings or {}).get("command_preview") == "preview"


def previews_root() -> Path:
    """Where command previews keep their upper layers: ``<data folder>/previews``."""
    from desktop_agent.appdata.paths import data_dir

    return data_dir() / "previews"


@dataclass(frozen=True, slots=True)
class PreviewStatus:
    """Whether a conversation's commands can be previewed here, in words.

    Attributes:
        chosen: The setting asks for previews (*Preview changes first*).
        available: Previews can work for this conversation on this machine.
        detail: What the choice means, or why previews cannot work here
            (then commands run on the folder, as without the setting).
    """

    chosen: bool
    available: bool
    detail: str


def preview_status(settings: Mapping[str, Any] | None) -> PreviewStatus:
    """Whether the conversation's commands can be previewed here. Blocking (probes once)."""
    from desktop_agent.core.tooling.builtin.command_preview import preview_problem

    chosen = previews_on(settings)
    problem = preview_problem(sandbox_policy(settings), previews_root())
    if problem is None:
        return PreviewStatus(chosen, True,
                             "Each command runs first on a copy of the working folder (an "
                             "overlay); you see what it would change and Apply or Discard it.")
    return PreviewStatus(chosen, False,
                         f"Previews cannot work here: {problem}. Commands run on the folder.")
