"""The "N earlier messages summarised" line that folds open to the summary.

When a long run nears the model's context window the core compacts the
request (see ``desktop_agent.core.context.compaction``): the model then sees a summary
instead of the oldest messages, while the transcript and the store keep them
all. This marker tells the person where that happened and what the model was
told instead, so an answer that forgot a detail is not a mystery.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget

from desktop_agent.gui.transcript.collapsible_section import CollapsibleSection
from desktop_agent.gui.transcript.items import CompactionItem
from desktop_agent.gui.transcript.painted_panel import set_text_color
from desktop_agent.gui.transcript.theme import TranscriptTheme

DROPPED_TEXT = ("They were left out of what the model sees, without a summary (summarising "
                "was off or failed). The conversation here keeps them all.")


class CompactionMarker(CollapsibleSection):
    """A folded marker; opening it shows the summary the model now gets."""

    def __init__(self, item: CompactionItem, theme: TranscriptTheme,
                 parent: QWidget | None = None) -> None:
        body = QLabel(item.summary or DROPPED_TEXT)
        body.setWordWrap(True)
        body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        set_text_color(body, theme.muted_text)
        super().__init__(item.title, body, theme, parent)
        self.item = item
        self.summary_label = body

    def plain_text(self) -> str:
        """The marker line, and the summary when it is open."""
        if self.expanded:
            return f"{self.item.title}\n{self.summary_label.text()}"
        return self.item.title
