"""A test that hangs inside Qt's event loop fails the run instead of stalling it.

A window test once sat more than ten minutes in ``qtbot.waitUntil`` (inside
``QEventLoop.exec``) although both its own 90 s bound and pytest-timeout's 120 s
were set: while Qt's loop waits with nothing to deliver, no Python code runs, so
neither waitUntil's clock check nor the SIGALRM handler of pytest-timeout's
default "signal" method ever runs. ``timeout_method = "thread"`` in pyproject.toml
watches from another thread, prints every thread's stack and ends the run. This
runs a deliberately stuck test under the project's own pytest configuration and
checks that it is stopped, with the stack that says where it was stuck.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

STUCK_TEST = '''
from PySide6.QtCore import QEventLoop


def test_waits_in_qt_for_ever(qapp):
    QEventLoop().exec()  # nothing will ever quit it: the shape of the CI hang
'''


def test_a_test_stuck_in_the_qt_event_loop_is_stopped_with_every_stack(tmp_path: Path) -> None:
    test_file = tmp_path / "test_stuck.py"
    test_file.write_text(STUCK_TEST)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", str(test_file), "-q", "-p", "no:cacheprovider",
             "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), "--timeout", "3"],
            capture_output=True, text=True, timeout=240, cwd=tmp_path, env=env)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError("a test stuck in QEventLoop.exec was never stopped: the "
                             "project's pytest-timeout setting cannot end a Qt hang") from exc
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "Timeout" in output, output
    # The dump names the stuck line, so a CI log shows where a real hang was.
    assert "QEventLoop().exec()" in output or "test_waits_in_qt_for_ever" in output, output
