"""Keep :mod:`linecache` from holding the source of every module the window imports.

Why: PySide6 watches every import (its ``__feature__`` switch, PYSIDE-2029)
and decides whether the new module uses PySide by reading the module's whole
source with ``inspect.getsource``, which keeps every line of it in
:mod:`linecache`, for good. An app run from source (the README's install)
therefore held the text of every module it imported: measured with
``tracemalloc`` in an idle window, 7.5 MB of lines before the server search and
about 25 MB after it (the openai SDK's ~900 modules), none of it read again.
The frozen binary has no source files, so it never paid this.

Dropping those lines later does not give the memory back: they were allocated
between the imported modules' own objects, so the freed blocks leave holes in
pages that stay resident (measured: an idle window with its linecache emptied
kept its size). So the cache is bounded from the start instead: it keeps the
lines of the :data:`RECENT_FILES` files read last, and a traceback that needs
an older file reads it again, which is what :mod:`linecache` does for any file
it has not cached. Each import's lines are then freed by the next imports and
their blocks reused at once. Entries that cannot be read again (source that
``attrs``, ``dataclasses`` and the like generate and register there, or lines a
loader provided: no modification time) are kept as before.
"""

from __future__ import annotations

import linecache
from collections import OrderedDict
from typing import Any

#: Source files whose lines stay cached (the most recently read ones).
RECENT_FILES = 16


class RecentSourceLines(dict[str, Any]):
    """A :mod:`linecache` cache that keeps the lines of the last few files read from disk."""

    def __init__(self, entries: dict[str, Any], limit: int = RECENT_FILES) -> None:
        """Start with ``entries`` (the cache so far), trimmed to ``limit`` files on disk."""
        super().__init__()
        self._limit = limit
        self._files: OrderedDict[str, None] = OrderedDict()
        for name, entry in entries.items():
            self[name] = entry

    def __setitem__(self, name: str, entry: Any) -> None:
        """Store an entry; a file read from disk pushes out the oldest beyond the limit."""
        super().__setitem__(name, entry)
        self._files.pop(name, None)
        # (size, mtime, lines, fullname) read from a file; a lazy entry is a 1-tuple and
        # generated or loader-provided source has mtime None: those cannot be reread.
        if len(entry) == 4 and entry[1] is not None:
            self._files[name] = None
            while len(self._files) > self._limit:
                oldest, _ = self._files.popitem(last=False)
                super().pop(oldest, None)

    def __delitem__(self, name: str) -> None:
        """Forget an entry (linecache does when a file changed or vanished)."""
        super().__delitem__(name)
        self._files.pop(name, None)

    def pop(self, name: str, *default: Any) -> Any:
        """Forget an entry and return it (``linecache.checkcache`` uses this)."""
        self._files.pop(name, None)
        return super().pop(name, *default)

    def clear(self) -> None:
        """Forget everything (``linecache.clearcache``)."""
        super().clear()
        self._files.clear()


def bound_source_line_cache(limit: int = RECENT_FILES) -> None:
    """Make :mod:`linecache` keep at most ``limit`` files read from disk (idempotent).

    Call before PySide6 is imported: its import watch starts reading sources then.
    """
    if not isinstance(linecache.cache, RecentSourceLines):
        linecache.cache = RecentSourceLines(linecache.cache, limit)
