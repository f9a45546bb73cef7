"""A titled section whose body folds away: reasoning and tool cards use it."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget


class CollapsibleSection(QFrame):
    """A header button that shows or hides a body widget.

    Signals:
        toggled(bool): the body was shown (True) or hidden (False).
    """

    toggled = Signal(bool)

    def __init__(self, title: str, body: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.header_button = QToolButton(self)
        self.header_button.setObjectName("sectionHeader")
        self.header_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.header_button.setCheckable(True)
        self.header_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.header_button.setArrowType(Qt.ArrowType.RightArrow)
        self.header_button.setText(title)
        self.header_button.toggled.connect(self._apply_expanded)
        self.detail_label = QLabel(self)
        self.detail_label.setObjectName("sectionDetail")
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
        return self.header_button.isChecked()

    def set_expanded(self, expanded: bool) -> None:
        """Show or hide the body."""
        self.header_button.setChecked(expanded)

    def set_title(self, title: str) -> None:
        """Change the header text."""
        self.header_button.setText(title)

    def _apply_expanded(self, expanded: bool) -> None:
        self.header_button.setArrowType(
            Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow
        )
        self.body.setVisible(expanded)
        self.toggled.emit(expanded)
