"""The frozen binary (``dist/desktop-agent`` from ``build.spec``) does what the installed
command does: the same checks as ``test_entry_point.py``, run on the binary.

Build it first with ``bash .ci/build_binary.sh`` (CI does, before the tests) or
``pyinstaller --noconfirm build.spec``; without it these tests skip and say why (in CI they fail).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_entry_point import REPO, EntryPointChecks
from tier_policy import part_missing

pytestmark = pytest.mark.e2e

BINARY = REPO / "dist" / ("desktop-agent.exe" if sys.platform == "win32" else "desktop-agent")


class TestFrozenBinary(EntryPointChecks):
    @pytest.fixture(autouse=True)
    def _command(self):
        if not BINARY.is_file():
            part_missing(
                f"{BINARY.relative_to(REPO)} is not built "
                "(run: bash .ci/build_binary.sh, or pyinstaller --noconfirm build.spec)"
            )
        self.command = [str(BINARY)]


    @pytest.mark.skipif(not sys.platform.startswith("linux"),
                        reason="the stub that reads ahead is Linux-only (packaging/onefile/stub.c)")
    def test_the_first_window_lists_what_its_start_read_for_later_launches_to_read_ahead(
            self, tmp_path: Path) -> None:
        """From a cold page cache the stub reads these ahead while the app starts."""
        cache = tmp_path / "bundles"
        env = {"DESKTOP_AGENT_BUNDLE_CACHE": str(cache),
               "DESKTOP_AGENT_DATA_DIR": str(tmp_path / "data"),
               "DESKTOP_AGENT_EXIT_AFTER_PAINT": "1"}
        first = self.run(env=env)  # unpacks, opens the window, exits once it is ready
        assert first.returncode == 0, first.stderr
        assert "first-paint" in first.stdout
        (folder,) = [path for path in cache.iterdir() if path.is_dir()]
        listed = folder / "startup-files"
        rows = [line.split(" ", 2) for line in listed.read_text(encoding="utf-8").splitlines()]
        assert rows and all(len(row) == 3 and row[0].isdigit() and row[1].isdigit()
                            for row in rows)
        paths = [Path(row[2]) for row in rows]
        assert all(path.is_file() for path in paths)
        names = {path.name for path in paths}
        assert {"libQt6Core.so.6", "libQt6Widgets.so.6", "QtWidgets.abi3.so"} <= names
        assert any(name.startswith("libpython3") for name in names)
        assert "libqminimal.so" in names  # a plugin Qt reads to choose one, and lets go of
        modules = [path for path in paths if path.suffix == ".pyc"]
        assert modules and all(path.is_relative_to(folder) for path in modules)
        assert any(path.name == "main_window.pyc" for path in modules)
        written = listed.stat().st_mtime_ns

        again = self.run(env=env)  # reads them ahead; the list is written once per build
        assert again.returncode == 0, again.stderr
        assert "first-paint" in again.stdout
        assert listed.stat().st_mtime_ns == written
