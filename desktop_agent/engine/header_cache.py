"""What earlier scans read from each model file, kept in one small JSON file.

Reading a header costs milliseconds per model (a 150,000-token vocabulary to step
over), and the library is listed every time the model picker opens. A file is read
again only when its path, size or modification time changed (for a split model, any
part's); otherwise its facts, or the sentence saying why it cannot be used, come
from here. A damaged or foreign cache file is ignored and rewritten, never an error.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from desktop_agent.engine.gguf_info import ModelInfo

logger = logging.getLogger("desktop_agent.engine.library")

CACHE_FILE_NAME = "model-headers.json"
_FORMAT = 2

#: (size, modification time in ns) of each part: any change means "read again".
Fingerprint = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class CachedHeader:
    """One file's remembered result: its facts, or why it could not be read."""

    fingerprint: Fingerprint
    info: ModelInfo | None
    problem: str | None


def fingerprint(parts: tuple[Path, ...]) -> Fingerprint | None:
    """Each part's size and mtime, or None when a part is gone."""
    try:
        stats = [part.stat() for part in parts]
    except OSError:
        return None
    return tuple((stat.st_size, stat.st_mtime_ns) for stat in stats)


class HeaderCache:
    """Headers by path, loaded from and saved to ``folder / CACHE_FILE_NAME``.

    ``folder`` None keeps them in memory only (a script's one-off scan).
    """

    def __init__(self, folder: Path | None) -> None:
        self.path = folder / CACHE_FILE_NAME if folder is not None else None
        self._entries: dict[str, CachedHeader] = {}
        self._dirty = False
        self._load()

    def get(self, path: Path, current: Fingerprint) -> CachedHeader | None:
        """The remembered result for ``path`` if the file is unchanged."""
        entry = self._entries.get(str(path))
        return entry if entry is not None and entry.fingerprint == current else None

    def put(self, path: Path, entry: CachedHeader) -> None:
        self._entries[str(path)] = entry
        self._dirty = True

    def keep_only(self, paths: set[str]) -> None:
        """Forget files no scan found any more, so the cache does not grow forever."""
        gone = self._entries.keys() - paths
        for key in gone:
            del self._entries[key]
        self._dirty = self._dirty or bool(gone)

    def save(self) -> None:
        """Write the cache if anything changed (atomically: a crash leaves the old one)."""
        if not self._dirty or self.path is None:
            return
        data = {"format": _FORMAT, "models": {key: _entry_json(entry)
                                              for key, entry in self._entries.items()}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".model-headers.")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump(data, file)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        self._dirty = False

    def _load(self) -> None:
        if self.path is None:
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("format") != _FORMAT:
                return
            self._entries = {key: _entry_from_json(value)
                             for key, value in data["models"].items()}
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            logger.info("Ignoring the model header cache %s: %s", self.path, error)
            self._entries = {}


def _entry_json(entry: CachedHeader) -> dict[str, Any]:
    return {"fingerprint": [list(part) for part in entry.fingerprint],
            "info": entry.info.to_json() if entry.info else None,
            "problem": entry.problem}


def _entry_from_json(data: dict[str, Any]) -> CachedHeader:
    return CachedHeader(
        fingerprint=tuple((int(size), int(mtime)) for size, mtime in data["fingerprint"]),
        info=ModelInfo.from_json(data["info"]) if data["info"] else None,
        problem=data["problem"],
    )
