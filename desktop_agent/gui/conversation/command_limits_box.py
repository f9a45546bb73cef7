"""The *Command limits* part of Conversation settings.

What one sandboxed command may use (memory, processes, file size, private
``/tmp``), one spin box each, starting at the conversation's value or the
default. A value left at its default is not stored, so a later change of the
defaults reaches the conversation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PySide6.QtWidgets import QFormLayout, QGroupBox, QLabel, QSpinBox, QWidget

from desktop_agent.session import limit_defaults

#: Setting key -> (label, unit, lowest, highest): the bounds of ConversationSettings.
_ROWS = {
    "command_memory_mb": ("Memory per process", " MiB", 16, 1 << 20),
    "command_processes": ("Processes", "", 4, 100_000),
    "command_file_mb": ("Largest file", " MiB", 1, 1 << 20),
    "command_tmp_mb": ("Private /tmp", " MiB", 1, 1 << 20),
}


class CommandLimitsBox(QGroupBox):
    """Spin boxes for a conversation's command limits."""

    def __init__(self, settings: Mapping[str, Any], parent: QWidget | None = None) -> None:
        super().__init__("Command limits", parent)
        self.setObjectName("commandLimits")
        self._defaults = limit_defaults()
        form = QFormLayout(self)
        note = QLabel("What one command (with everything it starts) may use inside the "
                      "sandbox. Reaching a limit ends it with a sentence on its card.")
        note.setWordWrap(True)
        form.addRow(note)
        self.boxes: dict[str, QSpinBox] = {}
        for key, (label, unit, lowest, highest) in _ROWS.items():
            box = QSpinBox()
            box.setObjectName(key)
            box.setRange(lowest, highest)
            box.setSuffix(unit)
            value = settings.get(key)
            box.setValue(value if isinstance(value, int) and not isinstance(value, bool)
                         else self._defaults[key])
            box.setToolTip(f"Default {self._defaults[key]}{unit}.")
            self.boxes[key] = box
            form.addRow(label, box)

    def changes(self) -> dict[str, int | None]:
        """Each limit as chosen; None (not stored) where it equals the default."""
        return {key: None if box.value() == self._defaults[key] else box.value()
                for key, box in self.boxes.items()}
