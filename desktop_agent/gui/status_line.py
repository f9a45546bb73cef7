"""The line under a conversation: model, speed, first-token time, context use."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QWidget

from .turn_figures import TurnFigures


def _tokens(value: int) -> str:
    return f"{value:,}"


class StatusLine(QWidget):
    """Shows a conversation's :class:`TurnFigures`; it has no signals."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("statusLine")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 2, 8, 4)
        layout.setSpacing(16)
        self.model_label = QLabel()
        self.speed_label = QLabel()
        self.first_token_label = QLabel()
        self.context_label = QLabel()
        self.context_bar = QProgressBar()
        self.context_bar.setMaximumWidth(120)
        self.context_bar.setMaximumHeight(10)
        self.context_bar.setTextVisible(False)
        for label in (self.model_label, self.speed_label, self.first_token_label):
            layout.addWidget(label)
        layout.addStretch(1)
        layout.addWidget(self.context_label)
        layout.addWidget(self.context_bar)
        for widget in (self.model_label, self.speed_label, self.first_token_label,
                       self.context_label):
            widget.setEnabled(False)  # muted, secondary text
        self.show_figures(TurnFigures())

    def show_figures(self, figures: TurnFigures) -> None:
        """Display the figures ('—' for what is not known yet)."""
        self.model_label.setText(f"Model: {figures.model}" if figures.model else "No model")
        speed = figures.tokens_per_second
        self.speed_label.setText(f"{speed:.1f} tok/s" if speed else "— tok/s")
        first = figures.time_to_first_token
        self.first_token_label.setText(
            f"first token {first:.2f} s" if first is not None else "first token —")
        used, length = figures.context_used, figures.context_length
        if used is not None and length:
            self.context_label.setText(f"context {_tokens(used)} / {_tokens(length)}")
            self.context_bar.setRange(0, length)
            self.context_bar.setValue(min(used, length))
            self.context_bar.show()
        else:
            shown = _tokens(used) if used is not None else "—"
            total = f" / {_tokens(length)}" if length else ""
            self.context_label.setText(f"context {shown}{total}")
            self.context_bar.hide()
