"""What can go wrong with a command preview, as the types front ends map to words.

Re-exported here (and through the session's ``__init__``) so a front end
names them without importing the workspace or the core; this module is
loaded only when one of them is first named, so an idle window does not
load the apply machinery.
"""

from __future__ import annotations

from desktop_agent.core.tooling.builtin.command_preview import PreviewUnavailableError
from desktop_agent.session.files.command_previews import PreviewNotFoundError
from desktop_agent.workspace.preview_apply import (
    AppliedPreview,
    PreviewApplyError,
    PreviewConflictError,
)

__all__ = ["AppliedPreview", "PreviewApplyError", "PreviewConflictError",
           "PreviewNotFoundError", "PreviewUnavailableError"]
