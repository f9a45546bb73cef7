"""File tools confined to the workdir: read_file, write_file, edit_file, list_dir.

The handlers are plain functions; :class:`~desktop_agent.core.tooling.tools.Tool` runs
them on the tool pool so that a large file never stalls the event loop that
also paints the window. Every path is opened through :mod:`.confined_fs`
(component by component, no symlink followed by the kernel, FIFOs and devices
refused, no write through a hard link). Failures raise
:class:`BuiltinToolError` with a sentence the model can act on.
"""

from __future__ import annotations

import logging
import os
import stat

from desktop_agent.core.tooling.builtin.confined_fs import (
    Opened,
    kind_of,
    open_dir,
    open_file,
    read_bytes,
    reading,
    replace_content,
)
from desktop_agent.core.tooling.builtin.declare import builtin_tool
from desktop_agent.core.tooling.builtin.workdir import BuiltinToolError, Workdir
from desktop_agent.core.tooling.tools import Tool

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


def looks_binary(opened: Opened) -> bool:
    """True when the start of the open file holds a NUL byte (the usual binary test)."""
    return b"\x00" in read_bytes(opened, _SNIFF_BYTES)


def read_text(workdir: Workdir, path: str, offset: int = 1,
              limit: int = DEFAULT_READ_LINES) -> str:
    """Read lines ``offset``.. of a text file, within the size cap."""
    if offset < 1:
        raise BuiltinToolError("offset is a line number and starts at 1")
    if limit < 1:
        raise BuiltinToolError("limit must be at least 1")
    wanted = limit
    with reading(workdir, path) as opened:
        if looks_binary(opened):
            raise BuiltinToolError(
                f"{path!r} is a binary file ({opened.info.st_size} bytes); not shown")
        pieces: list[str] = []
        used = 0
        last_line = offset - 1
        stopped_for_size = False
        more_lines = False
        with open(opened.fd, encoding="utf-8", errors="replace", newline="",
                  closefd=False) as handle:
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
    """Create or overwrite a file, creating its folders.

    Refuses (never replaces) a file with other hard links: writing through
    one would change a file that may lie outside the workdir.
    """
    data = content.encode("utf-8")
    with open_file(workdir, path, "write", create_parents=True) as opened:
        replace_content(opened, data)
        verb = "created" if opened.created else "overwrote"
        return f"{verb} {opened.relative} ({len(data)} bytes)"


def replace_text(workdir: Workdir, path: str, old_string: str, new_string: str,
                 replace_all: bool = False) -> str:
    """Replace an exact string; refuse when it is missing or ambiguous."""
    check_edit_strings(old_string, new_string)
    with open_file(workdir, path, "update") as opened:
        original = editable_text(opened, path)
        updated, done = edited_text(original, path, old_string, new_string, replace_all)
        replace_content(opened, updated.encode("utf-8", errors="surrogateescape"))
        return f"replaced {done} occurrence{'s' if done != 1 else ''} in {opened.relative}"


def check_edit_strings(old_string: str, new_string: str) -> None:
    """Refuse an edit that could change nothing, before any file is opened."""
    if old_string == "":
        raise BuiltinToolError("old_string is empty; use write_file to create a file")
    if old_string == new_string:
        raise BuiltinToolError("old_string and new_string are the same; nothing to change")


def editable_text(opened: Opened, path: str) -> str:
    """An open file's text as edit_file reads it (within its cap, never a binary file)."""
    if opened.info.st_size > MAX_EDIT_BYTES:
        raise BuiltinToolError(f"{path!r} is larger than {MAX_EDIT_BYTES} bytes; not edited")
    raw = read_bytes(opened, MAX_EDIT_BYTES + 1)
    if b"\x00" in raw[:_SNIFF_BYTES]:
        raise BuiltinToolError(f"{path!r} is a binary file; not edited")
    return raw.decode("utf-8", errors="surrogateescape")


def edited_text(original: str, path: str, old_string: str, new_string: str,
                replace_all: bool) -> tuple[str, int]:
    """The text after the edit and how many places changed.

    One function for the tool and for the diff shown before approval, so the
    preview refuses exactly what the tool would refuse, in the same words.
    """
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
    return updated, count if replace_all else 1


def list_entries(workdir: Workdir, path: str = ".") -> str:
    """One line per entry: folders end with ``/``, files show their size."""
    with open_dir(workdir, path) as folder:
        with os.scandir(folder.fd) as listing:
            names = sorted(listing, key=lambda e: e.name.lower())
        lines: list[str] = []
        for entry in names[:MAX_LIST_ENTRIES]:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if workdir.is_hidden(info):
                continue
            if stat.S_ISLNK(info.st_mode):
                where = workdir.root.joinpath(*folder.parts, entry.name)
                outside = "" if workdir.contains(where) else "  (link leads outside; not usable)"
                lines.append(f"{entry.name}@{outside}")
            elif stat.S_ISDIR(info.st_mode):
                lines.append(f"{entry.name}/")
            elif stat.S_ISREG(info.st_mode):
                lines.append(f"{entry.name}  {info.st_size} bytes")
            else:
                lines.append(f"{entry.name}  ({kind_of(info.st_mode)}; not readable by the tools)")
        if not names:
            return f"{folder.relative} is empty"
    if len(names) > MAX_LIST_ENTRIES:
        lines.append(f"[{len(names) - MAX_LIST_ENTRIES} more entries not shown]")
    return "\n".join(lines)


def file_tools(workdir: Workdir) -> list[Tool]:
    """The four file tools bound to ``workdir``."""

    @builtin_tool(read_only=True, brief="Read a text file.",
                  params={"offset": "first line (1-based)", "limit": "max lines"})
    def read_file(path: str, offset: int = 1, limit: int = DEFAULT_READ_LINES) -> str:
        """Read a text file in the working directory.

        Args:
            path: File path, relative to the working directory.
            offset: First line to read (1-based).
            limit: How many lines to read (default 2000).
        """
        return read_text(workdir, path, offset, limit)

    @builtin_tool(brief="Create or overwrite a file.", edits_files=True)
    def write_file(path: str, content: str) -> str:
        """Create or overwrite a file in the working directory.

        Args:
            path: File path, relative to the working directory.
            content: The complete new content of the file.
        """
        return write_text(workdir, path, content)

    @builtin_tool(brief="Replace old_string (unique unless replace_all) with new_string.",
                  edits_files=True)
    def edit_file(path: str, old_string: str, new_string: str, replace_all: bool = False) -> str:
        """Replace exact text in a file; old_string must occur exactly once unless replace_all.

        Args:
            path: File path, relative to the working directory.
            old_string: The exact text to replace, including whitespace.
            new_string: The text to put in its place.
            replace_all: Replace every occurrence instead of exactly one.
        """
        return replace_text(workdir, path, old_string, new_string, replace_all)

    @builtin_tool(read_only=True, brief="List a folder.")
    def list_dir(path: str = ".") -> str:
        """List the entries of a folder in the working directory.

        Args:
            path: Folder path, relative to the working directory.
        """
        return list_entries(workdir, path)

    return [read_file, write_file, edit_file, list_dir]
