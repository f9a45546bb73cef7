"""Built-in tools for one conversation's working directory.

``builtin_tools(workdir)`` returns ``read_file``, ``write_file``, ``edit_file``,
``list_dir``, ``glob``, ``grep`` and ``bash``, all confined to ``workdir``.
The read-only ones (``read_file``, ``list_dir``, ``glob``, ``grep``) say so, so
a rule may let them run without asking; the others ask by default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from desktop_agent.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from desktop_agent.core.tooling.builtin.change_set import ChangeSet, PathChange
    from desktop_agent.core.tooling.builtin.command_preview import (
        CommandPreview,
        CommandPreviews,
        PreviewUnavailableError,
        preview_command,
        preview_problem,
    )
    from desktop_agent.core.tooling.builtin.declare import BUILTIN_SOURCE
    from desktop_agent.core.tooling.builtin.sandbox import SANDBOX_LEVELS, SandboxPolicy
    from desktop_agent.core.tooling.builtin.sandbox_warning import UNSANDBOXED_WARNING
    from desktop_agent.core.tooling.builtin.shell_tool import run_command
    from desktop_agent.core.tooling.builtin.workdir import (
        BuiltinToolError,
        OutsideWorkdirError,
        Workdir,
    )
    from desktop_agent.core.tooling.tools import Tool

# Where each name lives. Importing a submodule (the session reads the sandbox's
# levels, the window its warning sentence) runs this file first, so it imports
# the tools themselves (file, search and shell tools, jsonschema behind them)
# only when a name is asked for: the window paints without them.
_LAZY = {
    "BUILTIN_SOURCE": "declare",
    "ChangeSet": "change_set",
    "PathChange": "change_set",
    "CommandPreview": "command_preview",
    "CommandPreviews": "command_preview",
    "PreviewUnavailableError": "command_preview",
    "preview_command": "command_preview",
    "preview_problem": "command_preview",
    "SANDBOX_LEVELS": "sandbox",
    "UNSANDBOXED_WARNING": "sandbox_warning",
    "SandboxPolicy": "sandbox",
    "run_command": "shell_tool",
    "BuiltinToolError": "workdir",
    "OutsideWorkdirError": "workdir",
    "Workdir": "workdir",
}


__getattr__ = lazy_exports(__name__, _LAZY)


#: Names of the built-in tools, in the order builtin_tools() returns them.
BUILTIN_TOOL_NAMES = ("read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "bash")


def builtin_tools(
    workdir: str | os.PathLike[str] | Workdir,
    *,
    env_secrets: Mapping[str, str] | None = None,
    include: tuple[str, ...] | None = None,
    sandbox: SandboxPolicy | None = None,
    previews: CommandPreviews | None = None,
) -> list[Tool]:
    """The built-in tools bound to ``workdir``.

    Args:
        workdir: The conversation's working directory (must exist).
        env_secrets: Environment variables for ``bash`` whose values are
            secrets: the command sees them, the transcript never does.
        include: Only these tool names (default: all of them).
        sandbox: Where ``bash`` may reach (default: the working folder
            read-write, no network; see :class:`SandboxPolicy`); its
            ``hidden`` folders are absent for every tool.
        previews: Run ``bash`` commands on an overlay first and let its
            ``decide`` apply or discard their changes (see
            :class:`CommandPreviews`; ``desktop_agent.workspace.preview_apply``
            applies them).

    Raises:
        BuiltinToolError: ``workdir`` is not a folder, or ``include`` names an
            unknown tool.
    """
    from desktop_agent.core.tooling.builtin.bash_tool import shell_tool
    from desktop_agent.core.tooling.builtin.file_tools import file_tools
    from desktop_agent.core.tooling.builtin.search_tools import search_tools
    from desktop_agent.core.tooling.builtin.workdir import BuiltinToolError, Workdir

    # The sandbox's hidden folders (the app's data folder) are absent for the
    # file tools too, not only for bash.
    root = workdir if isinstance(workdir, Workdir) else \
        Workdir(workdir, hidden=sandbox.hidden if sandbox else ())
    tools = [*file_tools(root), *search_tools(root),
             shell_tool(root, env_secrets, sandbox, previews)]
    if include is None:
        return tools
    unknown = set(include) - set(BUILTIN_TOOL_NAMES)
    if unknown:
        raise BuiltinToolError(f"unknown built-in tools: {', '.join(sorted(unknown))}")
    return [item for item in tools if item.name in include]


__all__ = [
    "BUILTIN_SOURCE",
    "BUILTIN_TOOL_NAMES",
    "SANDBOX_LEVELS",
    "UNSANDBOXED_WARNING",
    "BuiltinToolError",
    "ChangeSet",
    "CommandPreview",
    "CommandPreviews",
    "OutsideWorkdirError",
    "PathChange",
    "PreviewUnavailableError",
    "SandboxPolicy",
    "Workdir",
    "builtin_tools",
    "preview_command",
    "preview_problem",
    "run_command",
]
