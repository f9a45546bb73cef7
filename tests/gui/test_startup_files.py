"""The list of what the window's start read, which the single file reads ahead next time.

The single file's stub names the file in ``DESKTOP_AGENT_STARTUP_FILES`` when its
unpacked folder has none; the window writes it once its conversation is shown
(``gui/startup_files.py``). ``tests/e2e/test_onefile_launcher.py`` runs the stub's
reading ahead, ``tests/e2e/test_binary.py`` the real one file.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from window_driver import WAIT_MS

from desktop_agent.gui import startup_files
from desktop_agent.gui.app import list_startup_files_when_shown

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the list is read from /proc (the stub is Linux-only)")


def parse(text: str) -> list[tuple[int, int, str]]:
    rows = []
    for line in text.splitlines():
        offset, length, path = line.split(" ", 2)
        rows.append((int(offset), int(length), path))
    return rows


def test_the_window_lists_the_qt_libraries_and_modules_its_start_read_once_shown(
        qtbot: Any, make_window: Any, tmp_path: Path) -> None:
    target = tmp_path / "startup-files"
    window = make_window(tabs_after_paint=True)
    list_startup_files_when_shown(window, str(target))
    assert not target.exists()  # not before the conversation is shown
    with qtbot.waitSignal(window.conversations_shown, timeout=WAIT_MS):
        pass
    rows = parse(target.read_text(encoding="utf-8"))
    assert rows
    assert all(os.path.isfile(path) and offset >= 0 and length >= 0
               for offset, length, path in rows)
    core = [row for row in rows if Path(row[2]).name.startswith("libQt6Core.so")]
    assert core and all(length > 0 for _offset, length, _path in core)  # its pages, not whole
    assert all(offset % startup_files.PAGE == 0 for offset, _length, _path in core)
    whole = {path for _offset, length, path in rows if length == 0}
    main_window = sys.modules["desktop_agent.gui.window.main_window"].__spec__
    assert main_window.cached in whole or main_window.origin in whole  # the modules it imported
    plugins = {Path(path).name for path in whole if "/plugins/platforms/" in path}
    assert "libqminimal.so" in plugins  # read by Qt to choose a platform, never loaded
    assert not list(tmp_path.glob("*.part"))

    target.unlink()
    window.conversations_shown.emit()  # written once: the stub asks for it once per build
    assert not target.exists()


def test_an_unwritable_list_costs_nothing_but_the_read_ahead(
        make_window: Any, qtbot: Any, tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    assert not startup_files.write_startup_files(str(blocked / "startup-files"))
    window = make_window(tabs_after_paint=True)
    list_startup_files_when_shown(window, str(blocked / "startup-files"))
    with qtbot.waitSignal(window.conversations_shown, timeout=WAIT_MS):
        pass  # no error reaches the loop (the fixture fails on one)
    assert window.conversations_ready


def test_the_stubs_request_is_taken_out_of_the_environment_the_apps_children_get(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(startup_files.STARTUP_FILES_ENV, str(tmp_path / "startup-files"))
    assert startup_files.take_target() == str(tmp_path / "startup-files")
    assert startup_files.STARTUP_FILES_ENV not in os.environ
    assert startup_files.take_target() is None


def test_maps_of_shared_memory_devices_and_deleted_files_are_not_listed() -> None:
    maps = "\n".join([
        "7f00-7f02 r--p 00000000 fe:00 11 /usr/lib/libQt6Core.so.6",
        "7f02-7f05 r-xp 00002000 fe:00 11 /usr/lib/libQt6Core.so.6",
        "7f05-7f06 rw-s 00000000 fe:00 12 /home/a/data/conversations.sqlite3-shm",
        "7f06-7f07 rw-p 00000000 00:00 0 ",
        "7f07-7f08 r--s 00000000 00:01 13 /memfd:xorg (deleted)",
        "7f08-7f09 rw-s 00000000 00:05 14 /dev/zero",
        "7f09-7f0a r--p 00000000 fe:00 15 /tmp/gone.so (deleted)",
        "7f0a-7f0b r--p 00000000 fe:00 16 /usr/share/fonts/a b.ttf",
        "7ffc-7ffd rw-p 00000000 00:00 0 [stack]",
    ])
    regions = startup_files.read_maps(maps)
    assert [(r.path, r.offset) for r in regions] == [
        ("/usr/lib/libQt6Core.so.6", 0), ("/usr/lib/libQt6Core.so.6", 0x2000),
        ("/usr/share/fonts/a b.ttf", 0)]
