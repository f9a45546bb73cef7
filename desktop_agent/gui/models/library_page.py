"""The "On this computer" page: the library table over the selected model's details.

It shows what the engine found and runs, and forwards the person's Run, Stop,
Restart and Use to the bridge (Use to the window, which owns the conversations).
A scan keeps the selection on the same file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QSplitter, QStackedWidget, QVBoxLayout, QWidget

from desktop_agent.gui.models.library_table import LibraryTable, LibraryTableModel
from desktop_agent.gui.models.model_details import ModelDetails
from desktop_agent.gui.models.run_state import IDLE, resolved, run_states

if TYPE_CHECKING:
    from desktop_agent.engine import LibraryEntry, RunSettings
    from desktop_agent.gui.models.local_models_bridge import LocalModelsBridge

EMPTY_TEXT = ("No GGUF models were found on this computer: not in LM Studio's, Ollama's, "
              "Hugging Face's or llama.cpp's folders. Download one (the Download tab), or "
              "add a folder that holds .gguf files.")


class LibraryPage(QWidget):
    """The models found, and the one selected.

    Signals:
        use_requested(object): Use this ``LocalServer`` in the visible conversation.
    """

    use_requested = Signal(object)

    def __init__(self, bridge: LocalModelsBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self.model = LibraryTableModel(self)
        self.table = LibraryTable(self.model)
        self.details = ModelDetails()
        self.empty = QLabel(EMPTY_TEXT)
        self.empty.setObjectName("libraryEmpty")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._pages = QStackedWidget()
        self._pages.addWidget(self.table)
        self._pages.addWidget(self.empty)
        split = QSplitter(Qt.Orientation.Vertical)
        split.setChildrenCollapsible(False)
        split.addWidget(self._pages)
        split.addWidget(self.details)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 0)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split)

        self.table.selectionModel().selectionChanged.connect(lambda *_: self._on_selected())
        self.details.run_requested.connect(self._run)
        self.details.stop_requested.connect(bridge.stop)
        self.details.restart_requested.connect(bridge.restart)
        self.details.use_requested.connect(self.use_requested)
        bridge.library_changed.connect(self.show_entries)
        bridge.models_changed.connect(self.show_running)
        bridge.start_failed.connect(self._on_start_failed)
        self.show_entries(bridge.entries)

    def show_entries(self, entries: list[LibraryEntry]) -> None:
        """Show a scan's result, keeping the selected model selected."""
        selected = self.table.selected_entry()
        self.model.set_entries(entries)
        self._pages.setCurrentWidget(self.table if entries or self._bridge.scanning
                                     else self.empty)
        if not (selected is not None and self.table.select_path(selected.path)) and entries:
            self.table.selectRow(0)
        self.show_running()
        self._on_selected()

    def show_running(self) -> None:
        """The status column and the details as the engine's models stand now."""
        bridge = self._bridge
        states = run_states(bridge.servers, bridge.starting, bridge.last_crash, bridge.rss_bytes)
        self.model.set_states(states)
        entry = self.details.entry
        self.details.show_state(states.get(resolved(entry.path), IDLE) if entry else IDLE)

    def select(self, path: Path) -> bool:
        """Highlight the model of ``path`` (the one-click flow, tests)."""
        return self.table.select_path(path)

    def _on_selected(self) -> None:
        entry = self.table.selected_entry()
        if entry != self.details.entry:  # a new scan's equal entry keeps edited settings
            saved = self._bridge.settings_for(entry.path) if entry is not None else None
            self.details.show_entry(entry, saved)
        self.show_running()

    def _on_start_failed(self, path: Path, error: Exception) -> None:
        self.select(path)
        self.details.show_failure(error)

    def _run(self, path: Path, settings: RunSettings | None, anyway: bool) -> None:
        self._bridge.run(path, settings, allow_too_big=anyway)
