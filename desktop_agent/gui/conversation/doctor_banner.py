"""The model doctor's banner above a conversation: what it found about the model, and what helps."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton, QVBoxLayout

from desktop_agent.gui.icons import icon, set_icon

_TITLES = {"template_without_tools": "This model's template has no tools",
           "slow_prompt": "Slow first words"}


class DoctorBanner(QFrame):
    """Shows a :class:`~desktop_agent.session.DoctorNotice`: a title, the finding, the offers.

    Signals:
        settings_requested(): "Conversation settings…" was clicked (tools, tool-call mode).
    """

    settings_requested = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("doctorBanner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        row = QHBoxLayout(self)
        row.setContentsMargins(12, 8, 8, 8)
        badge = QLabel()
        badge.setPixmap(icon("info").pixmap(20, 20))
        row.addWidget(badge)
        column = QVBoxLayout()
        self.title = QLabel()
        self.title.setObjectName("doctorBannerTitle")
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.offers = QLabel()
        self.offers.setObjectName("doctorBannerOffers")
        self.offers.setWordWrap(True)
        for label in (self.title, self.message, self.offers):
            column.addWidget(label)
        row.addLayout(column, 1)
        self.settings_button = QPushButton("Conversation settings…")
        self.settings_button.clicked.connect(self.settings_requested)
        row.addWidget(self.settings_button)
        close = QToolButton()
        set_icon(close, "x")
        close.setToolTip("Dismiss")
        close.setAccessibleName("Dismiss")
        close.clicked.connect(self.hide)
        row.addWidget(close)
        self.kind: str | None = None
        self.hide()

    def show_notice(self, kind: str, text: str, offers: list[tuple[str, str]]) -> None:
        """Show (or replace) the finding; ``offers`` are ``(id, sentence)`` of what helps."""
        self.kind = kind
        self.title.setText(_TITLES.get(kind, "About this model"))
        self.message.setText(text)
        self.offers.setText("What helps:\n" + "\n".join(f"• {s}" for _, s in offers)
                            if offers else "")
        self.offers.setVisible(bool(offers))
        self.show()
