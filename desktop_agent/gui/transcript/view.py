"""TranscriptView: one conversation's messages, streaming, in a scroll area.

Design (why a windowed column of real widgets): a transcript needs real
interactive parts (copy buttons, folding sections, selectable text, links),
which a QListView delegate can only paint, not host. So messages are real
widgets in a QScrollArea, but only a window of them exists at any time: the
conversation is kept as plain data items (``items.py``), widgets are made for
the last ``FIRST_PAGE`` items when history loads, and more are made a page at a
time as the person scrolls towards either edge of the window, while widgets
beyond ``MAX_RENDERED`` on the far side are dropped. The items themselves may
be only the last page of the stored branch: above the oldest one, the view asks
its earlier-messages source (:meth:`set_earlier_source`) for the page before.
Opening 10,000 messages therefore builds about a dozen widgets, and the scroll
position is kept anchored to what the person is looking at while pages come and go. (The scroll bar
measures the rendered window, not the whole conversation; chat apps share
this trade-off.)

Streaming: pieces are appended to the open item at once (O(1)) and shown once
per frame by a :class:`FrameScheduler`; the item's widget reads only the new
pieces (see ``assistant_message.py``). While :attr:`follows_end` is true the
view keeps the newest text in sight; scrolling up stops that until the person
scrolls back to the end.

The view holds no business logic: it displays what it is told and reports
clicks through signals.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable
from typing import Any

from PySide6.QtCore import QEvent, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QFrame, QHBoxLayout, QScrollArea, QVBoxLayout, QWidget

from desktop_agent.gui.none_refcount_guard import guard_none_refcount
from desktop_agent.gui.transcript.assistant_message import AssistantMessageWidget
from desktop_agent.gui.transcript.compaction_marker import CompactionMarker
from desktop_agent.gui.transcript.frame_scheduler import FrameScheduler
from desktop_agent.gui.transcript.history import items_from_messages
from desktop_agent.gui.transcript.item_window import ItemWindow
from desktop_agent.gui.transcript.items import (
    AssistantItem,
    CompactionItem,
    ErrorItem,
    ToolCallPart,
    ToolErrorPart,
    TranscriptItem,
    UserItem,
)
from desktop_agent.gui.transcript.markdown_html import MarkdownRenderer
from desktop_agent.gui.transcript.message_bubbles import ErrorNoticeWidget, UserMessageWidget
from desktop_agent.gui.transcript.slim_scroll_bar import SlimScrollBar
from desktop_agent.gui.transcript.theme import TranscriptTheme

log = logging.getLogger("desktop_agent.gui.transcript")

#: Items rendered at once when history loads or the person scrolls to a window edge.
PAGE_SIZE = 30
#: Items rendered when history loads: about a screen's worth, so a conversation opens
#: fast; more are rendered as soon as the view has too little to scroll, or scrolls up.
FIRST_PAGE = 12
#: Most item widgets kept alive; beyond this, the far side of the window is dropped.
MAX_RENDERED = 90
#: Largest readable line length: the column is centred beyond this width.
COLUMN_MAX_WIDTH = 920
#: How close (pixels) to the end still counts as "at the end".
END_SLACK = 4
#: Tool results are matched against at most this many recent items.
TOOL_RESULT_SEARCH_DEPTH = 50


class TranscriptView(QScrollArea):
    """The streaming transcript of one conversation.

    Signals:
        retry_requested(): Retry was clicked on an error.
        edit_requested(str, str): Edit was clicked on a user message (item key, text).
        regenerate_requested(): Regenerate was clicked on the last answer.
        copy_requested(str): something was copied (it is already on the clipboard).
        follows_end_changed(bool): :attr:`follows_end` changed.
        approval_answered(str, str, str): tool use id, choice, reason, from a card.
        branch_requested(str, int): message key and -1/+1: show another version of it.
    """

    branch_requested = Signal(str, int)

    approval_answered = Signal(str, str, str)

    retry_requested = Signal()
    edit_requested = Signal(str, str)
    regenerate_requested = Signal()
    copy_requested = Signal(str)
    follows_end_changed = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        guard_none_refcount()
        super().__init__(parent)
        self.setObjectName("transcript")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._scroll_bar = SlimScrollBar(self)
        self.setVerticalScrollBar(self._scroll_bar)
        self._content = QWidget()
        self._content.setObjectName("transcriptContent")
        self._column = QWidget(self._content)
        self._column.setMaximumWidth(COLUMN_MAX_WIDTH)
        self._column_layout = QVBoxLayout(self._column)
        self._column_layout.setContentsMargins(20, 16, 20, 24)
        self._column_layout.setSpacing(18)
        self._column_layout.addStretch(1)
        outer = QHBoxLayout(self._content)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addStretch(0)
        outer.addWidget(self._column, 1)
        outer.addStretch(0)
        self.setWidget(self._content)

        self._keys = itertools.count(1)
        self._keys_in_use: set[str] = set()
        self._window = ItemWindow(self._column_layout, self._make_widget)
        self._open: AssistantItem | None = None
        self._dirty: set[str] = set()
        self._regenerate_key: str | None = None
        self._follows_end = True
        self._adjusting = False
        self._anchor: tuple[QWidget, int] | None = None
        self._paging = False
        self._branch_source: Any = None
        self._earlier_source: Callable[[str], list[Any]] | None = None
        self._first_message_id: str | None = None

        self._scheduler = FrameScheduler(self)
        self._scheduler.add_frame_hook(self._show_pending)
        self._theme = TranscriptTheme.from_palette(self.palette())
        self._renderer = MarkdownRenderer(self._theme)
        self._apply_content_style()

        bar = self.verticalScrollBar()
        bar.rangeChanged.connect(self._on_range_changed)
        bar.valueChanged.connect(self._on_value_changed)

    # -- the API the window uses ---------------------------------------------

    def clear(self) -> None:
        """Remove everything (e.g. before showing another conversation)."""
        self._window.clear()
        self._keys_in_use.clear()
        self._open = None
        self._dirty.clear()
        self._regenerate_key = None
        self._anchor = None
        self._set_follows_end(True)

    def add_user_message(self, text: str, message_id: str | None = None) -> str:
        """Show a sent message; returns its item key (``message_id`` if given)."""
        item = UserItem(self._key(message_id), text)
        self._append_item(item)
        return item.key

    def begin_assistant_message(self, message_id: str | None = None) -> str:
        """Start a streaming answer; returns its item key."""
        if self._open is not None:
            self.end_assistant_message()
        item = AssistantItem(self._key(message_id))
        self._open = item
        self._append_item(item)
        self._update_regenerate()
        return item.key

    def append_text(self, delta: str) -> None:
        """Add a piece of answer text (shown at the next frame)."""
        if delta:
            self._ensure_open().append("text", delta)
            self._mark_dirty(self._open)

    def append_thinking(self, delta: str) -> None:
        """Add a piece of reasoning text (shown at the next frame)."""
        if delta:
            self._ensure_open().append("thinking", delta)
            self._mark_dirty(self._open)

    def add_tool_call(
        self, tool_use_id: str, name: str, input: dict[str, Any], source: str | None = None
    ) -> None:
        """Show a tool call as a compact card."""
        item = self._ensure_open()
        item.parts.append(ToolCallPart(tool_use_id, name, input, source))
        self._mark_dirty(item)

    def set_tool_result(self, tool_use_id: str, content: str, is_error: bool = False) -> None:
        """Fill in the output of the card for ``tool_use_id``."""
        if not self._update_tool_call(tool_use_id, result=content, is_error=is_error):
            log.debug("No card for tool result %s; shown as a note", tool_use_id)
            self._ensure_open().parts.append(ToolErrorPart(content) if is_error else ToolErrorPart(
                f"Tool result: {content}"))
            self._mark_dirty(self._open)

    def set_tool_input(self, tool_use_id: str, arguments: dict[str, Any]) -> None:
        """Show the input a call ran with (edited before it ran) on its card."""
        self._update_tool_call(tool_use_id, arguments=arguments)

    def set_tool_status(self, tool_use_id: str, status: str) -> None:
        """Show where a call stands until its result arrives ("waiting for approval")."""
        self._update_tool_call(tool_use_id, status=status)

    def _update_tool_call(self, tool_use_id: str, **fields: Any) -> bool:
        """Change a card's fields and repaint it; False when there is no such card."""
        found = self._find_tool_call(tool_use_id)
        if found is None:
            return False
        item, part = found
        for name, value in fields.items():
            setattr(part, name, value)
        item.revision += 1
        self._mark_dirty(item)
        return True

    def set_tool_approval(self, tool_use_id: str, prompt: Any, outcome: str | None = None) -> None:
        """Ask on the call's card (an ApprovalPrompt) or stop asking (None, with the outcome)."""
        found = self._find_tool_call(tool_use_id)
        if found is None:
            return
        item, part = found
        part.approval = prompt
        if outcome is not None:
            part.outcome = outcome
            part.status = outcome
        item.revision += 1
        self._mark_dirty(item)

    def add_tool_error(self, text: str, tool_use_id: str | None = None) -> None:
        """Show a tool problem: on its card when known, else as a line in the answer."""
        found = self._find_tool_call(tool_use_id) if tool_use_id else None
        if found is not None:
            item, part = found
            part.result = text
            part.is_error = True
            item.revision += 1
            self._mark_dirty(item)
            return
        item = self._ensure_open()
        item.parts.append(ToolErrorPart(text))
        self._mark_dirty(item)

    def end_assistant_message(self, interrupted: bool = False) -> None:
        """Finish the open answer and render its last blocks now."""
        item = self._open
        if item is None:
            return
        item.open = False
        item.interrupted = interrupted
        item.revision += 1
        self._open = None
        self._dirty.discard(item.key)
        widget = self._window.widgets.get(item.key)
        if isinstance(widget, AssistantMessageWidget):
            widget.sync()
        self._update_regenerate()

    def add_error(self, text: str, retry: bool = True) -> str:
        """Show an error in words, with Retry if ``retry``; ends an open answer first."""
        if self._open is not None:
            self.end_assistant_message(interrupted=True)
        item = ErrorItem(self._key(None), text, retry)
        self._append_item(item)
        return item.key

    def add_compaction_marker(self, messages: int, summary: str | None) -> str:
        """Show where the model's view was compacted ("N earlier messages summarised")."""
        item = CompactionItem(self._key(None), messages, summary)
        self._append_item(item)
        return item.key

    def load_messages(self, messages: Iterable[Any]) -> None:
        """Show stored history (OpenAI message dicts, optionally with metadata).

        Only the last page gets widgets; see the module docstring.
        """
        self.clear()
        messages = list(messages)
        self._first_message_id = _message_id(messages[0]) if messages else None
        items = items_from_messages(messages, lambda: self._key(None))
        self._window.reset(items, max(0, len(items) - FIRST_PAGE))
        self._keys_in_use = {item.key for item in items}
        self._update_regenerate()
        self._set_follows_end(True)
        self.scroll_to_end()

    def set_earlier_source(self, fetch: Callable[[str], list[Any]] | None) -> None:
        """Where older messages come from: ``fetch(first_shown_message_id) -> messages``.

        Why: a long conversation is loaded a page at a time; when the person
        scrolls above the oldest loaded message the view asks for the page
        before it (root first, empty when there is none).
        """
        self._earlier_source = fetch

    def _load_earlier(self) -> bool:
        """Put the page before the oldest loaded message in front (True: there was one)."""
        if self._earlier_source is None or self._first_message_id is None:
            return False
        messages = list(self._earlier_source(self._first_message_id))
        if not messages:
            self._first_message_id = None  # the root is loaded
            return False
        self._first_message_id = _message_id(messages[0])
        items = items_from_messages(messages, lambda: self._key(None))
        self._window.prepend(items)
        self._keys_in_use |= {item.key for item in items}
        return True

    def _more_above(self) -> bool:
        return self._window.lo > 0 or (
            self._earlier_source is not None and self._first_message_id is not None)

    def set_branch_source(self, lookup: Any) -> None:
        """Where to ask which version a message is: ``lookup(key) -> (pos, count) | None``.

        Asked only for messages that get a widget (a page at a time), never for
        the whole conversation.
        """
        self._branch_source = lookup

    def refresh_branches(self) -> None:
        """Ask again for every message on screen (after a regenerate or an edit)."""
        for widget in list(self._window.widgets.values()):
            item = getattr(widget, "item", None)
            if isinstance(item, UserItem | AssistantItem):
                item.branch_known = False
                self._look_up_branch(item)
                if isinstance(widget, UserMessageWidget | AssistantMessageWidget):
                    widget.set_branch(item.branch)

    def _look_up_branch(self, item: UserItem | AssistantItem) -> None:
        if not item.branch_known and self._branch_source is not None:
            item.branch = self._branch_source(item.key)
            item.branch_known = True

    def branch_of(self, key: str) -> tuple[int, int] | None:
        """The (position, count) shown on message ``key`` (None: no other version)."""
        item = next((i for i in self._window.items if i.key == key), None)
        return item.branch if isinstance(item, UserItem | AssistantItem) else None

    @property
    def follows_end(self) -> bool:
        """True while the view keeps the end in sight."""
        return self._follows_end

    def scroll_to_end(self) -> None:
        """Jump to the newest message and follow the end again."""
        if not self._window.includes_end:
            items = self._window.items
            self._window.reset(items, max(0, len(items) - PAGE_SIZE))
        self._anchor = None
        self._set_follows_end(True)
        self._scroll_to_maximum()

    def flush(self) -> None:
        """Show every pending piece now instead of at the next frame."""
        self._show_pending()

    # -- inspection (tests, the window's own checks) --------------------------

    def item_keys(self) -> list[str]:
        """Keys of all items in order (rendered or not)."""
        return [item.key for item in self._window.items]

    def rendered_item_count(self) -> int:
        """How many items currently have widgets."""
        return len(self._window.widgets)

    def item_widget(self, key: str) -> QWidget | None:
        """The widget showing item ``key``, if it is rendered."""
        return self._window.widgets.get(key)

    def item_text(self, key: str) -> str:
        """The text item ``key`` shows right now ("" if it is not rendered)."""
        widget = self._window.widgets.get(key)
        text = getattr(widget, "plain_text", None)
        return text() if callable(text) else ""

    @property
    def theme(self) -> TranscriptTheme:
        """The colours in use (derived from the current palette)."""
        return self._theme

    @property
    def scheduler(self) -> FrameScheduler:
        """The frame scheduler (exposed so callers can finish pending formatting)."""
        return self._scheduler

    # -- items and widgets ------------------------------------------------------

    def _key(self, message_id: str | None) -> str:
        """The item key: ``message_id`` when given, made unique if it is already shown."""
        key = str(message_id) if message_id is not None else f"item-{next(self._keys)}"
        while key in self._keys_in_use:
            key = f"{key}+"
        self._keys_in_use.add(key)
        return key

    def _ensure_open(self) -> AssistantItem:
        if self._open is None:
            self.begin_assistant_message()
        assert self._open is not None
        return self._open

    def _mark_dirty(self, item: AssistantItem | None) -> None:
        if item is not None and item.key in self._window.widgets:
            self._dirty.add(item.key)
            self._scheduler.request_frame()

    def _show_pending(self) -> None:
        dirty, self._dirty = self._dirty, set()
        for key in dirty:
            widget = self._window.widgets.get(key)
            if isinstance(widget, AssistantMessageWidget):
                widget.sync()

    def _find_tool_call(self, tool_use_id: str | None) -> tuple[AssistantItem, ToolCallPart] | None:
        if not tool_use_id:
            return None
        for item in reversed(self._window.items[-TOOL_RESULT_SEARCH_DEPTH:]):
            if isinstance(item, AssistantItem):
                part = item.find_tool_call(tool_use_id)
                if part is not None:
                    return item, part
        return None

    def _append_item(self, item: TranscriptItem) -> None:
        # Not rendered when the person is reading older pages; it renders when they come back.
        rendered = self._window.append(item)
        if rendered and self._window.size > MAX_RENDERED and self._follows_end:
            self._window.drop_top(self._window.size - MAX_RENDERED)

    def _make_widget(self, item: TranscriptItem) -> QWidget:
        widget: QWidget
        if isinstance(item, UserItem | AssistantItem):
            self._look_up_branch(item)
        if isinstance(item, UserItem):
            user = UserMessageWidget(item, self._theme, self._column)
            user.edit_requested.connect(self.edit_requested.emit)
            user.copy_requested.connect(self.copy_requested.emit)
            user.branch_requested.connect(self.branch_requested.emit)
            widget = user
        elif isinstance(item, CompactionItem):
            widget = CompactionMarker(item, self._theme, self._column)
        elif isinstance(item, ErrorItem):
            error = ErrorNoticeWidget(item, self._theme, self._column)
            error.retry_requested.connect(self.retry_requested.emit)
            widget = error
        else:
            answer = AssistantMessageWidget(
                item, self._theme, self._renderer, self._scheduler, self._column
            )
            answer.copy_requested.connect(self.copy_requested.emit)
            answer.regenerate_requested.connect(self.regenerate_requested.emit)
            answer.approval_answered.connect(self.approval_answered.emit)
            answer.branch_requested.connect(self.branch_requested.emit)
            answer.set_regenerate_visible(item.key == self._regenerate_key)
            widget = answer
        return widget

    def _update_regenerate(self) -> None:
        """Offer Regenerate on the last answer only, and not while one streams."""
        last = None
        if self._open is None:
            for item in reversed(self._window.items):
                if isinstance(item, AssistantItem):
                    last = item.key
                    break
                if isinstance(item, UserItem):
                    break
        if last == self._regenerate_key:
            return
        for key, visible in ((self._regenerate_key, False), (last, True)):
            widget = self._window.widgets.get(key) if key else None
            if isinstance(widget, AssistantMessageWidget):
                widget.set_regenerate_visible(visible)
        self._regenerate_key = last

    # -- scrolling ----------------------------------------------------------------

    def _set_follows_end(self, follows: bool) -> None:
        if follows != self._follows_end:
            self._follows_end = follows
            self.follows_end_changed.emit(follows)

    def _set_scroll_value(self, value: int) -> None:
        self._adjusting = True
        try:
            self.verticalScrollBar().setValue(value)
        finally:
            self._adjusting = False

    def _scroll_to_maximum(self) -> None:
        self._set_scroll_value(self.verticalScrollBar().maximum())

    def _widget_top(self, widget: QWidget) -> int:
        return widget.mapTo(self._content, QPoint(0, 0)).y()

    def _on_range_changed(self, _minimum: int, maximum: int) -> None:
        if self._follows_end:
            self._set_scroll_value(maximum)
        elif self._anchor is not None:
            widget, offset = self._anchor
            self._set_scroll_value(self._widget_top(widget) - offset)
        if not self._paging and self._more_above() and maximum < self.viewport().height():
            self._start_paging(self._page_up)  # too little to scroll: fill the screen first

    def _on_value_changed(self, value: int) -> None:
        if self._adjusting:
            return
        self._anchor = None
        bar = self.verticalScrollBar()
        at_end = value >= bar.maximum() - END_SLACK
        self._set_follows_end(at_end and self._window.includes_end)
        if not self._paging:
            self._page_if_near_edge()

    def _page_if_near_edge(self) -> None:
        """Render the next page when the view is within a screen of the window's edge."""
        bar = self.verticalScrollBar()
        margin = self.viewport().height()
        if bar.value() <= margin and self._more_above():
            self._start_paging(self._page_up)
        elif bar.value() >= bar.maximum() - margin and not self._window.includes_end:
            self._start_paging(self._page_down)

    def _start_paging(self, page: Any) -> None:
        self._paging = True
        QTimer.singleShot(0, page)

    def _finish_paging(self) -> None:
        # Let the new widgets settle their heights before paging again.
        QTimer.singleShot(50, self._end_paging)

    def _end_paging(self) -> None:
        self._paging = False
        if not self._follows_end:
            self._page_if_near_edge()  # still at an edge: keep filling

    def _page_up(self) -> None:
        window = self._window
        if window.lo <= 0 and window.widgets:
            self._load_earlier()
        if window.lo <= 0 or not window.widgets:
            self._paging = False
            return
        first = window.widgets[window.items[window.lo].key]
        self._anchor = (first, self._widget_top(first) - self.verticalScrollBar().value())
        window.render_before(max(0, window.lo - PAGE_SIZE))
        excess = window.size - MAX_RENDERED
        dropped = window.items[window.hi - excess : window.hi] if excess > 0 else []
        if dropped and not any(item is self._open for item in dropped):
            window.drop_bottom(excess)
        self._finish_paging()

    def _page_down(self) -> None:
        window = self._window
        if window.includes_end or not window.widgets:
            self._paging = False
            return
        last = window.widgets[window.items[window.hi - 1].key]
        self._anchor = (last, self._widget_top(last) - self.verticalScrollBar().value())
        window.render_after(min(len(window.items), window.hi + PAGE_SIZE))
        excess = window.size - MAX_RENDERED
        if excess > 0:
            window.drop_top(excess)
        self._finish_paging()

    # -- palette --------------------------------------------------------------------

    def changeEvent(self, event: QEvent) -> None:
        """Follow palette changes (light/dark) by re-theming and rebuilding the window."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            theme = TranscriptTheme.from_palette(self.palette())
            if theme != self._theme:
                self._apply_theme(theme)

    def _apply_content_style(self) -> None:
        # An opaque, palette-filled content widget with static contents lets Qt
        # scroll by moving pixels and, when the content grows, repaint only the
        # newly exposed strip rather than the whole viewport every frame.
        palette = self._content.palette()
        palette.setColor(QPalette.ColorRole.Window, QColor(self._theme.background))
        self._content.setPalette(palette)
        self._content.setAutoFillBackground(True)
        self._content.setAttribute(Qt.WidgetAttribute.WA_StaticContents, True)
        self._scroll_bar.set_handle_color(self._theme.muted_text)

    def _apply_theme(self, theme: TranscriptTheme) -> None:
        self._theme = theme
        self._renderer = MarkdownRenderer(theme)
        self._apply_content_style()
        self._window.rebuild()


def _message_id(entry: Any) -> str | None:
    """The store id of a message dict or record (None when it has none)."""
    value = entry.get("id") if isinstance(entry, dict) else getattr(entry, "id", None)
    return None if value is None else str(value)
