"""Fixtures for the REST server tests (see server_harness.py for the harness)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import RunningApi, start_api


@pytest.fixture
def api(tmp_path: Path, data_dir: Path) -> Iterator[RunningApi]:
    running = start_api(tmp_path)
    try:
        yield running
    finally:
        running.stop()
        running.store.close()
