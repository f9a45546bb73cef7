"""A titled section whose body folds away: reasoning and tool cards use it."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QToolButton, QVBoxLayout, QWidget

from desktop_agent.gui.transcript.painted_panel import PaintedPanel, set_text_color
from desktop_agent.gui.transcript.theme import TranscriptTheme
from desktop_agent.gui.transcript.widget_style import muted_label, scaled_font


class CollapsibleSection(PaintedPanel):
    """A header button that shows or hides a body widget.

    Signals:
        toggled(bool): the body was shown (True) or hidden (False).
    """

    toggled = Signal(bool)

    def __init__(
        self, title: str, body: QWidget, theme: TranscriptTheme, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.header_button = QToolButton(self)
        self.header_button.setAutoRaise(True)
        self.header_button.setFont(scaled_font(self.header_button, bold=True))
        set_text_color(self.header_button, theme.text)
        self.header_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.header_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.header_button.setArrowType(Qt.ArrowType.RightArrow)
        self.header_button.setText(title)
        self.header_button.clicked.connect(self._toggle)
        self._expanded = False
        self.detail_label = muted_label("", theme, self)
        header = QHBoxLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.setSpacing(6)
        header.addWidget(self.header_button)
        header.addWidget(self.detail_label, 1)
        self.body = body
        body.setParent(self)
        body.setVisible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.setSpacing(4)
        layout.addLayout(header)
        layout.addWidget(body)

    @property
    def expanded(self) -> bool:
        """Whether the body is shown."""
        return self._expanded

    def set_expanded(self, expanded: bool) -> None:
        """Show or hide the body."""
        if expanded != self._expanded:
            self._apply_expanded(expanded)

    def set_title(self, title: str) -> None:
        """Change the header text."""
        self.header_button.setText(title)

    def _toggle(self) -> None:
        self._apply_expanded(not self._expanded)

    def _apply_expanded(self, expanded: bool) -> None:
        self._expanded = expanded
        self.header_button.setArrowType(
            Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow
        )
        self.body.setVisible(expanded)
        self.toggled.emit(expanded)
