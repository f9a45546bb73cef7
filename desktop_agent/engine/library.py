"""The model library: every GGUF model on this machine, with its facts and its fit.

One scan lists what LM Studio, Ollama, the Hugging Face cache, llama.cpp and the
person's own folders hold (:mod:`model_folders`), reads each header once
(:mod:`header_cache` remembers it by path, size and modification time), and judges
each model against the memory free now (:mod:`fit`). A file that cannot be used
stays in the list with the sentence saying why, so a person sees that their
half-downloaded model is there and broken rather than missing.

GGUF files that cannot chat (LoRA adapters, importance matrices, vision projectors:
repositories ship them beside the model) are left out, by their header.
The same file reached through two folders (a person who adds LM Studio's folder as
their own) is listed once, under the first source in :func:`find_models`' order.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from desktop_agent.engine.errors import ModelFileError
from desktop_agent.engine.fit import FitEstimate, estimate_fit
from desktop_agent.engine.gguf_info import ModelInfo, read_model_info, split_parts
from desktop_agent.engine.header_cache import CachedHeader, HeaderCache, fingerprint
from desktop_agent.engine.machine import MachineMemory, machine_memory, physical_cores
from desktop_agent.engine.model_folders import FoundModel, ModelFolders, ModelSource, find_models

logger = logging.getLogger("desktop_agent.engine.library")


@dataclass(frozen=True)
class LibraryEntry:
    """One model in the library.

    Attributes:
        display_name: What the picker shows (``qwen3:4b``, ``Qwen/Qwen3-1.7B-Q4_K_M``).
        source: Whose folder it was found in.
        paths: The file, or every part of a split model.
        size_bytes: Bytes on disk over all parts.
        info: The header's facts; None when the file cannot be used.
        problem: Why it cannot be used (a sentence naming the file); None when it can.
        fit: Whether it fits in memory now, with the recommended settings.
    """

    display_name: str
    source: ModelSource
    paths: tuple[Path, ...]
    size_bytes: int
    info: ModelInfo | None
    problem: str | None
    fit: FitEstimate | None

    @property
    def path(self) -> Path:
        """The file to start llama.cpp with."""
        return self.paths[0]


class ModelLibrary:
    """Scans the model folders; remembers headers in ``cache_folder``.

    Args:
        cache_folder: Where the header cache lives (the app passes its data folder).
        folders: Where to look; None uses :meth:`ModelFolders.from_environment`
            plus ``extra_folders``.
        extra_folders: Folders the person added.
    """

    def __init__(self, cache_folder: Path, *, folders: ModelFolders | None = None,
                 extra_folders: Sequence[Path] = ()) -> None:
        self._folders = folders
        self._extra = tuple(extra_folders)
        self._cache = HeaderCache(cache_folder)

    def scan(self) -> list[LibraryEntry]:
        """Every model found now, sorted by display name; reads only changed files."""
        folders = self._folders or ModelFolders.from_environment(self._extra)
        memory, cores = machine_memory(), physical_cores()
        seen_files: set[Path] = set()
        seen_paths: set[str] = set()
        entries = []
        for found in find_models(folders):
            real = _real_path(found.path)
            if real in seen_files:
                continue
            seen_files.add(real)
            seen_paths.add(str(found.path))
            entry = self._entry(found, memory, cores)
            if entry.info is None or entry.info.is_language_model:
                entries.append(entry)
        self._cache.keep_only(seen_paths)
        try:
            self._cache.save()
        except OSError as error:
            logger.warning("Could not save the model header cache: %s", error)
        return sorted(entries, key=lambda entry: entry.display_name.lower())

    def _entry(self, found: FoundModel, memory: MachineMemory, cores: int) -> LibraryEntry:
        cached = self._header(found.path)
        parts = cached.info.parts if cached.info else (split_parts(found.path) or (found.path,))
        size = cached.info.size_bytes if cached.info else _size_on_disk(parts)
        fit = estimate_fit(cached.info, memory=memory, cores=cores) if cached.info else None
        return LibraryEntry(display_name=found.display_name, source=found.source, paths=parts,
                            size_bytes=size, info=cached.info, problem=cached.problem, fit=fit)

    def _header(self, path: Path) -> CachedHeader:
        parts = split_parts(path) or (path,)
        current = fingerprint(parts)
        if current is not None:
            cached = self._cache.get(path, current)
            if cached is not None:
                return cached
        try:
            entry = CachedHeader(current or (), read_model_info(path), None)
        except ModelFileError as error:
            entry = CachedHeader(current or (), None, str(error))
        if current is not None:
            self._cache.put(path, entry)
        return entry


def _real_path(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path


def _size_on_disk(parts: tuple[Path, ...]) -> int:
    total = 0
    for part in parts:
        try:
            total += part.stat().st_size
        except OSError:
            continue
    return total
