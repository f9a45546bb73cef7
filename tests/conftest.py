"""Isolation for every tier: no test touches the user's real data folder or keys."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

#: Shared fixtures: the llama.cpp server (e2e tier, window tests) and a private PostgreSQL cluster.
pytest_plugins = ["e2e.llama.llama_fixtures", "postgres.postgres_fixtures"]


@pytest.fixture(autouse=True)
def isolated_app_data(tmp_path_factory: pytest.TempPathFactory,
                      monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh DESKTOP_AGENT_DATA_DIR per test, and no session secrets carried over.

    Tests that need a particular folder set the variable again; this only
    guarantees that nothing falls back to ~/.local/share/desktop-agent.
    """
    folder = tmp_path_factory.mktemp("app-data")
    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", str(folder))
    # New window conversations work in ~/Desktop Agent/...: keep tests out of the real home.
    monkeypatch.setenv("DESKTOP_AGENT_WORK_ROOT", str(folder / "Desktop Agent"))
    from desktop_agent.appdata import secrets

    secrets.default_vault().forget_session()
    yield folder
    secrets.default_vault().forget_session()
