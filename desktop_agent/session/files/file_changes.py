"""What a ``write_file`` or ``edit_file`` call will do to a file, and what it did.

Before a person allows such a call, the approval shows the change as a diff
against the file on disk now (:func:`preview_change`); after the call ran, the
tool result keeps the diff of what actually changed (:class:`FileChangeWatch`),
stored in the message's metadata under ``file_change`` so the card shows it
again after a restart or an import.

Every diff made here blanks the conversation's secrets out of both sides first
(:func:`blanker`): a file a command wrote a token into shows
``[secret TOKEN redacted]`` on the card, over REST and in the stored message.

The file is read through the same confinement the built-in tools use
(:mod:`desktop_agent.core.tooling.builtin.confined_fs`), and an edit is worked
out by the tool's own :func:`~desktop_agent.core.tooling.builtin.file_tools.edited_text`:
a path that leads out of the working folder, or an ``old_string`` that is not
there, is reported on the card in the words the tool itself would use.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from desktop_agent.core.tooling.builtin.workdir import Workdir
    from desktop_agent.core.tooling.hooks import (
        HookDecision,
        Hooks,
        PostToolUseEvent,
        PreToolUseEvent,
    )
    from desktop_agent.workspace.diffs import FileDiff

log = logging.getLogger("desktop_agent.session.file_changes")

Blank = Callable[[str], str]
"""Blanks secrets out of one side of a diff (see :func:`blanker`)."""

#: The built-in tools whose calls change one named file.
FILE_CHANGING_TOOLS = frozenset({"write_file", "edit_file"})
#: Metadata key of a tool result's diff of what actually changed.
FILE_CHANGE_KEY = "file_change"
# The built-in tools' modules are imported when a file-changing call comes, not when
# the session layer loads: opening the window does not pay for them.


def blanker(marks: Mapping[str, str]) -> Blank | None:
    """A function that replaces every form of each secret (``marks``' keys) by its mark.

    None when there is no secret to blank (diffs are then made as they are).
    """
    if not marks:
        return None
    from desktop_agent.core.secret_forms import redact_text

    frozen = dict(marks)
    return lambda text: redact_text(text, frozen)


@dataclass(frozen=True, slots=True)
class ChangePreview:
    """What a file-changing call would do, shown before anyone allows it.

    Attributes:
        path: The path the call names.
        diff: The change as a diff, or None when the call would fail.
        problem: Why the call would fail (the tool's own words), or None.
    """

    path: str
    diff: FileDiff | None
    problem: str | None = None

    @property
    def text(self) -> str:
        """Plain text for REST and logs: the unified diff, or the problem."""
        if self.diff is None:
            return f"This call would fail: {self.problem}\n"
        return self.diff.unified_text()

    def to_dict(self) -> dict[str, Any]:
        """The preview as JSON-able data (REST's ``diff`` field)."""
        return {
            "path": self.path,
            "kind": self.diff.kind.value if self.diff else None,
            "counts": self.diff.counts if self.diff else None,
            "summary": self.diff.summary if self.diff else None,
            "problem": self.problem,
            "text": self.text,
        }


def preview_change(tool_name: str, tool_input: Mapping[str, Any],
                   workdir: Path | None, blank: Blank | None = None) -> ChangePreview | None:
    """The change a ``write_file``/``edit_file`` call would make, against the disk now.

    Blocking (it reads the file): run it in a worker thread. None for any other
    tool, for a call without a path, and when no working folder is set.
    ``blank`` blanks secrets out of both sides and out of a problem's words.
    """
    from desktop_agent.core.tooling.builtin.workdir import BuiltinToolError, Workdir

    path = tool_input.get("path")
    if tool_name not in FILE_CHANGING_TOOLS or workdir is None or not isinstance(path, str):
        return None
    try:
        folder = Workdir(workdir)
        if tool_name == "write_file":
            return ChangePreview(path, _written(folder, path, tool_input.get("content"), blank))
        return ChangePreview(path, _edited(folder, path, tool_input, blank))
    except BuiltinToolError as exc:
        problem = str(exc)
    except OSError as exc:
        problem = f"{path!r} cannot be read: {exc.strerror or exc}"
    return ChangePreview(path, None, problem if blank is None else blank(problem))


def _written(folder: Workdir, path: str, content: object, blank: Blank | None) -> FileDiff:
    from desktop_agent.core.tooling.builtin.confined_fs import (
        MissingFileError,
        read_bytes,
        reading,
    )
    from desktop_agent.core.tooling.builtin.workdir import BuiltinToolError
    from desktop_agent.workspace.diffs import MAX_DIFF_BYTES, DiffKind, FileDiff, diff_bytes

    if not isinstance(content, str):
        raise BuiltinToolError("content must be text")
    new = content.encode("utf-8")
    shown = _shown_path(folder, path)
    try:
        with reading(folder, path) as opened:
            size = opened.info.st_size
            if size > MAX_DIFF_BYTES:
                return FileDiff(shown, DiffKind.OVER_CAP, old_size=size, new_size=len(new))
            old: bytes | None = read_bytes(opened, MAX_DIFF_BYTES + 1)
    except MissingFileError:
        old = None
    return diff_bytes(shown, old, new, blank=blank)


def _edited(folder: Workdir, path: str, tool_input: Mapping[str, Any],
            blank: Blank | None) -> FileDiff:
    from desktop_agent.core.tooling.builtin.confined_fs import reading
    from desktop_agent.core.tooling.builtin.file_tools import (
        check_edit_strings,
        editable_text,
        edited_text,
    )
    from desktop_agent.core.tooling.builtin.workdir import BuiltinToolError
    from desktop_agent.workspace.diffs import diff_bytes

    old_string, new_string = tool_input.get("old_string"), tool_input.get("new_string")
    if not isinstance(old_string, str) or not isinstance(new_string, str):
        raise BuiltinToolError("old_string and new_string must be text")
    check_edit_strings(old_string, new_string)
    with reading(folder, path) as opened:
        original = editable_text(opened, path)
    updated, _count = edited_text(original, path, old_string, new_string,
                                  tool_input.get("replace_all") is True)
    return diff_bytes(_shown_path(folder, path),
                      original.encode("utf-8", errors="surrogateescape"),
                      updated.encode("utf-8", errors="surrogateescape"), blank=blank)


def _shown_path(folder: Workdir, path: str) -> str:
    """The path relative to the working folder, as the card and the diff header show it."""
    from desktop_agent.core.tooling.builtin.workdir import BuiltinToolError

    try:
        return folder.display(folder.resolve(path))
    except BuiltinToolError:
        return path


def current_bytes(workdir: Path, path: str) -> tuple[str, bytes | None, int]:
    """``(shown path, content or None when missing, size)``; content is cut at the cap.

    Blocking. Raises BuiltinToolError/OSError when the file cannot be read.
    """
    from desktop_agent.core.tooling.builtin.confined_fs import (
        MissingFileError,
        read_bytes,
        reading,
    )
    from desktop_agent.core.tooling.builtin.workdir import Workdir
    from desktop_agent.workspace.diffs import MAX_DIFF_BYTES

    folder = Workdir(workdir)
    shown = _shown_path(folder, path)
    try:
        with reading(folder, path) as opened:
            return shown, read_bytes(opened, MAX_DIFF_BYTES + 1), opened.info.st_size
    except MissingFileError:
        return shown, None, 0


def change_between(shown: str, before: tuple[bytes | None, int],
                   after: tuple[bytes | None, int], blank: Blank | None = None
                   ) -> FileDiff | None:
    """The diff of what changed between two readings (None: both missing)."""
    from desktop_agent.workspace.diffs import MAX_DIFF_BYTES, DiffKind, FileDiff, diff_bytes

    (old, old_size), (new, new_size) = before, after
    if old is None and new is None:
        return None
    if old_size > MAX_DIFF_BYTES or new_size > MAX_DIFF_BYTES:
        return FileDiff(shown, DiffKind.OVER_CAP, old_size=None if old is None else old_size,
                        new_size=None if new is None else new_size)
    return diff_bytes(shown, old, new, blank=blank)


class FileChangeWatch:
    """Reads a file before and after each ``write_file``/``edit_file`` call of a turn.

    Why hooks: every such call passes the core's ``PreToolUse`` and ``PostToolUse``
    hooks, whether a person, a rule or "confirm off" let it run, so the record
    of what changed does not depend on how the call was allowed.

    Args:
        workdir: Returns the conversation's working folder for built-in tools
            (None: none), read in a worker thread.
        secret_marks: Returns the conversation's secrets and their marks, to blank
            out of the diffs kept (read in a worker thread).
    """

    def __init__(self, workdir: Callable[[], Path | None],
                 secret_marks: Callable[[], Mapping[str, str]] = dict) -> None:
        self._workdir = workdir
        self._secret_marks = secret_marks
        self._before: dict[str, tuple[str, Path, tuple[bytes | None, int]]] = {}
        self._changes: dict[str, dict[str, Any]] = {}

    def hooks(self, shared: Hooks | None) -> dict[str, list[Any]]:
        """``shared`` hooks with this watch's two run last (they never decide anything)."""
        from desktop_agent.core.tooling.hooks import HOOK_POST_TOOL_USE, HOOK_PRE_TOOL_USE

        merged: dict[str, list[Any]] = {name: list(handlers)
                                        for name, handlers in (shared or {}).items()}
        merged.setdefault(HOOK_PRE_TOOL_USE, []).append(self._pre)
        merged.setdefault(HOOK_POST_TOOL_USE, []).append(self._post)
        return merged

    def change_of(self, tool_use_id: str) -> dict[str, Any] | None:
        """What the call changed (a :meth:`FileDiff.to_dict`), once it has run."""
        return self._changes.get(tool_use_id)

    def forget(self) -> None:
        """Start a new turn."""
        self._before.clear()
        self._changes.clear()

    async def _pre(self, event: PreToolUseEvent) -> HookDecision | None:
        await self._read_before(event.tool_use_id, event.tool_name, event.tool_input)
        return None

    async def before_run(self, tool_use_id: str, tool_name: str,
                         tool_input: Mapping[str, Any]) -> None:
        """Read the file again just before an allowed call runs, with the input that runs.

        Why: ``PreToolUse`` comes before the person is asked, with the model's
        arguments; an approval may edit them (even the path) and may come minutes
        later. The approval broker calls this once the call is allowed, so what
        the card keeps is what this call changed in the file it wrote.
        """
        await self._read_before(tool_use_id, tool_name, tool_input)

    async def _read_before(self, tool_use_id: str, tool_name: str,
                           tool_input: Mapping[str, Any]) -> None:
        from desktop_agent.core.tooling.builtin.workdir import BuiltinToolError

        self._before.pop(tool_use_id, None)  # an older reading is of another input
        path = tool_input.get("path")
        if tool_name not in FILE_CHANGING_TOOLS or not isinstance(path, str):
            return
        try:
            folder = await asyncio.to_thread(self._workdir)
            if folder is None:
                return
            shown, data, size = await asyncio.to_thread(current_bytes, folder, path)
        except (BuiltinToolError, OSError) as exc:
            log.debug("no before-reading of %s: %s", path, exc)
            return
        self._before[tool_use_id] = (shown, folder, (data, size))

    async def _post(self, event: PostToolUseEvent) -> HookDecision | None:
        from desktop_agent.core.tooling.builtin.workdir import BuiltinToolError

        before = self._before.pop(event.tool_use_id, None)
        path = event.tool_input.get("path")
        if before is None or event.is_error or not isinstance(path, str):
            return None
        shown, folder, reading_before = before
        try:
            now_shown, data, size = await asyncio.to_thread(current_bytes, folder, path)
        except (BuiltinToolError, OSError) as exc:
            log.debug("no after-reading of %s: %s", path, exc)
            return None
        if now_shown != shown:  # not the file read before: no diff rather than a wrong one
            log.info("the file of %s changed between its readings; no diff kept", event.tool_name)
            return None
        diff = await asyncio.to_thread(
            lambda: change_between(shown, reading_before, (data, size),
                                   blanker(self._secret_marks())))
        if diff is not None:
            self._changes[event.tool_use_id] = diff.to_dict()
        return None


def stored_file_change(metadata: Mapping[str, Any]) -> FileDiff | None:
    """The diff of what a tool call changed, as its result's metadata keeps it (or None).

    Metadata comes from the store, an import or another version of the app: what
    cannot be read as a diff is left out (logged), never an error for the reader.
    """
    from desktop_agent.workspace.diffs import FileDiff

    data = metadata.get(FILE_CHANGE_KEY)
    if not isinstance(data, Mapping):
        return None
    try:
        return FileDiff.from_dict(data)
    except ValueError:
        log.info("a stored file change could not be read; not shown")
        return None
