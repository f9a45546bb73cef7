"""The *Commands* part of Conversation settings: run on the folder, or preview changes first.

*Preview changes first* runs each of the model's commands on a copy of the
working folder (an overlay) and shows what it would change, to Apply or
Discard. Whether that works here is probed off the dialog's path (a trial
preview, once per app); until the answer comes the box says so, and where
previews cannot work it says why and offers only *Run on the folder*.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import QComboBox, QGroupBox, QLabel, QVBoxLayout, QWidget

from desktop_agent.session import PreviewStatus

_CHOICES = (("Run on the folder", "folder"), ("Preview changes first", "preview"))


class CommandPreviewBox(QGroupBox):
    """A choice between running commands on the folder and previewing them first."""

    def __init__(self, settings: Mapping[str, Any], parent: QWidget | None = None) -> None:
        super().__init__("Commands", parent)
        self.setObjectName("commandPreview")
        layout = QVBoxLayout(self)
        self.choice = QComboBox(self)
        self.choice.setObjectName("commandPreviewChoice")
        for label, value in _CHOICES:
            self.choice.addItem(label, value)
        chosen = settings.get("command_preview")
        self.choice.setCurrentIndex(1 if chosen == "preview" else 0)
        self.choice.setToolTip("Preview changes first: each command runs on a copy of the "
                               "working folder; you see what it would change, then Apply or "
                               "Discard. The approval card's Preview does it for one command.")
        layout.addWidget(self.choice)
        self.detail = QLabel("Checking whether previews work here\u2026", self)
        self.detail.setObjectName("commandPreviewDetail")
        self.detail.setWordWrap(True)
        layout.addWidget(self.detail)

    def show_status(self, status: PreviewStatus) -> None:
        """Say what previews do here, or why they cannot work (then only one choice)."""
        self.detail.setText(status.detail)
        model = self.choice.model()
        if isinstance(model, QStandardItemModel):
            item = model.item(1)
            if item is not None:
                item.setEnabled(status.available or status.chosen)

    def changes(self) -> dict[str, str | None]:
        """The setting as chosen (None, not stored, for the default: run on the folder)."""
        value = self.choice.currentData()
        return {"command_preview": "preview" if value == "preview" else None}
