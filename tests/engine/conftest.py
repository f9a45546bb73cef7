"""Fixtures for the engine tier: a private home with no model folders, and the hub double."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hub_double import HubDouble

_MODEL_VARIABLES = ("OLLAMA_MODELS", "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE",
                    "XDG_CACHE_HOME", "LLAMA_CACHE", "HF_ENDPOINT", "HF_TOKEN")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty home folder: every program's default model folder lives under it."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    for name in _MODEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # The hub client never phones home from a test, whatever the machine's settings.
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    return folder


@pytest.fixture
def hub() -> Iterator[HubDouble]:
    with HubDouble() as double:
        yield double
