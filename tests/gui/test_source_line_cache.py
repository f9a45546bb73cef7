"""linecache keeps the source of a few files, not of every module the window imported.

PySide6 reads the whole source of each module imported after it (to see whether
the module uses PySide); without a bound, those lines stayed cached for good.
"""

from __future__ import annotations

import linecache
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

from desktop_agent.gui.source_line_cache import RecentSourceLines

REPO = Path(__file__).resolve().parents[2]


def _source_files(folder: Path, count: int) -> list[Path]:
    files = []
    for n in range(count):
        path = folder / f"module_{n}.py"
        path.write_text(f"def fail_{n}():\n    raise ValueError('failed in file {n}')\n")
        files.append(path)
    return files


def test_only_the_files_read_last_stay_cached(tmp_path: Path) -> None:
    cache = RecentSourceLines({}, limit=3)
    generated = (12, None, ["x = 1\n"], "<attrs generated init>")
    cache["<attrs generated init>"] = generated  # cannot be read again: kept
    for path in _source_files(tmp_path, 5):
        cache[str(path)] = (60, path.stat().st_mtime, path.read_text().splitlines(True), str(path))
    kept = sorted(Path(name).name for name in cache if not name.startswith("<"))
    assert kept == ["module_2.py", "module_3.py", "module_4.py"]
    assert cache["<attrs generated init>"] is generated
    cache.pop(str(tmp_path / "module_4.py"))
    del cache[str(tmp_path / "module_3.py")]
    assert len(cache) == 2
    cache.clear()
    assert not cache


def test_a_traceback_still_shows_the_line_of_a_file_no_longer_cached(tmp_path: Path,
                                                                        monkeypatch) -> None:
    monkeypatch.setattr(linecache, "cache", RecentSourceLines({}, limit=2))
    files = _source_files(tmp_path, 4)
    namespaces: list[dict[str, object]] = []
    for path in files:
        namespace: dict[str, object] = {}
        exec(compile(path.read_text(), str(path), "exec"), namespace)
        namespaces.append(namespace)
        linecache.getlines(str(path))  # as PySide6 reads each module imported
    assert str(files[0]) not in linecache.cache
    try:
        namespaces[0]["fail_0"]()  # type: ignore[operator]
    except ValueError:
        shown = traceback.format_exc()
    assert "raise ValueError('failed in file 0')" in shown


def test_the_window_keeps_few_source_files_after_loading_qt_and_the_sdk() -> None:
    code = textwrap.dedent("""
        import linecache
        from desktop_agent.gui.app import prepare_imports
        prepare_imports()
        from PySide6.QtWidgets import QApplication
        import desktop_agent.core.servers.discovery
        on_disk = [n for n, e in linecache.cache.items() if len(e) == 4 and e[1] is not None]
        print(len(on_disk))
    """)
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) <= 16
