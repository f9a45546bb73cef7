"""The files of a working folder, listed once and matched fuzzily (``@`` in the composer).

Typing ``@pars`` should offer ``src/parser.py`` at once, in a folder of
10,000 files. Listing the folder is disk work (tens of milliseconds there),
so it is done once, off the GUI thread, and kept (:class:`FolderIndex`); each
keystroke then only matches the kept list (:func:`fuzzy_matches`, a few
milliseconds for 10,000 paths). Folders no one mentions by hand (``.git``,
``node_modules``, virtual environments, caches) are not listed, and the list
stops at :data:`MAX_FILES`.

Qt-free: the window runs :meth:`FolderIndex.scan` in a worker and keeps the result.
"""

from __future__ import annotations

import bisect
import heapq
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

#: Folders left out of the listing, by name, at any depth.
SKIPPED_FOLDERS = frozenset({
    ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache", ".idea", ".gradle", "target",
})

#: The most files listed (a home folder chosen as working folder must not take minutes).
MAX_FILES = 100_000


@dataclass
class FolderIndex:
    """The files under one folder, as ``/``-separated paths relative to it.

    Attributes:
        folder: The folder listed.
        paths: Its files, sorted, relative to ``folder``.
        scanned_at: ``time.monotonic()`` when it was listed (0: never).
        complete: False when the listing stopped at :data:`MAX_FILES`.
        lowered: ``paths`` lower-cased, one per line (made once: matching is
            case-insensitive and runs over one string).
        starts: Where each line of ``lowered`` starts.
    """

    folder: Path
    paths: list[str] = field(default_factory=list)
    scanned_at: float = 0.0
    complete: bool = True
    lowered: str = ""
    starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.lowered:
            self.lowered = "\n".join(self.paths).lower()
            self.starts = line_starts(self.lowered)

    @classmethod
    def scan(cls, folder: Path, limit: int = MAX_FILES) -> FolderIndex:
        """List ``folder`` now (blocking; symlinks are left out).

        Links are not offered: one planted by a command (``notes.md`` pointing
        at a key file) would attach a file from outside the folder.

        A folder that cannot be read gives what could be read (possibly nothing).
        """
        found: list[str] = []
        complete = True
        pending = [""]
        while pending and complete:
            relative = pending.pop()
            try:
                entries = os.scandir(os.path.join(folder, relative) if relative else folder)
            except OSError:
                continue
            with entries:
                for entry in entries:
                    path = f"{relative}/{entry.name}" if relative else entry.name
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if entry.name not in SKIPPED_FOLDERS:
                                pending.append(path)
                        elif entry.is_file(follow_symlinks=False):  # links: not offered
                            found.append(path)
                    except OSError:
                        continue
                    if len(found) >= limit:
                        complete = False
                        break
        found.sort()
        return cls(folder, found, time.monotonic(), complete)

    def age(self) -> float:
        """Seconds since the folder was listed."""
        return time.monotonic() - self.scanned_at

    def matches(self, query: str, limit: int = 50) -> list[str]:
        """The files matching ``query``, best first (:func:`fuzzy_matches`)."""
        return fuzzy_matches(query, self.paths, limit, self.lowered, self.starts)


#: Matching stops after this many paths matched: a query of one or two letters
#: matches most of a large folder, and a closer look at all of them would cost a
#: frame; typing one more letter narrows it (the paths are sorted, so the ones
#: looked at are the first in order).
MAX_CANDIDATES = 2_000


def _pattern(query: str) -> re.Pattern[str]:
    r"""Every character of ``query`` in order within one line (on lower-cased text).

    ``a[^b\n]*b`` rather than ``a.*?b``: the same matches without the
    backtracking that made a query that fails late cost milliseconds per path.
    """
    parts = [re.escape(query[0])]
    for char in query[1:]:
        escaped = re.escape(char)
        parts.append(f"[^{escaped}\\n]*{escaped}")
    return re.compile("".join(parts))


def line_starts(lowered: str) -> list[int]:
    """Where each line of ``lowered`` starts (to tell which path a match is in)."""
    starts = [0]
    at = lowered.find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = lowered.find("\n", at + 1)
    return starts


def fuzzy_matches(query: str, paths: list[str], limit: int = 50,
                  lowered: str | None = None, starts: list[int] | None = None) -> list[str]:
    """The paths that hold ``query``'s characters in order, best first.

    Best: the query inside the file's name, then as one piece anywhere in the
    path, then the tightest spread of its characters; shorter paths first
    among equals. An empty query gives the first paths (shortest first).

    ``lowered`` and ``starts``: the paths lower-cased one per line, and where
    each starts (:class:`FolderIndex` keeps both). Why one string: the regular
    expression skips the paths that do not match in C, so only those that do
    cost Python time.
    """
    query = query.strip().replace("\\", "/").lower()
    if not query or "\n" in query:
        return sorted(paths, key=lambda p: (p.count("/"), len(p), p))[:limit]
    if lowered is None or starts is None:
        lowered = "\n".join(paths).lower()
        starts = line_starts(lowered)
    search = _pattern(query).search
    scored: list[tuple[int, int, int, int]] = []
    pos = 0
    while len(scored) < MAX_CANDIDATES:
        found = search(lowered, pos)
        if found is None:
            break
        line = bisect.bisect_right(starts, found.start()) - 1
        begin = starts[line]
        end = lowered.find("\n", found.end())
        end = len(lowered) if end < 0 else end
        text = lowered[begin:end]
        at = text.find(query)
        if at >= 0:
            name_at = text.rfind("/") + 1
            rank, spread = (2 if at < name_at else 0 if at == name_at else 1), 0
        else:
            rank, spread = 3, found.end() - found.start()
        scored.append((rank, spread, len(text), line))
        pos = end + 1
    return [paths[item[3]] for item in heapq.nsmallest(limit, scored)]
