"""Search tools confined to the workdir: glob (names) and grep (contents).

Both walk folder descriptors from a folder opened inside the workdir
(:func:`os.fwalk`), never following a symlink, and open files relative to
their folder's descriptor with ``O_NOFOLLOW``; FIFOs, sockets and devices are
skipped without being opened, so a planted pipe cannot hang a worker. Results
are capped: a model drowning in a hundred thousand matches learns nothing.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from desktop_agent.core.tooling.builtin.confined_fs import Opened, open_dir, open_file
from desktop_agent.core.tooling.builtin.declare import builtin_tool
from desktop_agent.core.tooling.builtin.workdir import (
    BuiltinToolError,
    OutsideWorkdirError,
    Workdir,
)
from desktop_agent.core.tooling.tools import Tool

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_SNIFF_BYTES = 8_192

#: Paths glob returns at most.
MAX_GLOB_RESULTS = 500
#: Matching lines grep returns when no limit is given.
DEFAULT_GREP_RESULTS = 200
#: Files larger than this are skipped by grep.
MAX_GREP_FILE_BYTES = 5 * 1024 * 1024
#: Longest matching line grep shows in full.
MAX_GREP_LINE_CHARS = 400
#: Folders never searched (version control internals, caches).
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv"})


def _check_pattern(pattern: str) -> str:
    if not pattern.strip():
        raise BuiltinToolError("a glob pattern is required")
    posix = pattern.replace("\\", "/")
    pure = PurePosixPath(posix)
    if pure.is_absolute() or Path(pattern).is_absolute():
        raise BuiltinToolError("glob patterns are relative to the working directory")
    if ".." in pure.parts:
        raise BuiltinToolError("glob patterns may not contain '..'")
    return posix.lstrip("./") if posix.startswith("./") else posix


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a ``/``-separated glob: ``**`` spans folders, ``*`` and ``?`` do not."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (close := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1:close]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = close + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _literal_prefix(pattern: str) -> str:
    parts: list[str] = []
    for part in pattern.split("/")[:-1]:
        if any(c in part for c in "*?["):
            break
        parts.append(part)
    return "/".join(parts)


def find_paths(workdir: Workdir, pattern: str, path: str = ".") -> str:
    """Paths under ``path`` matching a glob such as ``**/*.py``.

    Walks folder descriptors (:func:`os.fwalk`, never following symlinked
    folders) from a folder opened inside the workdir, rather than
    :meth:`Path.glob`, which would descend into a planted link and list a whole
    outside tree, or be sent elsewhere by a folder swapped for a link mid-walk.
    """
    pattern = _check_pattern(pattern)
    regex = glob_regex(pattern)
    prefix = _literal_prefix(pattern)
    with open_dir(workdir, path) as base:
        if prefix:
            try:
                start = open_dir(workdir, "/".join([*base.parts, prefix]) or ".")
            except OutsideWorkdirError:
                raise
            except BuiltinToolError:
                return f"no paths match {pattern!r}"
        else:
            start = open_dir(workdir, base.relative)
    found: list[str] = []
    more = False
    with start:
        offset = len(base.parts)
        for parts, is_dir, is_link in _walk_entries(workdir, start, pattern):
            relative = "/".join(parts[offset:])
            if not regex.match(relative):
                continue
            if is_link and not workdir.contains(workdir.root.joinpath(*parts)):
                continue  # a link out is not a path the tools can use
            if len(found) >= MAX_GLOB_RESULTS:
                more = True
                break
            shown = "/".join(parts)
            found.append(shown + "/" if is_dir else shown)
    if not found:
        return f"no paths match {pattern!r}"
    if more:
        found.append(f"[more than {MAX_GLOB_RESULTS} matches; narrow the pattern]")
    return "\n".join(found)


def _walk_entries(workdir: Workdir, start: Opened, pattern: str
                  ) -> Iterator[tuple[list[str], bool, bool]]:
    """(path parts from the workdir, is a folder, is a link) under ``start``, sorted.

    Symlinks are listed as entries (never as folders) and never descended.
    """
    for folder, dirs, files, dir_fd in os.fwalk(".", dir_fd=start.fd, follow_symlinks=False):
        dirs[:] = sorted(d for d in dirs if (d not in SKIPPED_DIRS or d in pattern)
                         and not _hidden(workdir, d, dir_fd))
        here = [*start.parts, *(p for p in folder.split("/") if p not in ("", "."))]
        for name in list(dirs):
            linked = _is_link(name, dir_fd)
            if linked:
                dirs.remove(name)
            yield [*here, name], not linked, linked
        for name in sorted(files):
            yield [*here, name], False, _is_link(name, dir_fd)


def _hidden(workdir: Workdir, name: str, dir_fd: int) -> bool:
    """True for a folder the tools must see as absent (the app's data folder)."""
    if not workdir.hidden:
        return False
    try:
        return workdir.is_hidden(os.stat(name, dir_fd=dir_fd, follow_symlinks=False))
    except OSError:
        return False


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return True


def _open_regular(name: str, dir_fd: int) -> int | None:
    """A descriptor for a regular file in ``dir_fd``, or None for links, FIFOs, devices."""
    try:
        if not stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            return None
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_GREP_FILE_BYTES:
        os.close(fd)
        return None
    return fd


def _walk_files(workdir: Workdir, path: str, include: str | None
                ) -> Iterator[tuple[str, int | None]]:
    """(shown path, open descriptor or None when skipped) for every file to search."""
    try:
        base = open_dir(workdir, path)
    except BuiltinToolError:
        with open_file(workdir, path, "read") as single:
            fd = os.dup(single.fd) if single.info.st_size <= MAX_GREP_FILE_BYTES else None
            shown = single.relative
        yield shown, fd
        return
    with base:
        for folder, dirs, files, dir_fd in os.fwalk(".", dir_fd=base.fd,
                                                    follow_symlinks=False):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS
                             and not _hidden(workdir, d, dir_fd))
            here = [*base.parts, *(p for p in folder.split("/") if p not in ("", "."))]
            for name in sorted(files):
                shown = "/".join([*here, name])
                if include and not (PurePosixPath(name).match(include)
                                    or PurePosixPath(shown).match(include)):
                    continue
                if _is_link(name, dir_fd):
                    linked = _open_link(workdir, shown)
                    if linked != _LINK_OUT:
                        yield shown, linked
                    continue
                yield shown, _open_regular(name, dir_fd)


_LINK_OUT = -1


def _open_link(workdir: Workdir, shown: str) -> int | None:
    """A descriptor for the file a link inside the workdir names; ``_LINK_OUT`` for a link out."""
    try:
        with open_file(workdir, shown, "read") as target:
            if target.info.st_size > MAX_GREP_FILE_BYTES:
                return None
            return os.dup(target.fd)
    except OutsideWorkdirError:
        return _LINK_OUT
    except (BuiltinToolError, OSError):
        return None


def search_contents(workdir: Workdir, pattern: str, path: str = ".", include: str | None = None,
                    ignore_case: bool = False, max_results: int = DEFAULT_GREP_RESULTS) -> str:
    """Lines matching a Python regular expression, as ``path:line: text``."""
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise BuiltinToolError(f"invalid regular expression {pattern!r}: {exc}") from exc
    if max_results < 1:
        raise BuiltinToolError("max_results must be at least 1")
    hits: list[str] = []
    skipped = 0
    truncated = False
    for shown, fd in _walk_files(workdir, path, include):
        if fd is None:
            skipped += 1
            continue
        try:
            if b"\x00" in os.pread(fd, _SNIFF_BYTES, 0):
                skipped += 1
                continue
            with open(fd, encoding="utf-8", errors="replace", closefd=False) as handle:
                for number, line in enumerate(handle, start=1):
                    if regex.search(line):
                        text = line.rstrip("\r\n")
                        if len(text) > MAX_GREP_LINE_CHARS:
                            text = text[:MAX_GREP_LINE_CHARS] + " [line cut]"
                        hits.append(f"{shown}:{number}: {text}")
                        if len(hits) >= max_results:
                            truncated = True
                            break
        except OSError:
            skipped += 1
            continue
        finally:
            os.close(fd)
        if truncated:
            break
    result = "\n".join(hits) if hits else f"no lines match {pattern!r}"
    if truncated:
        result += f"\n[stopped at {max_results} matches; narrow the search]"
    if skipped:
        result += f"\n[{skipped} binary, unreadable, special or very large files skipped]"
    return result


def search_tools(workdir: Workdir) -> list[Tool]:
    """The glob and grep tools bound to ``workdir``."""

    @builtin_tool(read_only=True, brief="Find paths matching a glob, e.g. src/**/*.py.",
                  hide=("path",))
    def glob(pattern: str, path: str = ".") -> str:
        """Find files and folders whose paths match a glob pattern such as **/*.py.

        Args:
            pattern: Glob pattern relative to path (``**`` matches any folders).
            path: Folder to search from, relative to the working directory.
        """
        return find_paths(workdir, pattern, path)

    @builtin_tool(read_only=True, brief="Search files for a Python regex ((?i) ignores case).",
                  params={"include": "file name glob"},
                  hide=("ignore_case", "max_results"))
    def grep(pattern: str, path: str = ".", include: str = "", ignore_case: bool = False,
             max_results: int = DEFAULT_GREP_RESULTS) -> str:
        """Search file contents for a regular expression (Python syntax).

        Args:
            pattern: Regular expression to look for in each line.
            path: File or folder to search, relative to the working directory.
            include: Only search files whose name matches this glob, e.g. *.py.
            ignore_case: Match letters regardless of case.
            max_results: Stop after this many matching lines.
        """
        return search_contents(workdir, pattern, path, include or None, ignore_case, max_results)

    return [glob, grep]
