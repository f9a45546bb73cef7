"""The banner above a conversation when its model cannot be used: none yet, or it stopped.

Three situations, each with the buttons that help: the search for servers is
running; nothing runs (run a model on this computer, search again, enter a URL);
servers run but this conversation has none chosen; and the model the app ran
itself stopped unasked (how, with the signal's name and advice, and *Restart*).
"""

from __future__ import annotations

from PySide6.QtCore import Signal, SignalInstance
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.icons import icon, set_icon

NOTHING_RUNNING = (
    "No model server is running. Desktop Agent can run a model itself: one you already "
    "have, or one picked for this computer (its size is shown before it downloads). Or "
    "start LM Studio, Ollama, llama.cpp or vLLM and press Retry, or enter the URL of an "
    "OpenAI-compatible server.")


class ServerNotice(QFrame):
    """A banner above the transcript when no model can be used.

    Signals:
        choose_server(): "Choose server…" was clicked.
        retry(): "Retry" (search for servers again) was clicked.
        enter_url(): "Enter URL…" was clicked.
        run_local(): "Run a model on this computer" was clicked.
        restart_engine(): "Restart" (the model this computer ran, which stopped) was clicked.
    """

    choose_server = Signal()
    retry = Signal()
    enter_url = Signal()
    run_local = Signal()
    restart_engine = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("serverNotice")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.state = "hidden"
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 8)
        self.badge = QLabel()
        layout.addWidget(self.badge)
        self.message = QLabel()
        self.message.setWordWrap(True)
        layout.addWidget(self.message, 1)
        self.run_local_button = _button("Run a model on this computer", self.run_local,
                                        "download", primary=True)
        self.restart_button = _button("Restart", self.restart_engine, "refresh-cw",
                                      primary=True)
        self.retry_button = _button("Retry", self.retry, "refresh-cw")
        self.url_button = _button("Enter URL…", self.enter_url)
        self.choose_button = _button("Choose server…", self.choose_server)
        buttons = QVBoxLayout()
        buttons.setSpacing(6)
        buttons.addWidget(self.run_local_button)
        others = QHBoxLayout()
        others.setSpacing(6)
        others.addStretch(1)
        for button in (self.restart_button, self.retry_button, self.url_button,
                       self.choose_button):
            others.addWidget(button)
        buttons.addLayout(others)
        layout.addLayout(buttons)

    def show_state(self, state: str) -> None:
        """``searching``, ``nothing_running``, ``choose`` or ``hidden``."""
        texts = {
            "searching": "Looking for model servers on this computer…",
            "nothing_running": NOTHING_RUNNING,
            "choose": "Choose a server and a model for this conversation.",
        }
        if state not in texts:
            self.state = "hidden"
            self.hide()
            return
        self._show(state, texts[state], "info")

    def show_engine_stopped(self, sentence: str) -> None:
        """The model this computer ran for the conversation ended unasked: say how, offer Restart.

        Args:
            sentence: How it ended (the signal by name, with what to do about it).
        """
        self._show("engine_stopped", f"The model on this computer stopped. {sentence} "
                   "The conversation is kept; Restart runs the model again.", "triangle-alert")

    def _show(self, state: str, text: str, badge: str) -> None:
        self.state = state
        self.message.setText(text)
        self.badge.setPixmap(icon(badge).pixmap(20, 20))
        self.run_local_button.setVisible(state == "nothing_running")
        self.retry_button.setVisible(state == "nothing_running")
        self.url_button.setVisible(state == "nothing_running")
        self.choose_button.setVisible(state == "choose")
        self.restart_button.setVisible(state == "engine_stopped")
        self.show()


def _button(text: str, signal: SignalInstance, icon_name: str | None = None, *,
            primary: bool = False) -> QPushButton:
    button = QPushButton(text)
    if primary:
        button.setProperty("role", "primary")
    if icon_name is not None:
        set_icon(button, icon_name, "accent_text" if primary else None)
    button.clicked.connect(signal)
    return button
