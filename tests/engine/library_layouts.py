"""Model folders laid out the way other programs lay them out, for the library's tests."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def ollama_pull(store: Path, name: str, tag: str, gguf: bytes,
                registry: str = "registry.ollama.ai", namespace: str = "library") -> Path:
    """Lay a model out as ``ollama pull`` does: blobs by digest, a manifest naming them."""
    def blob(data: bytes, media_type: str) -> dict[str, object]:
        digest = hashlib.sha256(data).hexdigest()
        (store / "blobs").mkdir(parents=True, exist_ok=True)
        (store / "blobs" / f"sha256-{digest}").write_bytes(data)
        return {"mediaType": media_type, "digest": f"sha256:{digest}", "size": len(data)}

    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": blob(b'{"model_format":"gguf","model_family":"qwen3"}',
                       "application/vnd.docker.container.image.v1+json"),
        "layers": [
            blob(gguf, "application/vnd.ollama.image.model"),
            blob(b"{{ .Prompt }}", "application/vnd.ollama.image.template"),
            blob(b'{"temperature":0.6}', "application/vnd.ollama.image.params"),
        ],
    }
    path = store / "manifests" / registry / namespace / name / tag
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest))
    return store / "blobs" / f"sha256-{manifest['layers'][0]['digest'].split(':')[1]}"
