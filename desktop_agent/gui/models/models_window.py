"""*Server → Models…*: the models on this computer, downloads, and the one running.

A non-modal window like LM Studio's "My Models": a header with what this machine
offers (free memory, cores), *Add folder…* and *Refresh*; the "On this computer"
page (the library and the selected model's details); the "Download" page (the
curated list with the best pick for this machine preselected, and any Hugging Face
repository); the download's progress; and how long an unused model stays loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.icons import retint, set_icon
from desktop_agent.gui.models.download_bar import DownloadBar
from desktop_agent.gui.models.download_page import DownloadPage
from desktop_agent.gui.models.library_page import LibraryPage
from desktop_agent.gui.theme import style_chrome, theme_signals

if TYPE_CHECKING:
    from desktop_agent.engine import DownloadError
    from desktop_agent.gui.models.local_models_bridge import LocalModelsBridge
    from desktop_agent.session import LocalServer, ModelDownload


class ModelsWindow(QDialog):
    """The Models window over a :class:`LocalModelsBridge`.

    Signals:
        use_requested(object): Use this ``LocalServer`` in the visible conversation.
    """

    use_requested = Signal(object)

    def __init__(self, bridge: LocalModelsBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        style_chrome(self)
        self.setObjectName("modelsWindow")
        self.setWindowTitle("Models")
        self.resize(940, 620)
        self._bridge = bridge
        layout = QVBoxLayout(self)
        layout.setSpacing(10)

        header = QHBoxLayout()
        titles = QVBoxLayout()
        titles.setSpacing(2)
        title = QLabel("Models on this computer")
        title.setObjectName("modelsTitle")
        self.summary = QLabel()
        self.summary.setObjectName("modelsSummary")
        titles.addWidget(title)
        titles.addWidget(self.summary)
        header.addLayout(titles, 1)
        self.add_folder_button = QPushButton("Add folder…")
        set_icon(self.add_folder_button, "folder-open")
        self.add_folder_button.clicked.connect(self._ask_folder)
        self.folders_button = QPushButton()
        self.folders_button.setToolTip("The folders you added: choose one to stop looking in it.")
        self.folders_button.setMenu(QMenu(self.folders_button))
        self.folders_button.menu().aboutToShow.connect(self._fill_folders_menu)
        self.refresh_button = QPushButton("Refresh")
        set_icon(self.refresh_button, "refresh-cw")
        self.refresh_button.clicked.connect(bridge.scan)
        header.addWidget(self.folders_button)
        header.addWidget(self.add_folder_button)
        header.addWidget(self.refresh_button)
        layout.addLayout(header)

        self.tabs = QTabWidget()
        self.tabs.setObjectName("modelsTabs")
        self.tabs.setDocumentMode(True)
        self.tabs.tabBar().setDrawBase(False)
        self.library = LibraryPage(bridge)
        self.library.use_requested.connect(self.use_requested)
        self.tabs.addTab(self.library, "On this computer")
        self.downloads = DownloadPage(bridge)
        self.downloads.token_requested.connect(self.ask_token)
        self.tabs.addTab(self.downloads, "Download")
        layout.addWidget(self.tabs, 1)
        self.download_bar = DownloadBar()
        self.download_bar.cancel_requested.connect(bridge.cancel_download)
        self.download_bar.retry_requested.connect(bridge.retry)
        self.download_bar.token_requested.connect(self.ask_token)
        layout.addWidget(self.download_bar)

        footer = QHBoxLayout()
        footer.addWidget(QLabel("Unload a model after"))
        self.idle_minutes = QSpinBox()
        self.idle_minutes.setRange(0, 24 * 60)
        self.idle_minutes.setSuffix(" min")
        self.idle_minutes.setSpecialValueText("never")
        self.idle_minutes.setValue(bridge.idle_minutes)
        self.idle_minutes.setToolTip("A model nobody used for this long is stopped, giving "
                                     "its memory back (0: never).")
        self.idle_minutes.valueChanged.connect(bridge.set_idle_minutes)
        footer.addWidget(self.idle_minutes)
        footer.addWidget(QLabel("unused. One model runs at a time; quitting stops it."))
        footer.addStretch(1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        footer.addWidget(buttons)
        layout.addLayout(footer)

        bridge.scanning_changed.connect(self._on_scanning)
        bridge.library_changed.connect(self._show_summary)  # bound: forgotten with the window
        bridge.download_started.connect(self._on_download_started)
        bridge.download_progress.connect(self.download_bar.show_progress)
        bridge.download_finished.connect(self._on_downloaded)
        bridge.download_failed.connect(self._on_download_failed)
        bridge.token_saved.connect(self._on_token_saved)
        bridge.model_ready.connect(self._on_ready)
        theme_signals().changed.connect(self._restyle)  # the window's own slot: see MainWindow
        self._on_scanning(bridge.scanning)
        if bridge.downloading is not None:  # opened again while a download runs
            self.download_bar.start(bridge.downloading)

    def _restyle(self, _dark: bool) -> None:
        retint(self)
        self.library.details.restyle()
        self.downloads.restyle()
        self.download_bar.restyle()

    def show_downloads(self) -> None:
        """Show the Download page with the best model for this computer selected."""
        self.tabs.setCurrentWidget(self.downloads)
        self.downloads.select_best()

    def ask_token(self) -> None:
        """Ask for a Hugging Face access token and keep it in the keyring."""
        dialog = QInputDialog(self)
        dialog.setWindowTitle("Hugging Face access token")
        dialog.setLabelText("Gated and private repositories need an access token\n"
                            "(huggingface.co → Settings → Access Tokens, “Read”).\n"
                            "It is kept in the system keyring, never in a file.")
        dialog.setTextEchoMode(QLineEdit.EchoMode.Password)
        dialog.textValueSelected.connect(self._keep_token)
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()

    def _keep_token(self, token: str) -> None:
        if token.strip():
            self._bridge.set_hub_token(token.strip())

    def _on_token_saved(self, persisted: bool) -> None:
        self.download_bar.message.setText(
            "The token is stored in the system keyring; download again to use it."
            if persisted else "No system keyring is available: the token is kept until the "
            "app quits.")
        self.download_bar.message.show()

    def _on_download_started(self, download: ModelDownload) -> None:
        self.download_bar.start(download)
        self.downloads.refresh()

    def _on_downloaded(self, path: Path, run: bool) -> None:
        self.download_bar.finish(f"Downloaded to {path.parent}; starting it…" if run else
                                 f"Downloaded to {path.parent}; it is listed under "
                                 "“On this computer”.")
        self.downloads.refresh()

    def _on_download_failed(self, error: DownloadError) -> None:
        self.download_bar.fail(error)
        self.downloads.refresh()

    def _on_ready(self, server: LocalServer) -> None:
        """A model is ready: show it in the library, selected."""
        self.tabs.setCurrentWidget(self.library)
        self.library.select(server.path)

    def _on_scanning(self, scanning: bool) -> None:
        self.refresh_button.setEnabled(not scanning)
        self._show_summary()

    def _fill_folders_menu(self) -> None:
        menu = self.folders_button.menu()
        menu.clear()
        for folder in self._bridge.folders():
            action = menu.addAction(f"Stop looking in {folder}")
            action.triggered.connect(lambda _c=False, f=folder: self._bridge.remove_folder(f))

    def _show_summary(self, _entries: object = None) -> None:
        folders = len(self._bridge.folders())
        self.folders_button.setText(f"Your folders ({folders})")
        self.folders_button.setVisible(folders > 0)
        if self._bridge.scanning and not self._bridge.entries:
            self.summary.setText("Looking for models…")
            return
        count = len(self._bridge.entries)
        models = f"{count} model{'s' if count != 1 else ''}"
        self.summary.setText(f"{models} · {self._bridge.machine_text()}")

    def _ask_folder(self) -> None:
        dialog = QFileDialog(self, "Add a folder of GGUF models")
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
        dialog.fileSelected.connect(lambda folder: self._bridge.add_folder(Path(folder)))
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()
