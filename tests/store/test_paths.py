"""Where the app keeps its files."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from desktop_agent.appdata import paths


def test_everything_lives_under_the_overridden_data_dir(data_dir: Path) -> None:
    assert paths.data_dir() == data_dir
    assert data_dir.is_dir()
    assert paths.database_path() == data_dir / "conversations.sqlite3"
    assert paths.config_path() == data_dir / "config.json"
    assert paths.workdirs_dir() == data_dir / "workdirs"
    assert paths.workdirs_dir().is_dir()
    assert paths.secret_names_path().parent == data_dir


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_a_new_data_dir_is_private(data_dir: Path) -> None:
    mode = stat.S_IMODE(paths.data_dir().stat().st_mode)
    assert mode & 0o077 == 0


def test_without_the_variable_the_platform_folder_is_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("DESKTOP_AGENT_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    folder = paths.data_dir()
    assert folder.name == "desktop-agent"
    if sys.platform.startswith("linux"):
        assert folder == tmp_path / "xdg" / "desktop-agent"
