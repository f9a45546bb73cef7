"""Downloads from the Models window through huggingface_hub against the hub double.

What a person sees: the bar fills with bytes, speed and time left; Cancel keeps what
arrived and Resume carries on from there; a gated repository says how to add a token,
and with one the download goes through without the token ever being shown.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine.gguf_samples import write_gguf
from engine.hub_double import HubDouble
from huggingface_hub import constants
from models_driver import MODEL_VARIABLES, open_models, row_texts
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QInputDialog
from window_driver import WAIT_MS

REPO = "someone/Tiny-Model-GGUF"
FILE = "Tiny-Model-Q4_K_M.gguf"
#: huggingface_hub reports progress once per chunk of this size.
CHUNK = constants.DOWNLOAD_CHUNK_SIZE


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubDouble]:
    """The hub double as the hub, a private home and Hugging Face cache."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in MODEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with HubDouble() as double:
        monkeypatch.setenv("HF_ENDPOINT", double.endpoint)
        yield double


def model_bytes(tmp_path: Path, size: int) -> bytes:
    """A real GGUF padded to ``size`` bytes (the library reads its header after download)."""
    data = write_gguf(tmp_path / "model.gguf").read_bytes()
    return data + bytes(size - len(data))


def ask_download(qtbot: Any, models: Any, repo: str, filename: str) -> None:
    models.tabs.setCurrentWidget(models.downloads)
    page = models.downloads
    qtbot.keyClicks(page.repo_edit, repo)
    qtbot.keyClicks(page.file_edit, filename)
    qtbot.mouseClick(page.repo_button, Qt.MouseButton.LeftButton)


def test_a_download_shows_progress_and_cancel_keeps_the_part_for_resume(
        qtbot: Any, make_window: Any, hub: HubDouble, tmp_path: Path) -> None:
    content = model_bytes(tmp_path, 3 * CHUNK)
    sha256 = hub.add_file(REPO, FILE, content)
    hub.faults.pace = 0.005  # about 2 s for the whole file: time to see it and cancel
    window = make_window()
    models = open_models(qtbot, window)
    bar = models.download_bar

    ask_download(qtbot, models, REPO, FILE)
    qtbot.waitUntil(bar.isVisible, timeout=WAIT_MS)
    assert FILE in bar.title.text()
    qtbot.waitUntil(lambda: bar.progress.value() > 0, timeout=WAIT_MS)
    figures = bar.figures.text()
    assert " of 31 MB" in figures and "MB/s" in figures and "left" in figures, figures
    assert not models.downloads.download_button.isEnabled()  # one download at a time
    qtbot.mouseClick(bar.cancel_button, Qt.MouseButton.LeftButton)

    qtbot.waitUntil(bar.retry_button.isVisible, timeout=WAIT_MS)
    partial = tmp_path / "hf/hub/models--someone--Tiny-Model-GGUF/blobs" / f"{sha256}.incomplete"
    kept = partial.stat().st_size
    assert 0 < kept < len(content)
    assert partial.read_bytes() == content[:kept]
    assert bar.retry_button.text() == "Resume"
    assert bar.title.text() == f"Download cancelled: {FILE}"
    assert bar.figures.text().endswith(" MB of 31 MB kept"), bar.figures.text()
    assert bar.message.text() == "Resume downloads the rest."
    assert not bar.cancel_button.isVisible()

    hub.faults.pace = 0.0
    qtbot.mouseClick(bar.retry_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bar.close_button.isVisible() and "Downloaded" in
                    bar.message.text(), timeout=WAIT_MS)
    ranges = [r.headers.get("range") for r in hub.requests if r.server == "cdn"]
    assert ranges[-1] == f"bytes={kept}-"  # resumed, not started again
    bridge = window.local_models.bridge
    qtbot.waitUntil(lambda: not bridge.scanning, timeout=WAIT_MS)
    row = row_texts(models, "someone/Tiny-Model-Q4_K_M")
    assert row["Source"] == "Hugging Face"
    assert row["Fit"] == "Fits"


def test_a_gated_repository_says_how_to_add_a_token_and_then_downloads(
        qtbot: Any, make_window: Any, hub: HubDouble, tmp_path: Path, no_keyring: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    token = "hf_granted_token_1234567890"
    hub.add_file(REPO, FILE, model_bytes(tmp_path, 64 * 1024), granted_tokens={token})
    window = make_window()
    models = open_models(qtbot, window)
    bar = models.download_bar

    ask_download(qtbot, models, REPO, FILE)
    qtbot.waitUntil(bar.token_button.isVisible, timeout=WAIT_MS)
    assert "is gated" in bar.message.text() and "access token" in bar.message.text()

    dialogs: list[QInputDialog] = []
    monkeypatch.setattr(QInputDialog, "open", lambda self: dialogs.append(self))
    qtbot.mouseClick(bar.token_button, Qt.MouseButton.LeftButton)
    assert len(dialogs) == 1
    dialogs[0].textValueSelected.emit(token)  # as the dialog's OK does
    qtbot.waitUntil(lambda: "kept until the app quits" in bar.message.text(),  # no keyring
                    timeout=WAIT_MS)

    qtbot.mouseClick(bar.retry_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "Downloaded" in bar.message.text(), timeout=WAIT_MS)
    shown = " ".join(label.text() for label in (bar.title, bar.figures, bar.message))
    assert token not in shown
    assert [r for r in hub.requests if r.server == "hub"][-1].headers["authorization"] == \
        f"Bearer {token}"


def test_the_repository_form_explains_what_it_needs(
        qtbot: Any, make_window: Any, hub: HubDouble) -> None:
    window = make_window()
    models = open_models(qtbot, window)
    page = models.downloads

    ask_download(qtbot, models, "just-a-name", FILE)
    qtbot.waitUntil(page.repo_message.isVisible, timeout=WAIT_MS)
    assert "write owner/repo" in page.repo_message.text()  # the engine's own sentence
    page.repo_edit.clear()
    page.file_edit.clear()
    ask_download(qtbot, models, REPO, "README.md")
    assert "name a .gguf file" in page.repo_message.text()
    assert not models.download_bar.isVisible()  # nothing was asked of the hub
    assert hub.requests == []


@pytest.mark.parametrize(("fault", "button", "said"), [
    ("network", "Resume", "was lost while downloading"),
    ("checksum", "Download again", "did not match the checksum"),
])
def test_a_broken_download_says_what_happened_and_offers_what_helps(
        qtbot: Any, make_window: Any, hub: HubDouble, tmp_path: Path, fault: str, button: str,
        said: str) -> None:
    content = model_bytes(tmp_path, 2 * CHUNK)
    sha256 = hub.add_file(REPO, FILE, content)
    if fault == "network":  # the connection drops after a chunk and does not come back
        hub.faults.cut_after, hub.faults.down_after_cut = CHUNK + 1000, True
    else:  # a mirror serving other bytes than the ones the hub publishes
        hub.faults.wrong_content = bytes(len(content))
    window = make_window()
    models = open_models(qtbot, window)
    bar = models.download_bar

    ask_download(qtbot, models, REPO, FILE)
    qtbot.waitUntil(bar.retry_button.isVisible, timeout=WAIT_MS)
    assert bar.retry_button.text() == button
    assert said in bar.message.text()
    partial = tmp_path / "hf/hub/models--someone--Tiny-Model-GGUF/blobs" / f"{sha256}.incomplete"
    assert partial.exists() == (fault == "network")  # kept to resume, or deleted

    hub.faults.down = False
    hub.faults.wrong_content = None
    qtbot.mouseClick(bar.retry_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "Downloaded" in bar.message.text(), timeout=WAIT_MS)
