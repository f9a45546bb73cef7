"""Search tools confined to the workdir: glob (names) and grep (contents).

Both walk the workdir without following symlinked folders and drop any match
that resolves outside it, so a planted link cannot widen their reach. Results
are capped: a model drowning in a hundred thousand matches learns nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ..tools import Tool
from .declare import builtin_tool
from .file_tools import looks_binary
from .workdir import BuiltinToolError, Workdir

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

    Walks the workdir itself (never following symlinked folders) rather than
    using :meth:`Path.glob`, which would descend into a planted link and list
    a whole outside tree before the results could be filtered.
    """
    pattern = _check_pattern(pattern)
    base = workdir.resolve(path)
    if not base.is_dir():
        raise BuiltinToolError(f"{path!r} is not a folder")
    regex = glob_regex(pattern)
    prefix = _literal_prefix(pattern)
    start = workdir.resolve(str(PurePosixPath(path) / prefix)) if prefix else base
    found: list[str] = []
    more = False
    for candidate, is_dir in _walk_entries(start, pattern):
        relative = candidate.relative_to(base).as_posix()
        if not regex.match(relative) or not workdir.contains(candidate):
            continue
        if len(found) >= MAX_GLOB_RESULTS:
            more = True
            break
        shown = workdir.display(candidate)
        found.append(shown + "/" if is_dir else shown)
    if not found:
        return f"no paths match {pattern!r}"
    if more:
        found.append(f"[more than {MAX_GLOB_RESULTS} matches; narrow the pattern]")
    return "\n".join(found)


def _walk_entries(start: Path, pattern: str) -> Iterator[tuple[Path, bool]]:
    """Every file and folder under ``start``, in sorted order, without following links."""
    if not start.is_dir():
        return
    for folder, dirs, files in os.walk(start, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS or d in pattern)
        here = Path(folder)
        for name in dirs:
            yield here / name, not (here / name).is_symlink()
        for name in sorted(files):
            yield here / name, False


def _walk_files(workdir: Workdir, base: Path, include: str | None) -> Iterator[Path]:
    if base.is_file():
        yield base
        return
    for folder, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(files):
            candidate = Path(folder) / name
            if include and not (PurePosixPath(name).match(include)
                                or PurePosixPath(workdir.display(candidate)).match(include)):
                continue
            if not workdir.contains(candidate):
                continue
            yield candidate


def search_contents(workdir: Workdir, pattern: str, path: str = ".", include: str | None = None,
                    ignore_case: bool = False, max_results: int = DEFAULT_GREP_RESULTS) -> str:
    """Lines matching a Python regular expression, as ``path:line: text``."""
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise BuiltinToolError(f"invalid regular expression {pattern!r}: {exc}") from exc
    if max_results < 1:
        raise BuiltinToolError("max_results must be at least 1")
    base = workdir.resolve(path)
    if not base.exists():
        raise BuiltinToolError(f"{path!r} does not exist")
    hits: list[str] = []
    skipped = 0
    truncated = False
    for file in _walk_files(workdir, base, include):
        try:
            if file.stat().st_size > MAX_GREP_FILE_BYTES or looks_binary(file):
                skipped += 1
                continue
            with file.open("r", encoding="utf-8", errors="replace") as handle:
                for number, line in enumerate(handle, start=1):
                    if regex.search(line):
                        text = line.rstrip("\r\n")
                        if len(text) > MAX_GREP_LINE_CHARS:
                            text = text[:MAX_GREP_LINE_CHARS] + " [line cut]"
                        hits.append(f"{workdir.display(file)}:{number}: {text}")
                        if len(hits) >= max_results:
                            truncated = True
                            break
        except OSError:
            skipped += 1
            continue
        if truncated:
            break
    result = "\n".join(hits) if hits else f"no lines match {pattern!r}"
    if truncated:
        result += f"\n[stopped at {max_results} matches; narrow the search]"
    if skipped:
        result += f"\n[{skipped} binary, unreadable or very large files skipped]"
    return result


def search_tools(workdir: Workdir) -> list[Tool]:
    """The glob and grep tools bound to ``workdir``."""

    @builtin_tool(read_only=True)
    def glob(pattern: str, path: str = ".") -> str:
        """Find files and folders whose paths match a glob pattern such as **/*.py.

        Args:
            pattern: Glob pattern relative to path (``**`` matches any folders).
            path: Folder to search from, relative to the working directory.
        """
        return find_paths(workdir, pattern, path)

    @builtin_tool(read_only=True)
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
