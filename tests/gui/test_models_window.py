"""*Server → Models…*: the real window lists the GGUF models real folder layouts hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from models_driver import MODEL_VARIABLES, lay_out_library, open_models, row_texts
from PySide6.QtCore import Qt
from window_driver import WAIT_MS


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty home: every program's default model folder lives under it."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    for name in MODEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    return folder


def test_the_models_window_lists_lm_studio_ollama_and_a_broken_file(
        qtbot: Any, make_window: Any, home: Path, tmp_path: Path) -> None:
    laid = lay_out_library(home, tmp_path)
    window = make_window()
    models = open_models(qtbot, window)

    qwen = row_texts(models, "Qwen/Qwen3-1.7B-Q4_K_M")
    assert qwen["Params"] == "1.7B"
    assert qwen["Quant"] == "Q4_K_M"
    assert qwen["Context"] == "40,960"
    assert qwen["Tools"] == "✓"
    assert qwen["Fit"] == "Fits"
    assert qwen["Source"] == "LM Studio"
    assert qwen["Size"].endswith("kB")
    gemma = row_texts(models, "gemma3:1b")
    assert gemma["Source"] == "Ollama"
    assert gemma["Tools"] == "—"  # its template offers no tools
    assert gemma["Params"] == "1B"

    # A folder the person adds is searched too; its damaged file is listed, not hidden.
    window.local_models.bridge.add_folder(laid["folder"])
    qtbot.waitUntil(lambda: not window.local_models.bridge.scanning, timeout=WAIT_MS)
    broken = row_texts(models, "half-downloaded")
    assert broken["Fit"] == "Can't use"
    assert broken["Source"] == "folder"
    assert models.library.select(laid["cut"])
    details = models.library.details
    assert details.verdict.text().startswith("half-downloaded.gguf is incomplete")
    assert not details.run_button.isEnabled()
    listed = models.library.table.model().rowCount()
    assert listed >= 3  # and the small model the app installs from PyPI, when it is there
    assert models.summary.text().startswith(f"{listed} models · ")
    assert "memory free" in models.summary.text()

    # A usable model shows the settings chosen for this machine, editable before Run.
    assert models.library.select(laid["lm_studio"])
    assert details.title.text() == "Qwen/Qwen3-1.7B-Q4_K_M"
    assert details.run_button.isEnabled()
    assert details.context.value() in (8192, 16384, 32768)
    assert details.context.isEnabled()
    assert "Needs" in details.verdict.text()


def test_the_added_folder_is_remembered_by_the_next_window(
        qtbot: Any, make_window: Any, home: Path, tmp_path: Path) -> None:
    laid = lay_out_library(home, tmp_path)
    first = make_window()
    first.local_models.bridge.add_folder(laid["folder"])
    qtbot.waitUntil(lambda: not first.local_models.bridge.scanning, timeout=WAIT_MS)
    first.close()

    second = make_window()
    models = open_models(qtbot, second)
    assert row_texts(models, "half-downloaded")["Source"] == "folder"
    qtbot.mouseClick(models.refresh_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not second.local_models.bridge.scanning, timeout=WAIT_MS)
    assert row_texts(models, "half-downloaded")["Fit"] == "Can't use"

    # "Your folders" lists it; choosing it there stops looking in it.
    assert models.folders_button.isVisible()
    assert models.folders_button.text() == "Your folders (1)"
    menu = models.folders_button.menu()
    menu.aboutToShow.emit()
    [stop] = menu.actions()
    assert stop.text() == f"Stop looking in {laid['folder']}"
    stop.trigger()
    qtbot.waitUntil(lambda: not second.local_models.bridge.scanning, timeout=WAIT_MS)
    with pytest.raises(AssertionError, match="is not listed"):
        row_texts(models, "half-downloaded")
    assert not models.folders_button.isVisible()


def test_the_idle_time_is_the_engine_s_preference(
        qtbot: Any, make_window: Any, home: Path) -> None:
    window = make_window()
    models = open_models(qtbot, window)
    engine = window.local_models.bridge.engine
    assert models.idle_minutes.value() == 30

    models.idle_minutes.setValue(5)
    qtbot.waitUntil(lambda: engine.preferences.idle_unload_minutes == 5.0, timeout=WAIT_MS)
    models.idle_minutes.setValue(0)
    assert models.idle_minutes.text() == "never"
    qtbot.waitUntil(lambda: engine.preferences.idle_unload_minutes is None, timeout=WAIT_MS)
