"""Lay out model folders as other programs do, and open the real Models window.

Shared by the Models window tests. The GGUF files are written by llama.cpp's own
``gguf`` writer (``tests/engine/gguf_samples.py``); the folders follow LM Studio's
and Ollama's layouts as the engine tier builds them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from engine.gguf_samples import PLAIN_TEMPLATE, SampleModel, write_gguf
from window_driver import WAIT_MS

#: Variables that point programs at their model folders: cleared so a test sees only its own.
MODEL_VARIABLES = ("OLLAMA_MODELS", "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE",
                   "XDG_CACHE_HOME", "LLAMA_CACHE", "HF_ENDPOINT", "HF_TOKEN")


def lay_out_library(home: Path, tmp_path: Path) -> dict[str, Path]:
    """LM Studio's folder, Ollama's store and a person's folder with a damaged file."""
    lm_studio = write_gguf(home / ".lmstudio/models/Qwen/Qwen3-1.7B-GGUF/Qwen3-1.7B-Q4_K_M.gguf",
                           SampleModel(name="Qwen3 1.7B", size_label="1.7B",
                                       context_length=40960))
    sample = write_gguf(tmp_path / "plain.gguf",
                        SampleModel(name="Gemma", arch="gemma3", size_label="1B",
                                    context_length=32768, chat_template=PLAIN_TEMPLATE))
    blob = _ollama_pull(home / ".ollama/models", "gemma3", "1b", sample.read_bytes())
    folder = tmp_path / "my models"
    cut = write_gguf(folder / "half-downloaded.gguf")
    with cut.open("r+b") as file:
        file.truncate(cut.stat().st_size // 2)
    return {"lm_studio": lm_studio, "ollama": blob, "folder": folder, "cut": cut}


def _ollama_pull(store: Path, name: str, tag: str, gguf: bytes) -> Path:
    digest = hashlib.sha256(gguf).hexdigest()
    (store / "blobs").mkdir(parents=True, exist_ok=True)
    blob = store / "blobs" / f"sha256-{digest}"
    blob.write_bytes(gguf)
    manifest = {"schemaVersion": 2, "layers": [
        {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}",
         "size": len(gguf)}]}
    path = store / "manifests/registry.ollama.ai/library" / name / tag
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest))
    return blob


def open_models(qtbot: Any, window: Any) -> Any:
    """*Server → Models…* as a click does; waits for the window and its first scan.

    The first time, the engine's modules load in a worker thread before it opens.
    """
    window.menu_actions.models_action.trigger()
    qtbot.waitUntil(lambda: window.local_models.models_window is not None, timeout=WAIT_MS)
    models = window.local_models.models_window
    assert models.isVisible()
    bridge = window.local_models.bridge
    qtbot.waitUntil(lambda: not bridge.scanning, timeout=WAIT_MS)
    return models


def row_texts(models: Any, name: str) -> dict[str, str]:
    """The cells of the row whose Model column reads ``name``, by column title."""
    from desktop_agent.gui.models.library_table import COLUMNS

    table = models.library.table
    proxy = table.model()
    for row in range(proxy.rowCount()):
        if proxy.index(row, 0).data() == name:
            return {title: str(proxy.index(row, column).data() or "")
                    for column, title in enumerate(COLUMNS)}
    listed = [proxy.index(row, 0).data() for row in range(proxy.rowCount())]
    raise AssertionError(f"{name!r} is not listed; the table shows {listed}")
