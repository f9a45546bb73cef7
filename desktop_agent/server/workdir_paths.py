"""Check a caller's relative path for a conversation's workdir, or refuse it.

The file routes take paths from the network. Before anything is opened the
API refuses absolute paths, ``..`` parts, NUL bytes and names longer than a
file system allows, by their text: a caller has no reason to send them, and
refusing them by their text makes the error plain. The opening itself goes
through :mod:`desktop_agent.core.tooling.builtin.confined_fs`, which walks the
path component by component from the workdir's descriptor, so a folder swapped
for a symlink while a request runs cannot lead it outside.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from desktop_agent.core.tooling.builtin.confined_fs import MAX_NAME_BYTES
from desktop_agent.core.tooling.builtin.workdir import BuiltinToolError, Workdir

from .api_errors import ApiError


def open_workdir(path: Path) -> Workdir:
    """The conversation's workdir, created if missing; the data folder is absent in it."""
    from desktop_agent.appdata.workdir_rule import hidden_folders

    try:
        path.mkdir(parents=True, exist_ok=True)
        return Workdir(path, hidden=hidden_folders())
    except (OSError, BuiltinToolError) as exc:
        raise ApiError(409, "workdir_unusable",
                       f"The conversation's workdir cannot be used: {exc}") from exc


def checked_parts(relative: str, *, allow_root: bool = False) -> list[str]:
    """The components of ``relative``, after refusing what no caller should send.

    Raises:
        ApiError: 400 when the path is absolute, climbs with ``..``, contains a
            NUL byte, has a name over 255 bytes, or names the workdir itself
            (unless ``allow_root``).
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
    for part in parts:
        if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
            raise ApiError(400, "bad_path",
                           f"A name in the path is longer than {MAX_NAME_BYTES} bytes, the most "
                           "a file system allows.")
    if not parts and not allow_root:
        raise ApiError(400, "bad_path", "The path names the workdir itself; name a file in it.")
    return parts
