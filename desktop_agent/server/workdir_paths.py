"""Resolve a caller's relative path inside a conversation's workdir, or refuse it.

The file routes take paths from the network. On top of the core's
:class:`~desktop_agent.core.builtin_tools.workdir.Workdir` check (which follows
every symlink and refuses a result outside the folder), the API also refuses
absolute paths and any ``..`` part outright: a caller has no reason to send
them, and refusing them by their text makes the error plain.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from desktop_agent.core.builtin_tools.workdir import BuiltinToolError, Workdir

from .api_errors import ApiError


def open_workdir(path: Path) -> Workdir:
    """The conversation's workdir, created if missing."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        return Workdir(path)
    except (OSError, BuiltinToolError) as exc:
        raise ApiError(409, "workdir_unusable",
                       f"The conversation's workdir cannot be used: {exc}") from exc


def confined_path(workdir: Workdir, relative: str, *, allow_root: bool = False) -> Path:
    """The absolute path for ``relative`` inside ``workdir``.

    Raises:
        ApiError: 400 when the path is absolute, climbs with ``..``, contains
            a NUL byte, or leads outside the workdir through a symlink.
    """
    text = relative.replace("\\", "/").strip()
    if "\x00" in text:
        raise ApiError(400, "bad_path", "The path contains a NUL character.")
    pure = PurePosixPath(text)
    if pure.is_absolute() or (len(text) > 1 and text[1] == ":") or text.startswith("~"):
        raise ApiError(400, "bad_path", "Use a path relative to the conversation's workdir.")
    parts = [p for p in pure.parts if p not in ("", ".")]
    if ".." in parts:
        raise ApiError(400, "bad_path", "The path may not contain '..'.")
    if not parts:
        if allow_root:
            return workdir.root
        raise ApiError(400, "bad_path", "The path names the workdir itself; name a file in it.")
    try:
        return workdir.resolve("/".join(parts))
    except BuiltinToolError as exc:
        raise ApiError(400, "bad_path",
                       "The path leads outside the workdir (through a link).") from exc
