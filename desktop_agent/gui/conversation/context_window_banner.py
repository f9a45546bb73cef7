"""The banner that says, before sending, when a conversation outgrows its server's window.

The session checks each turn against the window the server applies (see
``session.turn.context_check``); when the conversation needs more, this banner
above the transcript says how much, with which window and where that figure
came from, and offers the fix: on Ollama one click makes a copy of the model
with a larger ``num_ctx`` and switches the conversation to it; elsewhere the
sentence names the setting to change and "Copy setting" puts it on the
clipboard. It stays until a check finds the conversation fits, or the person
hides it (hidden, it comes back only for a new window figure).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from desktop_agent.gui.icons import icon, set_icon


class ContextWindowBanner(QFrame):
    """The warning and its fix, above the transcript.

    Signals:
        make_model(int): "Make <model>" was clicked: a larger Ollama model, this many tokens.
    """

    make_model = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("contextWindowBanner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 8)
        self.badge = QLabel()
        self.badge.setObjectName("contextWindowBadge")
        layout.addWidget(self.badge)
        self.message = QLabel()
        self.message.setObjectName("contextWindowWarning")
        self.message.setWordWrap(True)
        layout.addWidget(self.message, 1)
        self.fix_button = QPushButton()
        self.fix_button.setObjectName("contextWindowFix")
        self.fix_button.clicked.connect(self._fix_clicked)
        layout.addWidget(self.fix_button)
        self.hide_button = QPushButton("Hide")
        set_icon(self.hide_button, "x")
        self.hide_button.clicked.connect(self._hide_clicked)
        layout.addWidget(self.hide_button)
        self._fix: Any = None
        self._hidden_for: tuple[str, int | None] | None = None
        self.hide()

    def show_check(self, check: Any) -> None:
        """Show a ``ContextWindowChecked`` event's warning and fix (hide it when it fits)."""
        if check.warning is None:
            self._fix = None
            self.hide()
            return
        if self._hidden_for == (check.model, check.window.applied):
            return  # the person hid this very warning
        self._fix = check.fix
        self._show_badge("triangle-alert")
        self.message.setText(check.warning)
        self.message.setToolTip(f"The window's figure: {check.window.source}.")
        fix = check.fix
        if fix is not None and fix.ollama_model:
            self.fix_button.setText(f"Make {fix.ollama_model}")
            self.fix_button.setToolTip(
                f"Ollama makes a copy of {check.model} that runs with {fix.tokens:,} tokens "
                "(from the same files), and this conversation switches to it.")
        else:
            self.fix_button.setText("Copy setting")
            self.fix_button.setToolTip("Copy the setting to change to the clipboard.")
        self.fix_button.setEnabled(fix is not None)
        self.fix_button.setVisible(fix is not None)
        self._current = (check.model, check.window.applied)
        self.show()

    @property
    def fix(self) -> Any:
        """The fix shown (a ``WindowFix``), None when none is."""
        return self._fix

    def show_working(self, model: str) -> None:
        """The fix runs: say so, and let nothing be clicked twice."""
        self.fix_button.setEnabled(False)
        self.fix_button.setText(f"Making {model}…")

    def show_done(self, model: str | None, problem: str | None = None) -> None:
        """The fix ended: the conversation uses ``model`` now, or ``problem`` says why not."""
        if problem is not None:
            self._show_badge("triangle-alert")
            self.message.setText(problem)
            self.fix_button.setEnabled(True)
            fix = self._fix
            self.fix_button.setText(f"Make {fix.ollama_model}" if fix is not None
                                    and fix.ollama_model else "Copy setting")
            return
        self._show_badge("check")
        self.message.setText(f"This conversation now uses {model}; the next message is "
                             "checked against its window.")
        self.fix_button.hide()

    def _show_badge(self, name: str) -> None:
        """A warning's triangle, or a fix's check mark, drawn in the theme in use now.

        Drawn each time the banner changes (not once when it is built), so a
        theme switched since shows the icon in its own colours.
        """
        self.badge.setProperty("badge", name)
        self.badge.setPixmap(icon(name).pixmap(20, 20))

    def _fix_clicked(self) -> None:
        fix = self._fix
        if fix is None:
            return
        if fix.ollama_model:
            self.make_model.emit(fix.tokens)
            return
        clipboard = QGuiApplication.clipboard()
        if clipboard is not None:
            clipboard.setText(fix.text)
        self.fix_button.setText("Copied")

    def _hide_clicked(self) -> None:
        self._hidden_for = getattr(self, "_current", None)
        self.hide()
