"""Fixtures for the workspace tier: a real working folder and a real checkpoint store."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop_agent.workspace.checkpoints import CheckpointStore


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def checkpoints(tmp_path: Path) -> CheckpointStore:
    return CheckpointStore(tmp_path / "data" / "checkpoints" / "conversation")
