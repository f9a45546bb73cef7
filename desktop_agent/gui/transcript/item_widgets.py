"""Which widget shows which transcript item, in the current colours.

Why a class of its own: the rendered window makes and drops widgets a page at
a time, and a palette change rebuilds them all; both need the same factory,
holding the theme and the Markdown renderer made for it, and wiring each
widget's clicks to the view's signals.

The widget modules (answers with their code blocks, tool cards and Markdown,
message bubbles, compaction markers) are imported when the first widget of
their kind is made: a new conversation shows none, and the window paints sooner
without them (about 40 ms of CPU from source, most of it Qt classes and enums
created at import). :func:`answer_widget` and :func:`user_widget` tell the
kinds apart without importing them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import SignalInstance
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QWidget

from desktop_agent.gui.transcript.frame_scheduler import FrameScheduler
from desktop_agent.gui.transcript.items import CompactionItem, ErrorItem, TranscriptItem, UserItem
from desktop_agent.gui.transcript.theme import TranscriptTheme

if TYPE_CHECKING:
    from desktop_agent.gui.transcript.assistant_message import AssistantMessageWidget
    from desktop_agent.gui.transcript.markdown_html import MarkdownRenderer
    from desktop_agent.gui.transcript.message_bubbles import UserMessageWidget

_ANSWERS = "desktop_agent.gui.transcript.assistant_message"
_BUBBLES = "desktop_agent.gui.transcript.message_bubbles"


def answer_widget(widget: object) -> AssistantMessageWidget | None:
    """``widget`` if it shows an answer, else None (no answer shown yet: no import)."""
    module = sys.modules.get(_ANSWERS)
    if module is None:
        return None
    return widget if isinstance(widget, module.AssistantMessageWidget) else None


def user_widget(widget: object) -> UserMessageWidget | None:
    """``widget`` if it shows a person's message, else None (none shown yet: no import)."""
    module = sys.modules.get(_BUBBLES)
    if module is None:
        return None
    return widget if isinstance(widget, module.UserMessageWidget) else None


class ItemSignals(Protocol):
    """The signals an item widget's clicks are forwarded to (the transcript view's).

    A protocol rather than the view itself, so the view can hold this factory
    without the two modules importing each other.
    """

    @property
    def edit_requested(self) -> SignalInstance:
        """A user message is to be edited."""

    @property
    def copy_requested(self) -> SignalInstance:
        """A message's text is to be copied."""

    @property
    def branch_requested(self) -> SignalInstance:
        """Another version of a message is to be shown."""

    @property
    def restore_requested(self) -> SignalInstance:
        """Files are to be put back as they were before a message."""

    @property
    def retry_requested(self) -> SignalInstance:
        """A failed turn is to be tried again."""

    @property
    def regenerate_requested(self) -> SignalInstance:
        """An answer is to be generated again."""

    @property
    def approval_answered(self) -> SignalInstance:
        """A tool card's Allow or Deny was clicked."""

    @property
    def approval_arguments_edited(self) -> SignalInstance:
        """A tool card's arguments were edited before an answer."""

    @property
    def tool_stop_requested(self) -> SignalInstance:
        """Stop was clicked on a running command's card."""

    @property
    def preview_decided(self) -> SignalInstance:
        """Apply, Apply anyway or Discard was clicked on a command preview."""


class ItemWidgets:
    """Makes item widgets inside ``column``, their clicks forwarded to ``view``'s signals.

    Attributes:
        theme: the colours in use (derived from the palette).
        restore_offered: Whether user messages offer "Restore files…" (the
            conversation's tools have changed files).
    """

    def __init__(self, view: ItemSignals, column: QWidget, scheduler: FrameScheduler,
                 palette: QPalette) -> None:
        self._view = view
        self._column = column
        self._scheduler = scheduler
        self.theme = TranscriptTheme.from_palette(palette)
        self._made_renderer: MarkdownRenderer | None = None  # made with the first answer
        self.restore_offered = False

    @property
    def _renderer(self) -> MarkdownRenderer:
        """The Markdown renderer for the current theme (made when first needed)."""
        if self._made_renderer is None:
            from desktop_agent.gui.transcript.markdown_html import renderer_for

            self._made_renderer = renderer_for(self.theme)
        return self._made_renderer

    def retheme(self, palette: QPalette) -> bool:
        """Take the colours of ``palette``; True when they changed (rebuild the widgets)."""
        theme = TranscriptTheme.from_palette(palette)
        if theme == self.theme:
            return False
        self.theme = theme
        self._made_renderer = None
        return True

    def make(self, item: TranscriptItem, regenerate: bool) -> QWidget:
        """The widget for ``item``; ``regenerate``: an answer offers Regenerate."""
        view = self._view
        if isinstance(item, UserItem):
            from desktop_agent.gui.transcript.message_bubbles import UserMessageWidget

            user = UserMessageWidget(item, self.theme, self._column)
            user.edit_requested.connect(view.edit_requested)
            user.copy_requested.connect(view.copy_requested)
            user.branch_requested.connect(view.branch_requested)
            user.restore_requested.connect(view.restore_requested)
            user.offer_restore(self.restore_offered)
            return user
        if isinstance(item, CompactionItem):
            from desktop_agent.gui.transcript.compaction_marker import CompactionMarker

            return CompactionMarker(item, self.theme, self._column)
        if isinstance(item, ErrorItem):
            from desktop_agent.gui.transcript.message_bubbles import ErrorNoticeWidget

            error = ErrorNoticeWidget(item, self.theme, self._column)
            error.retry_requested.connect(view.retry_requested)
            return error
        from desktop_agent.gui.transcript.assistant_message import AssistantMessageWidget

        answer = AssistantMessageWidget(
            item, self.theme, self._renderer, self._scheduler, self._column
        )
        answer.copy_requested.connect(view.copy_requested)
        answer.regenerate_requested.connect(view.regenerate_requested)
        answer.approval_answered.connect(view.approval_answered)
        answer.approval_arguments_edited.connect(view.approval_arguments_edited)
        answer.tool_stop_requested.connect(view.tool_stop_requested)
        answer.preview_decided.connect(view.preview_decided)
        answer.branch_requested.connect(view.branch_requested)
        answer.set_regenerate_visible(regenerate)
        return answer
