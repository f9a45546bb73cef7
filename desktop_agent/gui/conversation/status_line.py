"""The line under a conversation: model, speed, first-token time, context use.

Before the first token of a reply it says "Processing prompt…" with the time
waited (and the server's progress when it reports it): a long prompt on a CPU
takes seconds, and a silent window looks broken. Every figure has a tooltip
that says what it measures.
"""

from __future__ import annotations

from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QWidget

from desktop_agent.gui.conversation.turn_figures import TurnFigures

#: Below this width the status line shows only the essentials.
NARROW_WIDTH = 620


def _tokens(value: int) -> str:
    return f"{value:,}"


def waiting_text(elapsed: float, processed: int | None = None, total: int | None = None) -> str:
    """``Processing prompt… 3 s`` (with ``· 45%`` when the server says how far it is)."""
    text = f"Processing prompt… {elapsed:.0f} s"
    if processed is not None and total:
        text += f" · {min(100, round(100 * processed / total))}%"
    return text


class StatusLine(QWidget):
    """Shows a conversation's :class:`TurnFigures`; it has no signals."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("statusLine")
        self._has_length = False
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 2, 8, 4)
        layout.setSpacing(16)
        self.waiting_label = QLabel()
        self.waiting_label.setObjectName("promptProgress")
        self.waiting_label.setToolTip("The server reads the whole conversation before it can "
                                      "answer; long conversations take a while on a CPU.")
        self.waiting_label.hide()
        self.model_label = QLabel()
        self.model_label.setToolTip("The model answering in this conversation (switch it at "
                                    "the top of the conversation)")
        self.speed_label = QLabel()
        self.speed_label.setToolTip("Speed of the last reply: tokens generated per second")
        self.first_token_label = QLabel()
        self.first_token_label.setToolTip("How long the last reply took to start: the server "
                                          "reads the prompt first")
        self.context_label = QLabel()
        self.context_bar = QProgressBar()
        self.context_bar.setMaximumWidth(120)
        self.context_bar.setMaximumHeight(6)
        self.context_bar.setTextVisible(False)
        self.context_bar.setAccessibleName("Context used")
        for label in (self.waiting_label, self.model_label, self.speed_label,
                      self.first_token_label):
            layout.addWidget(label)
        # The line never makes the window wider: labels may shrink, and the less
        # important figures step aside on a narrow window (see resizeEvent).
        for widget in (self.model_label, self.speed_label, self.first_token_label,
                       self.context_label, self.context_bar, self.waiting_label):
            widget.setMinimumWidth(24)
        layout.addStretch(1)
        layout.addWidget(self.context_label)
        layout.addWidget(self.context_bar)
        for widget in (self.model_label, self.speed_label, self.first_token_label,
                       self.context_label):
            widget.setEnabled(False)  # muted, secondary text
        self.show_figures(TurnFigures())

    def resizeEvent(self, event: QResizeEvent) -> None:
        """On a narrow line keep the model and context; hide first-token time and the bar."""
        super().resizeEvent(event)
        narrow = event.size().width() < NARROW_WIDTH
        self.first_token_label.setVisible(not narrow and not self.waiting_label.isVisibleTo(self))
        self.context_bar.setVisible(not narrow and self._has_length)

    def show_waiting(self, text: str | None) -> None:
        """Show the "processing prompt" state (None: the reply has started or ended)."""
        self.waiting_label.setVisible(text is not None)
        if text is not None:
            self.waiting_label.setText(text)
        narrow = self.width() < NARROW_WIDTH
        self.speed_label.setVisible(text is None)
        self.first_token_label.setVisible(text is None and not narrow)

    def show_figures(self, figures: TurnFigures) -> None:
        """Display the figures ('—' for what is not known yet)."""
        self.model_label.setText(f"Model: {figures.model}" if figures.model else "No model")
        speed = figures.tokens_per_second
        self.speed_label.setText(f"{speed:.1f} tok/s" if speed else "— tok/s")
        self.speed_label.setToolTip(
            "Speed of the reply streaming now: tokens generated per second" if figures.live
            else "Speed of the last reply: tokens generated per second")
        first = figures.time_to_first_token
        self.first_token_label.setText(
            f"first token {first:.2f} s" if first is not None else "first token —")
        used, length = figures.context_used, figures.context_length
        tip = ("Tokens this conversation takes in the model's context: every message plus "
               "the tool definitions sent with each request (the server's count after a "
               "reply, an estimate before).")
        if used is not None and length:
            share = round(100 * used / length)
            self.context_label.setText(f"context {_tokens(used)} / {_tokens(length)}")
            self.context_bar.setRange(0, length)
            self.context_bar.setValue(min(used, length))
            self._has_length = True
            self.context_bar.setVisible(self.width() >= NARROW_WIDTH)
            tip += f" {share}% of the model's {_tokens(length)}-token window is used."
            if figures.context_source:
                tip += f" The window: {figures.context_source}."
        else:
            shown = _tokens(used) if used is not None else "—"
            total = f" / {_tokens(length)}" if length else ""
            self.context_label.setText(f"context {shown}{total}")
            self._has_length = False
            self.context_bar.hide()
        self.context_label.setToolTip(tip)
        self.context_bar.setToolTip(tip)
