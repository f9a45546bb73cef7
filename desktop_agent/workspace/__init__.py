"""Qt-free work on a conversation's working folder: diffs of files and checkpoints.

The session layer uses this package to show a file change before it is allowed,
to record what changed after, and to undo a turn or restore files to a point;
the window and the REST server only read the results (through ``session``), so
both show the same diff. It knows no conversation, no store and no front end.
Scripts use it through :class:`~desktop_agent.workspace.file_checkpoints.FileCheckpoints`
(``AgentOptions(file_checkpoints=...)``, ``Client.rewind_files``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from desktop_agent.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from desktop_agent.workspace.file_checkpoints import FileCheckpoints as FileCheckpoints

#: ``FileCheckpoints`` (undo from code, for SDK scripts) loads when first asked for.
__all__ = ["FileCheckpoints"]
__getattr__ = lazy_exports(__name__, {"FileCheckpoints": "file_checkpoints"})
