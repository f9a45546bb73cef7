"""Preferences, the keyboard-shortcut sheet and About: the window's small dialogs.

They show and collect values only; the window applies them.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.theme import style_chrome
from desktop_agent.gui.window.preferences import Preferences, default_work_root

THEME_LABELS = {"system": "Follow the system", "light": "Light", "dark": "Dark"}


class PreferencesDialog(QDialog):
    """Theme, font size, default working folder, approval timeout.

    Signals:
        applied(object): The new :class:`Preferences` (OK was pressed).
    """

    applied = Signal(object)

    def __init__(self, prefs: Preferences, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("preferencesDialog")
        self.setWindowTitle("Preferences")
        self._prefs = prefs
        form = QFormLayout()
        form.setSpacing(10)
        self.theme = QComboBox()
        self.theme.setAccessibleName("Theme")
        for value, label in THEME_LABELS.items():
            self.theme.addItem(label, value)
        self.theme.setCurrentIndex(max(0, self.theme.findData(prefs.theme)))
        form.addRow("&Theme:", self.theme)
        self.font_size = QDoubleSpinBox()
        self.font_size.setAccessibleName("Text size")
        self.font_size.setRange(8.0, 20.0)
        self.font_size.setSingleStep(0.5)
        self.font_size.setSuffix(" pt")
        self.font_size.setValue(prefs.font_pt)
        form.addRow("Text &size:", self.font_size)
        self.folder = QLineEdit(prefs.default_folder)
        self.folder.setAccessibleName("Default working folder")
        self.folder.setPlaceholderText(str(default_work_root()))
        browse = QPushButton("Choose…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.folder, 1)
        row.addWidget(browse)
        form.addRow("New conversations work in:", row)
        hint = QLabel("Each new conversation gets its own folder in here, named by the date; "
                      "change it per conversation in its header.")
        hint.setWordWrap(True)
        hint.setEnabled(False)
        form.addRow("", hint)
        self.timeout = QSpinBox()
        self.timeout.setAccessibleName("Approval timeout")
        self.timeout.setRange(0, 24 * 3600)
        self.timeout.setSuffix(" s")
        self.timeout.setSpecialValueText("never")
        self.timeout.setValue(int(prefs.approval_timeout))
        form.addRow("Deny unanswered tool calls &after:", self.timeout)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(20, 20, 20, 16)
        layout.addLayout(form)
        style_chrome(self)
        layout.addWidget(buttons)

    def values(self) -> Preferences:
        """The preferences as the form shows them."""
        return replace(self._prefs, theme=str(self.theme.currentData()),
                       font_pt=float(self.font_size.value()),
                       default_folder=self.folder.text().strip(),
                       approval_timeout=float(self.timeout.value()))

    def accept(self) -> None:
        """Report the values, then close."""
        self.applied.emit(self.values())
        super().accept()

    def _browse(self) -> None:
        dialog = QFileDialog(self, "Default working folder",
                             self.folder.text() or str(default_work_root().parent))
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.fileSelected.connect(self.folder.setText)
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()


def shortcuts_dialog(rows: list[tuple[str, str]], parent: QWidget | None = None) -> QDialog:
    """A sheet listing (action, shortcut) pairs."""
    dialog = QDialog(parent)
    dialog.setObjectName("shortcutsDialog")
    dialog.setWindowTitle("Keyboard shortcuts")
    table = QTableWidget(len(rows), 2)
    table.setAccessibleName("Keyboard shortcuts")
    table.setHorizontalHeaderLabels(["Action", "Keys"])
    table.verticalHeader().hide()
    table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    for row, (name, keys) in enumerate(rows):
        table.setItem(row, 0, QTableWidgetItem(name))
        table.setItem(row, 1, QTableWidgetItem(keys))
    table.resizeColumnsToContents()
    table.horizontalHeader().setStretchLastSection(True)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(dialog.reject)
    layout = QVBoxLayout(dialog)
    layout.addWidget(table)
    layout.addWidget(buttons)
    dialog.resize(460, 480)
    style_chrome(dialog)
    return dialog


def about_dialog(version: str, parent: QWidget | None = None) -> QDialog:
    """Name, version, what it is, and the icon set's licence."""
    dialog = QDialog(parent)
    dialog.setObjectName("aboutDialog")
    dialog.setWindowTitle("About Desktop Agent")
    text = QLabel(
        f"<h2>Desktop Agent {version}</h2>"
        "<p>A desktop chat for local OpenAI-compatible model servers (LM Studio, Ollama, "
        "llama.cpp, vLLM) whose tools ask before they act.</p>"
        "<p>Icons: <a href='https://lucide.dev'>Lucide</a>, ISC licence.</p>")
    text.setTextFormat(Qt.TextFormat.RichText)
    text.setOpenExternalLinks(True)
    text.setWordWrap(True)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(dialog.reject)
    layout = QVBoxLayout(dialog)
    layout.setContentsMargins(24, 20, 24, 16)
    layout.addWidget(text)
    layout.addWidget(buttons)
    dialog.resize(420, 220)
    style_chrome(dialog)
    return dialog
