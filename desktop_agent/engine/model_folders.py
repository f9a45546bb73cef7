"""Where other programs keep GGUF models, and how each lays them out.

A person who already downloaded models with LM Studio, Ollama, the Hugging Face
tools or llama.cpp should find them in the app without downloading them again. Each
program has its own layout; this module turns each into the same list of
:class:`FoundModel` (file, display name, source) without reading any file's content.
The folders follow the programs' own environment variables, read at each scan:
``OLLAMA_MODELS``, ``HF_HUB_CACHE`` / ``HF_HOME`` / ``XDG_CACHE_HOME``, ``LLAMA_CACHE``.
"""

from __future__ import annotations

import enum
import json
import logging
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from desktop_agent.engine.gguf_info import is_later_split_part, split_parts

logger = logging.getLogger("desktop_agent.engine.library")

OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
_OLLAMA_DEFAULT_REGISTRY = "registry.ollama.ai"


class ModelSource(enum.Enum):
    """The program whose folder a model was found in (its label is what a person reads)."""

    OLLAMA = "Ollama"
    LM_STUDIO = "LM Studio"
    HUGGING_FACE = "Hugging Face"
    LLAMA_CPP = "llama.cpp"
    FOLDER = "folder"


@dataclass(frozen=True)
class FoundModel:
    """A model file located on disk, not yet read.

    Attributes:
        path: The file to read (the first part of a split model).
        display_name: ``qwen3:4b`` for Ollama, ``publisher/file`` for LM Studio and
            Hugging Face, the file's name without ``.gguf`` elsewhere.
        source: Whose folder it is in.
    """

    path: Path
    display_name: str
    source: ModelSource


@dataclass(frozen=True)
class ModelFolders:
    """The folders a scan looks in; :meth:`from_environment` gives the usual ones.

    Attributes:
        lm_studio: LM Studio's model folders (``publisher/repo/file.gguf``).
        ollama: Ollama's model stores (``manifests/`` and ``blobs/``).
        hugging_face: The Hugging Face hub cache (``models--owner--repo``).
        llama_cpp: llama.cpp's download cache (``-hf`` models).
        extra: Folders the person added; searched through.
    """

    lm_studio: tuple[Path, ...] = ()
    ollama: tuple[Path, ...] = ()
    hugging_face: Path | None = None
    llama_cpp: Path | None = None
    extra: tuple[Path, ...] = field(default=())

    @classmethod
    def from_environment(cls, extra: tuple[Path, ...] = ()) -> ModelFolders:
        """The folders each program uses by default or as its variables say."""
        home = Path.home()
        ollama_env = os.environ.get("OLLAMA_MODELS")
        ollama = ((Path(ollama_env).expanduser(),) if ollama_env
                  else (home / ".ollama" / "models", Path("/usr/share/ollama/.ollama/models")))
        return cls(
            lm_studio=(home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"),
            ollama=ollama,
            hugging_face=hugging_face_cache(),
            llama_cpp=llama_cpp_cache(),
            extra=extra,
        )


def hugging_face_cache() -> Path:
    """The hub cache as ``huggingface_hub`` resolves it, read now (not at its import)."""
    hub_cache = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if hub_cache:
        return Path(os.path.expandvars(hub_cache)).expanduser()
    hf_home = os.environ.get("HF_HOME")
    if hf_home:
        return Path(os.path.expandvars(hf_home)).expanduser() / "hub"
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "huggingface" / "hub"


def llama_cpp_cache() -> Path:
    """llama.cpp's cache: ``LLAMA_CACHE``, else its per-system default."""
    configured = os.environ.get("LLAMA_CACHE")
    if configured:
        return Path(configured).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "llama.cpp"
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", str(Path.home()))) / "llama.cpp"
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "llama.cpp"


def find_models(folders: ModelFolders) -> Iterator[FoundModel]:
    """Every model in ``folders``, in the order sources are trusted for naming."""
    for store in folders.ollama:
        yield from _ollama_models(store)
    for root in folders.lm_studio:
        yield from _publisher_models(root, ModelSource.LM_STUDIO)
    if folders.hugging_face is not None:
        yield from _hugging_face_models(folders.hugging_face)
    if folders.llama_cpp is not None:
        yield from _folder_models(folders.llama_cpp, ModelSource.LLAMA_CPP)
    for folder in folders.extra:
        yield from _folder_models(folder, ModelSource.FOLDER)


def gguf_files(root: Path) -> Iterator[Path]:
    """``*.gguf`` files under ``root`` (hidden folders skipped), later split parts left out."""
    if not root.is_dir():
        return
    for folder, subfolders, files in os.walk(root, onerror=_log_walk_error):
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
        for name in files:
            if name.lower().endswith(".gguf"):
                path = Path(folder, name)
                if not is_later_split_part(path):
                    yield path


def _folder_models(root: Path, source: ModelSource) -> Iterator[FoundModel]:
    for path in gguf_files(root):
        yield FoundModel(path, _stem(path), source)


def _publisher_models(root: Path, source: ModelSource) -> Iterator[FoundModel]:
    for path in gguf_files(root):
        relative = path.relative_to(root).parts
        publisher = f"{relative[0]}/" if len(relative) >= 3 else ""
        yield FoundModel(path, f"{publisher}{_stem(path)}", source)


def _hugging_face_models(cache: Path) -> Iterator[FoundModel]:
    if not cache.is_dir():
        return
    from huggingface_hub import scan_cache_dir

    info = scan_cache_dir(cache)
    for repo in sorted(info.repos, key=lambda r: r.repo_id):
        if repo.repo_type != "model":
            continue
        newest = sorted(repo.revisions, key=lambda r: r.last_modified, reverse=True)
        for revision in newest[:1]:
            for file in sorted(revision.files, key=lambda f: f.file_name):
                path = file.file_path
                if path.name.lower().endswith(".gguf") and not is_later_split_part(path):
                    yield FoundModel(path, f"{repo.repo_id.split('/')[0]}/{_stem(path)}",
                                     ModelSource.HUGGING_FACE)


def _ollama_models(store: Path) -> Iterator[FoundModel]:
    manifests = store / "manifests"
    if not manifests.is_dir():
        return
    for manifest in sorted(manifests.glob("*/*/*/*")):
        if not manifest.is_file():
            continue
        digest = _ollama_model_digest(manifest)
        if digest is None:
            continue
        blob = store / "blobs" / digest.replace(":", "-")
        if blob.is_file():
            yield FoundModel(blob, _ollama_name(manifest.relative_to(manifests).parts),
                             ModelSource.OLLAMA)


def _ollama_model_digest(manifest: Path) -> str | None:
    try:
        layers = json.loads(manifest.read_text(encoding="utf-8")).get("layers", [])
    except (OSError, ValueError, AttributeError) as error:
        logger.info("Skipping Ollama manifest %s: %s", manifest, error)
        return None
    for layer in layers if isinstance(layers, list) else []:
        if isinstance(layer, dict) and layer.get("mediaType") == OLLAMA_MODEL_LAYER:
            digest = layer.get("digest")
            return digest if isinstance(digest, str) and digest.startswith("sha256:") else None
    return None


def _ollama_name(parts: tuple[str, ...]) -> str:
    """``qwen3:4b``, ``user/model:tag`` or ``hf.co/owner/repo:tag``, as ``ollama list`` says."""
    registry, namespace, name, tag = parts
    if registry == _OLLAMA_DEFAULT_REGISTRY:
        return f"{name}:{tag}" if namespace == "library" else f"{namespace}/{name}:{tag}"
    return f"{registry}/{namespace}/{name}:{tag}"


def _stem(path: Path) -> str:
    parts = split_parts(path)
    name = path.name if parts is None else path.name.rsplit("-", 3)[0]
    return name[:-5] if name.lower().endswith(".gguf") else name


def _log_walk_error(error: OSError) -> None:
    logger.info("Skipping an unreadable folder: %s", error)
