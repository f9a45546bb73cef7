"""File tools confined to the workdir: read_file, write_file, edit_file, list_dir.

The handlers are plain functions; :class:`~desktop_agent.core.tools.Tool` runs
them in a worker thread so that a large file never stalls the event loop that
also paints the window. Failures raise :class:`BuiltinToolError` with a
sentence the model can act on.
"""

from __future__ import annotations

import logging
import stat
from pathlib import Path

from ..tools import Tool
from .declare import builtin_tool
from .workdir import BuiltinToolError, Workdir

log = logging.getLogger("desktop_agent.tools.files")

#: Most characters read_file returns in one call (about 15k tokens).
MAX_READ_CHARS = 60_000
#: Lines read_file returns when no limit is given.
DEFAULT_READ_LINES = 2_000
#: Longest single line read_file shows in full.
MAX_LINE_CHARS = 2_000
#: Entries list_dir shows at most.
MAX_LIST_ENTRIES = 1_000
#: Largest file edit_file loads.
MAX_EDIT_BYTES = 10 * 1024 * 1024
_SNIFF_BYTES = 8_192


def looks_binary(path: Path) -> bool:
    """True when the start of the file holds a NUL byte (the usual binary test)."""
    with path.open("rb") as handle:
        return b"\x00" in handle.read(_SNIFF_BYTES)


def _existing_file(workdir: Workdir, path: str) -> Path:
    target = workdir.resolve(path)
    if not target.exists():
        raise BuiltinToolError(f"{path!r} does not exist")
    if target.is_dir():
        raise BuiltinToolError(f"{path!r} is a folder; use list_dir")
    if not target.is_file():
        raise BuiltinToolError(f"{path!r} is not a regular file")
    return target


def read_text(workdir: Workdir, path: str, offset: int = 1,
              limit: int = DEFAULT_READ_LINES) -> str:
    """Read lines ``offset``.. of a text file, within the size cap."""
    if offset < 1:
        raise BuiltinToolError("offset is a line number and starts at 1")
    if limit < 1:
        raise BuiltinToolError("limit must be at least 1")
    wanted = limit
    target = _existing_file(workdir, path)
    if looks_binary(target):
        size = target.stat().st_size
        raise BuiltinToolError(f"{path!r} is a binary file ({size} bytes); not shown")
    pieces: list[str] = []
    used = 0
    last_line = offset - 1
    stopped_for_size = False
    more_lines = False
    with target.open("r", encoding="utf-8", errors="replace", newline="") as handle:
        for number, line in enumerate(handle, start=1):
            if number < offset:
                continue
            if number >= offset + wanted:
                more_lines = True
                break
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + " [line cut]\n"
            if used + len(line) > MAX_READ_CHARS and pieces:
                stopped_for_size = True
                more_lines = True
                break
            pieces.append(line)
            used += len(line)
            last_line = number
    text = "".join(pieces)
    if not pieces and offset > 1:
        return f"[{path} has fewer than {offset} lines]"
    if more_lines:
        reason = "size cap" if stopped_for_size else "line limit"
        text += (f"\n[shown lines {offset}-{last_line} ({reason}); "
                 f"read on with offset={last_line + 1}]")
    return text


def write_text(workdir: Workdir, path: str, content: str) -> str:
    """Create or overwrite a file, creating its folders."""
    target = workdir.resolve(path)
    if target.is_dir():
        raise BuiltinToolError(f"{path!r} is a folder; give a file path")
    existed = target.exists()
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", encoding="utf-8", newline="") as handle:
        handle.write(content)
    size = len(content.encode("utf-8"))
    verb = "overwrote" if existed else "created"
    return f"{verb} {workdir.display(target)} ({size} bytes)"


def replace_text(workdir: Workdir, path: str, old_string: str, new_string: str,
                 replace_all: bool = False) -> str:
    """Replace an exact string; refuse when it is missing or ambiguous."""
    if old_string == "":
        raise BuiltinToolError("old_string is empty; use write_file to create a file")
    if old_string == new_string:
        raise BuiltinToolError("old_string and new_string are the same; nothing to change")
    target = _existing_file(workdir, path)
    if target.stat().st_size > MAX_EDIT_BYTES:
        raise BuiltinToolError(f"{path!r} is larger than {MAX_EDIT_BYTES} bytes; not edited")
    if looks_binary(target):
        raise BuiltinToolError(f"{path!r} is a binary file; not edited")
    with target.open("r", encoding="utf-8", errors="surrogateescape", newline="") as handle:
        original = handle.read()
    count = original.count(old_string)
    if count == 0:
        hint = ""
        if old_string.strip() and old_string.strip() in original:
            hint = " (it appears with different leading/trailing whitespace)"
        raise BuiltinToolError(f"old_string was not found in {path!r}{hint}; nothing changed")
    if count > 1 and not replace_all:
        raise BuiltinToolError(
            f"old_string occurs {count} times in {path!r}; include more surrounding text "
            "to make it unique, or set replace_all to true. Nothing changed"
        )
    updated = original.replace(old_string, new_string) if replace_all else \
        original.replace(old_string, new_string, 1)
    with target.open("w", encoding="utf-8", errors="surrogateescape", newline="") as handle:
        handle.write(updated)
    done = count if replace_all else 1
    return f"replaced {done} occurrence{'s' if done != 1 else ''} in {workdir.display(target)}"


def list_entries(workdir: Workdir, path: str = ".") -> str:
    """One line per entry: folders end with ``/``, files show their size."""
    target = workdir.resolve(path)
    if not target.exists():
        raise BuiltinToolError(f"{path!r} does not exist")
    if not target.is_dir():
        raise BuiltinToolError(f"{path!r} is not a folder")
    names = sorted(target.iterdir(), key=lambda p: p.name.lower())
    lines: list[str] = []
    for entry in names[:MAX_LIST_ENTRIES]:
        try:
            info = entry.lstat()
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            outside = "" if workdir.contains(entry) else "  (link leads outside; not usable)"
            lines.append(f"{entry.name}@{outside}")
        elif stat.S_ISDIR(info.st_mode):
            lines.append(f"{entry.name}/")
        else:
            lines.append(f"{entry.name}  {info.st_size} bytes")
    if not names:
        return f"{workdir.display(target)} is empty"
    if len(names) > MAX_LIST_ENTRIES:
        lines.append(f"[{len(names) - MAX_LIST_ENTRIES} more entries not shown]")
    return "\n".join(lines)


def file_tools(workdir: Workdir) -> list[Tool]:
    """The four file tools bound to ``workdir``."""

    @builtin_tool(read_only=True)
    def read_file(path: str, offset: int = 1, limit: int = DEFAULT_READ_LINES) -> str:
        """Read a text file in the working directory.

        Args:
            path: File path, relative to the working directory.
            offset: First line to read (1-based).
            limit: How many lines to read (default 2000).
        """
        return read_text(workdir, path, offset, limit)

    @builtin_tool()
    def write_file(path: str, content: str) -> str:
        """Create or overwrite a file in the working directory.

        Args:
            path: File path, relative to the working directory.
            content: The complete new content of the file.
        """
        return write_text(workdir, path, content)

    @builtin_tool()
    def edit_file(path: str, old_string: str, new_string: str, replace_all: bool = False) -> str:
        """Replace exact text in a file; old_string must occur exactly once unless replace_all.

        Args:
            path: File path, relative to the working directory.
            old_string: The exact text to replace, including whitespace.
            new_string: The text to put in its place.
            replace_all: Replace every occurrence instead of exactly one.
        """
        return replace_text(workdir, path, old_string, new_string, replace_all)

    @builtin_tool(read_only=True)
    def list_dir(path: str = ".") -> str:
        """List the entries of a folder in the working directory.

        Args:
            path: Folder path, relative to the working directory.
        """
        return list_entries(workdir, path)

    return [read_file, write_file, edit_file, list_dir]
