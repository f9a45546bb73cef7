"""‹ 1/2 ›: step between the alternatives of an edited or regenerated message."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QWidget

from desktop_agent.gui.transcript.painted_panel import set_text_color
from desktop_agent.gui.transcript.theme import TranscriptTheme
from desktop_agent.gui.transcript.widget_style import scaled_font


class BranchSwitcher(QWidget):
    """Two arrows and "n/m"; hidden when a message has no alternative.

    Signals:
        step(int): -1 for the previous alternative, +1 for the next.
    """

    step = Signal(int)

    def __init__(self, theme: TranscriptTheme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("branchSwitcher")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.previous_button = self._arrow("‹", "Previous version", -1, theme)
        self.label = QLabel(self)
        self.label.setFont(scaled_font(self.label, scale=0.92))
        set_text_color(self.label, theme.muted_text)
        self.next_button = self._arrow("›", "Next version", 1, theme)
        layout.addWidget(self.previous_button)
        layout.addWidget(self.label)
        layout.addWidget(self.next_button)
        self.set_position(None)

    def _arrow(self, text: str, name: str, offset: int, theme: TranscriptTheme) -> QToolButton:
        button = QToolButton(self)
        button.setText(text)
        button.setAutoRaise(True)
        button.setToolTip(name)
        button.setAccessibleName(name)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        button.setFont(scaled_font(button, bold=True, scale=1.1))
        set_text_color(button, theme.muted_text)
        button.clicked.connect(lambda: self.step.emit(offset))
        return button

    def set_position(self, branch: tuple[int, int] | None) -> None:
        """Show ``(position, count)``, or hide when there is nothing to switch."""
        if branch is None or branch[1] < 2:
            self.hide()
            return
        position, count = branch
        self.label.setText(f"{position}/{count}")
        self.label.setAccessibleName(f"Version {position} of {count}")
        self.previous_button.setEnabled(position > 1)
        self.next_button.setEnabled(position < count)
        self.show()
