"""Which tools a conversation may offer its model.

The window offers the built-in workdir tools (files, search, shell) confined
to the conversation's work folder, plus any tools the app was started with
(the smoke test and the tests add their own). A conversation's settings pick
a subset by name (``settings["tools"]``); without that key every tool is on.
The core is imported here only when tools are first needed, after the window
has painted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from desktop_agent.core.tools import Tool

log = logging.getLogger("desktop_agent.gui.tools")


class ToolCatalog:
    """Builds the tool list for a conversation.

    Args:
        extra_tools: Tools offered besides the built-in ones.
        include_builtin: Whether the built-in workdir tools are offered.
    """

    def __init__(self, extra_tools: Sequence[Tool] = (), *, include_builtin: bool = True) -> None:
        self._extra = list(extra_tools)
        self._include_builtin = include_builtin

    def tool_names(self) -> list[str]:
        """Names of every tool a conversation could enable, for the settings dialog."""
        names: list[str] = []
        if self._include_builtin:
            from desktop_agent.core.builtin_tools import BUILTIN_TOOL_NAMES

            names.extend(BUILTIN_TOOL_NAMES)
        names.extend(t.name for t in self._extra if t.name not in names)
        return names

    def tools_for(self, conversation_id: str, settings: dict[str, Any]) -> list[Tool]:
        """The tools enabled in ``settings``, bound to the conversation's work folder."""
        wanted = settings.get("tools")
        enabled = set(wanted) if isinstance(wanted, list) else None
        tools: list[Tool] = []
        if self._include_builtin:
            from desktop_agent.core.builtin_tools import BUILTIN_TOOL_NAMES, builtin_tools

            include = tuple(n for n in BUILTIN_TOOL_NAMES if enabled is None or n in enabled)
            if include:
                tools.extend(builtin_tools(self.workdir(conversation_id, settings),
                                           include=include))
        tools.extend(t for t in self._extra if enabled is None or t.name in enabled)
        return tools

    @staticmethod
    def workdir(conversation_id: str, settings: dict[str, Any]) -> Path:
        """The conversation's work folder (its own under the data folder by default)."""
        chosen = settings.get("workdir")
        if chosen:
            folder = Path(str(chosen)).expanduser()
        else:
            from desktop_agent.paths import workdirs_dir

            folder = workdirs_dir() / conversation_id
        folder.mkdir(parents=True, exist_ok=True)
        return folder
