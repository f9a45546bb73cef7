"""Fixtures for the REST server tests (see server_harness.py for the harness)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import RunningApi, start_api

from desktop_agent.testing import ScriptedServer


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "data"
    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", str(folder))
    return folder


@pytest.fixture
def model_server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture
def api(tmp_path: Path, data_dir: Path) -> Iterator[RunningApi]:
    running = start_api(tmp_path)
    try:
        yield running
    finally:
        running.stop()
        running.store.close()
