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
    QLabel,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.icons import set_icon
from desktop_agent.gui.models.library_page import LibraryPage
from desktop_agent.gui.theme import style_chrome

if TYPE_CHECKING:
    from desktop_agent.gui.models.local_models_bridge import LocalModelsBridge


class ModelsWindow(QDialog):
    """The Models window over a :class:`LocalModelsBridge`.

    Signals:
        use_requested(object): Use this ``RunningModel`` in the visible conversation.
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
        self.refresh_button = QPushButton("Refresh")
        set_icon(self.refresh_button, "refresh-cw")
        self.refresh_button.clicked.connect(bridge.scan)
        header.addWidget(self.add_folder_button)
        header.addWidget(self.refresh_button)
        layout.addLayout(header)

        self.tabs = QTabWidget()
        self.tabs.setObjectName("modelsTabs")
        self.tabs.setDocumentMode(True)
        self.library = LibraryPage(bridge)
        self.library.use_requested.connect(self.use_requested)
        self.tabs.addTab(self.library, "On this computer")
        layout.addWidget(self.tabs, 1)

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
        bridge.library_changed.connect(lambda _entries: self._show_summary())
        self._on_scanning(bridge.scanning)

    def _on_scanning(self, scanning: bool) -> None:
        self.refresh_button.setEnabled(not scanning)
        self._show_summary()

    def _show_summary(self) -> None:
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
