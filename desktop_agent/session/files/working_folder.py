"""A conversation's working folder as its session sees it: checkpoints, file changes, previews.

One part of :class:`~desktop_agent.session.conversation.ConversationSession`,
handed to those that touch the folder: the turn (which closes each turn's
checkpoints and reports what changed), the approval broker (the diff a call
would make, the file read before it runs) and
:class:`~desktop_agent.session.files.folder_undo.FolderUndo`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_agent.session.events import FilesChanged, Notice, SessionEvent
from desktop_agent.session.files.file_changes import (
    FILE_CHANGING_TOOLS,
    ChangePreview,
    FileChangeWatch,
    blanker,
    preview_change,
)
from desktop_agent.session.files.project_instructions import (
    ProjectInstructions,
    project_instructions_for,
)
from desktop_agent.session.settings.conversation_secrets import conversation_secret_marks

if TYPE_CHECKING:
    from desktop_agent.session.files.file_checkpoints import ConversationCheckpoints, TurnMark
    from desktop_agent.session.settings.settings_record import SettingsRecord
    from desktop_agent.session.tools.tool_catalog import ToolCatalog


class WorkingFolder:
    """The conversation's working folder: its checkpoints and what its calls change.

    Args:
        settings: The conversation's record (its id, and the settings that name the folder).
        tools: The tool catalog, which knows (and makes) the folder.
        emit: Reports session events.

    Attributes:
        changes: What the running turn's ``write_file``/``edit_file`` calls changed.
    """

    def __init__(self, settings: SettingsRecord, tools: ToolCatalog,
                 emit: Callable[[SessionEvent], None]) -> None:
        self._settings = settings
        self._tools = tools
        self._emit = emit
        self.changes = FileChangeWatch(self.builtin_workdir, self.secret_marks)
        self._checkpoints: ConversationCheckpoints | None = None

    @property
    def conversation_id(self) -> str:
        """The conversation whose folder this is."""
        return self._settings.conversation_id

    @property
    def checkpoints(self) -> ConversationCheckpoints:
        """Its working folder's checkpoints, made when first needed.

        Why lazy: the checkpoint, folder-scan and diff modules are ~0.5 MB that an
        idle window with restored tabs never uses; a turn, an undo or the files
        panel loads them (the first-input warm-up already has).
        """
        if self._checkpoints is None:
            from desktop_agent.session.files.file_checkpoints import ConversationCheckpoints

            settings, tools = self._settings, self._tools
            conversation_id = settings.conversation_id
            self._checkpoints = ConversationCheckpoints(
                conversation_id, lambda: tools.workdir(conversation_id, settings.current),
                lambda: settings.current, self.secret_marks)
        return self._checkpoints

    def secret_marks(self) -> dict[str, str]:
        """The conversation's secret values and their marks (blocking: the keyring).

        Read at each use, not kept: a secret set a moment ago must be blanked
        from the next diff, and a value must not outlive its deletion here.
        """
        return conversation_secret_marks(self._settings.conversation_id, self._settings.current)

    def builtin_workdir(self) -> Path | None:
        """The built-in tools' folder (blocking: it may make the folder); None if none."""
        from desktop_agent.session.tools.tool_catalog import WorkdirError

        try:
            return self._tools.builtin_workdir(self._settings.conversation_id,
                                               self._settings.current)
        except WorkdirError:  # the turn itself reports it, in words
            return None

    async def preview_change(self, tool_name: str,
                             tool_input: dict[str, Any]) -> ChangePreview | None:
        """What a built-in ``write_file``/``edit_file`` call would change, as a diff.

        Against the file on disk now, so a front end that lets a person edit the
        arguments shows the diff of the edited call. None for other tools and when
        the conversation has no built-in tools (so no working folder).
        """
        if tool_name not in FILE_CHANGING_TOOLS:
            return None
        return await asyncio.to_thread(
            lambda: preview_change(tool_name, tool_input, self.builtin_workdir(),
                                   blanker(self.secret_marks())))

    def project_instructions(self) -> ProjectInstructions | None:
        """The working folder's ``AGENTS.md`` (or ``CLAUDE.md``) as the next turn sends it.

        Blocking (reads the disk): front ends call it in a worker thread. Its
        ``included`` is false when the conversation's switch leaves it out.
        """
        return project_instructions_for(self._settings.conversation_id,
                                        self._settings.current, self._tools.workdirs_root)

    async def close_checkpoints(self, mark: TurnMark) -> None:
        """Close a turn's (or command's) checkpoints and report what it changed."""
        closed = await self.checkpoints.close(mark)
        if mark.notes:
            self._emit(Notice(" ".join(mark.notes)))
        if closed is not None and closed.changes:
            self._emit(FilesChanged(closed))
