"""The model's reasoning (ThinkingBlock text), in a section that folds away.

Why: reasoning can be long and is secondary to the answer. It is shown open
while the model thinks (so the person sees progress) and folds up once the
answer starts; one click opens it again.
"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from desktop_agent.gui.transcript.collapsible_section import CollapsibleSection
from desktop_agent.gui.transcript.painted_panel import set_text_color
from desktop_agent.gui.transcript.text_views import FittedTextBrowser
from desktop_agent.gui.transcript.theme import TranscriptTheme


class ThinkingSection(CollapsibleSection):
    """Collapsible reasoning text; appends are O(size of the piece)."""

    def __init__(self, theme: TranscriptTheme, parent: QWidget | None = None) -> None:
        self.text_view = FittedTextBrowser()
        set_text_color(self.text_view, theme.muted_text)
        super().__init__("Thinking…", self.text_view, theme, parent)
        self.set_left_bar(theme.border)
        self._chars = 0
        self.set_expanded(True)

    def append(self, text: str) -> None:
        """Add streamed reasoning text."""
        self.text_view.append_plain(text)
        self._chars += len(text)

    def text(self) -> str:
        """The reasoning shown so far."""
        return self.text_view.toPlainText()

    def finish(self) -> None:
        """Reasoning is over: fold it and say how long it was."""
        words = len(self.text().split())
        self.set_title("Reasoning")
        self.detail_label.setText(f"{words} words")
        self.set_expanded(False)
