"""A second start on the same data folder finds the first instead of writing beside it."""

from __future__ import annotations

import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from desktop_agent.gui.single_instance import (
    SingleInstance,
    bring_forward,
    offer_running_instance,
    socket_name,
    socket_path,
)


def test_the_second_claim_on_a_folder_fails_and_a_new_folder_is_free(
        qtbot: Any, tmp_path: Path) -> None:
    first = SingleInstance(tmp_path / "data")
    assert first.claim()
    try:
        assert not SingleInstance(tmp_path / "data").claim()
        other = SingleInstance(tmp_path / "other-data")
        assert other.claim()
        other.release()
    finally:
        first.release()
    again = SingleInstance(tmp_path / "data")
    assert again.claim(), "a closed instance must not keep the folder"
    again.release()


def test_a_socket_left_by_a_killed_instance_does_not_block_the_next_start(
        qtbot: Any, tmp_path: Path) -> None:
    from PySide6.QtNetwork import QLocalServer

    # A crashed process leaves its Unix socket file behind with nobody listening.
    leftover = QLocalServer()
    assert leftover.listen(socket_name(tmp_path))
    path = Path(leftover.fullServerName())
    leftover.close()
    path.touch()  # close() removed it; put back the stale file a kill leaves
    try:
        instance = SingleInstance(tmp_path)
        assert instance.claim()
        instance.release()
    finally:
        path.unlink(missing_ok=True)


def test_switch_to_it_brings_the_running_window_forward(qtbot: Any, tmp_path: Path) -> None:
    running = SingleInstance(tmp_path)
    assert running.claim()
    window = QWidget()
    qtbot.addWidget(window)
    window.showMinimized()
    running.activation_requested.connect(lambda: bring_forward(window))
    second = SingleInstance(tmp_path)
    assert not second.claim()

    def press_switch() -> None:
        box = next(w for w in QApplication.topLevelWidgets()
                   if isinstance(w, QMessageBox) and w.isVisible())
        assert "already open with this data folder" in box.text()
        assert str(tmp_path) in box.informativeText()
        box.defaultButton().click()

    QTimer.singleShot(0, press_switch)
    with qtbot.waitSignal(running.activation_requested, timeout=5_000):
        assert offer_running_instance(second, tmp_path) == 0
    assert window.isVisible() and not window.isMinimized()
    running.release()


def test_cancel_leaves_the_running_window_alone(qtbot: Any, tmp_path: Path) -> None:
    running = SingleInstance(tmp_path)
    assert running.claim()
    asked: list[bool] = []
    running.activation_requested.connect(lambda: asked.append(True))

    def press_cancel() -> None:
        box = next(w for w in QApplication.topLevelWidgets()
                   if isinstance(w, QMessageBox) and w.isVisible())
        box.button(QMessageBox.StandardButton.Cancel).click()

    QTimer.singleShot(0, press_cancel)
    assert offer_running_instance(SingleInstance(tmp_path), tmp_path) == 0
    qtbot.wait(100)
    assert asked == []
    running.release()


def test_only_this_user_can_reach_the_running_instance(qtbot: Any, tmp_path: Path) -> None:
    running = SingleInstance(tmp_path)
    assert running.claim()
    try:
        path = socket_path(socket_name(tmp_path))
        assert stat.S_ISSOCK(path.stat().st_mode)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    finally:
        running.release()
    assert not path.exists(), "a closed instance leaves no socket behind"


def test_a_window_listening_through_qt_is_found_and_can_be_raised(
        qtbot: Any, tmp_path: Path) -> None:
    """An instance that listens with QLocalServer (an earlier version) is found as well."""
    from PySide6.QtNetwork import QLocalServer

    earlier = QLocalServer()
    assert earlier.listen(socket_name(tmp_path))
    try:
        second = SingleInstance(tmp_path)
        assert not second.claim()
        with qtbot.waitSignal(earlier.newConnection, timeout=5_000):
            assert second.ask_running_to_raise()
    finally:
        earlier.close()


def test_claiming_the_folder_does_not_load_qt_network(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from PySide6.QtWidgets import QApplication
        from desktop_agent.gui.single_instance import SingleInstance
        app = QApplication([])
        instance = SingleInstance(Path({str(tmp_path)!r}))
        assert instance.claim() and not SingleInstance(Path({str(tmp_path)!r})).claim()
        instance.release()
        print("PySide6.QtNetwork" in sys.modules)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
