"""Refuse a model file before the engine starts: the runner's check, on the one header reader.

llama.cpp given a truncated file can fail deep in loading, or crash with SIGBUS
when it touches a page past the end of the memory-mapped file; a person should
instead read one sentence naming the file. :func:`read_model_info` already refuses
a file that is missing, not GGUF, of a GGUF version llama.cpp cannot read, cut short
anywhere (every tensor's bytes must lie inside the file) or damaged. The runner adds
what only matters for running: the file must be a model that chats, not one of the
adapters, importance matrices or vision projectors that sit next to models.
"""

from __future__ import annotations

import os
from pathlib import Path

from desktop_agent.engine.errors import ModelFileError
from desktop_agent.engine.gguf_info import ModelInfo, read_model_info

_NOT_A_CHAT_MODEL = {
    "adapter": "a LoRA adapter",
    "imatrix": "an importance matrix",
    "mmproj": "a vision projector",
}


def check_model_file(path: str | os.PathLike[str]) -> ModelInfo:
    """Check that ``path`` is a whole GGUF model that chats, and return its header's facts.

    Raises:
        ModelFileError: Missing, unreadable, not GGUF, an unknown version, cut short,
            damaged, or not a chat model; the message names the file and says which.
    """
    file = Path(path)
    info = read_model_info(file)
    if not info.is_language_model:
        kind = _NOT_A_CHAT_MODEL.get(info.model_type) or (
            "a vision projector" if info.architecture == "clip" else f"a “{info.model_type}” file")
        raise ModelFileError(file, (
            f"{file.name} is {kind}, not a model that chats: it goes with a model file, "
            "which is what to run."))
    return info
