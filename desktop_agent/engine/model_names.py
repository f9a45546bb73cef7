"""Which model file a name means: a path, a library name, a file name, an Ollama tag, a catalog id.

People name models the way the program they came from does: ``~/models/x.gguf``,
``qwen3-1.7b-q4_k_m.gguf`` (a file name, any case), ``qwen3:4b`` (Ollama's
``name:tag``, ``:latest`` when no tag is given), ``unsloth/Qwen3-1.7B-Q4_K_M`` (the
library's display name) or ``qwen3-1.7b`` (a catalog id). ``serve --model``, the
SDK's :class:`~desktop_agent.engine.runner.LocalModel` and conversations set to
run on this computer all resolve names here, so one name means one file everywhere.
A name that fits two different files is refused with both named, never guessed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from desktop_agent.engine.catalog import CATALOG, CatalogModel
from desktop_agent.engine.errors import ModelNotFoundError
from desktop_agent.engine.library import LibraryEntry, ModelLibrary


def names_a_path(name: str) -> bool:
    """Whether ``name`` is written as a path rather than a name.

    ``./x.gguf``, ``~/m/x.gguf``, ``/m/x.gguf`` and ``models/x.gguf`` are paths;
    ``unsloth/Qwen3-1.7B-Q4_K_M`` and ``hf.co/owner/repo:Q4_K_M`` are names.
    """
    separators = (os.sep, *((os.altsep,) if os.altsep else ()))
    return name.startswith(("~", ".")) or Path(name).is_absolute() \
        or (name.lower().endswith(".gguf") and any(sep in name for sep in separators))


def resolve_model(name: str, entries: Sequence[LibraryEntry],
                  catalog: Sequence[CatalogModel] = CATALOG) -> LibraryEntry | Path:
    """The library entry (or, for a path, the file) ``name`` means.

    Args:
        name: What the person or script wrote.
        entries: The library as scanned (:meth:`ModelLibrary.scan`).
        catalog: Suggested downloads, for catalog ids.

    Raises:
        ModelNotFoundError: Nothing answers to the name, a path leads nowhere, a
            catalog model is not downloaded yet, or the name fits several files.
    """
    text = name.strip()
    if not text:
        raise ModelNotFoundError(name, "Name a model: a .gguf file's path, or a name "
                                       "`desktop-agent models` lists.")
    as_path = Path(text).expanduser()
    if names_a_path(text) or _is_file(as_path):
        if _is_file(as_path):
            return as_path
        raise ModelNotFoundError(name, f"There is no model file at {as_path}.")
    matches = _unique([entry for entry in entries if _answers_to(entry, text.lower())])
    if not matches:
        picked = _catalog_model(text.lower(), catalog)
        if picked is not None:
            matches = _unique([entry for entry in entries
                               if entry.path.name.lower() == picked.filename.lower()])
            if not matches:
                raise ModelNotFoundError(name, (
                    f"{picked.title} is not downloaded yet: get it with `desktop-agent models "
                    f"pull {picked.source}` (or Download in the Models window)."))
    if len(matches) > 1:
        listed = "; ".join(f"{entry.display_name} ({entry.source.value}: {entry.path})"
                           for entry in matches[:4])
        raise ModelNotFoundError(name, (
            f"“{text}” fits {len(matches)} models: {listed}. Give the file's path instead."))
    if not matches:
        raise ModelNotFoundError(name, (
            f"No model called “{text}” is on this computer. `desktop-agent models` lists the "
            "ones it finds; a .gguf file's path works too."))
    return matches[0]


def _answers_to(entry: LibraryEntry, wanted: str) -> bool:
    display = entry.display_name.lower()
    file_name = entry.path.name.lower()
    return wanted in (display, file_name, file_name.removesuffix(".gguf")) \
        or (":" not in wanted and display == f"{wanted}:latest") \
        or display.rsplit("/", 1)[-1] == wanted


def _catalog_model(wanted: str, catalog: Sequence[CatalogModel]) -> CatalogModel | None:
    return next((model for model in catalog
                 if wanted in (model.id, model.title.lower(), model.source.lower(),
                               model.filename.lower())), None)


def _unique(entries: list[LibraryEntry]) -> list[LibraryEntry]:
    """One entry per file (a file seen through two folders is one model)."""
    seen: set[Path] = set()
    kept = []
    for entry in entries:
        if entry.path not in seen:
            seen.add(entry.path)
            kept.append(entry)
    return kept



def find_model_file(name: str, library: ModelLibrary | None = None) -> tuple[Path, str]:
    """The file ``name`` means and the name to serve it under, scanning the library if need be.

    A path needs no scan. Blocking (a scan reads the headers it has not seen):
    call it from a worker thread in an app.

    Args:
        name: A path, library name, file name, Ollama ``name:tag`` or catalog id.
        library: The library to search; None scans the usual folders, remembering
            headers in memory only.

    Raises:
        ModelNotFoundError: As :func:`resolve_model`.
    """
    as_path = Path(name.strip()).expanduser()
    if names_a_path(name.strip()) or _is_file(as_path):
        found = resolve_model(name, ())
    else:
        found = resolve_model(name, (library or ModelLibrary(None)).scan())
    if isinstance(found, Path):
        return found, served_name(found)
    return found.path, served_name(found.path, found.display_name)


def served_name(path: Path, display_name: str | None = None) -> str:
    """The model name a server answers to: the file's name without ``.gguf``.

    Ollama's blobs are named by their checksum, so for them the display name
    (``qwen3:4b``) is the one a person recognises.
    """
    if display_name and path.name.startswith("sha256-"):
        return display_name
    return path.name.removesuffix(".gguf").removesuffix(".GGUF")


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a file; a name no file can have (too long, a NUL) is not one.

    ``Path.is_file`` raises for those (``ENAMETOOLONG``, ``ValueError``): a name typed or
    sent over REST must get "no such model", not a server error.
    """
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False
