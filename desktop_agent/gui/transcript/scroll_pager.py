"""Paging the rendered window as the person scrolls, and keeping the view anchored.

Why a class of its own: deciding *when* to render the page above or below,
when to drop widgets on the far side, when to ask for older stored messages and
where the scroll bar must go so the text the person reads stays put, is one
job, independent of which widgets an item becomes. The design it serves is
described in ``view.py``; :class:`~.item_window.ItemWindow` does the rendering.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, QPoint, QTimer, Signal
from PySide6.QtWidgets import QScrollArea, QWidget

from desktop_agent.gui.transcript.item_book import ItemBook
from desktop_agent.gui.transcript.item_window import ItemWindow
from desktop_agent.gui.transcript.items import TranscriptItem, UserItem

#: Items rendered at once when the person scrolls to a window edge.
PAGE_SIZE = 30
#: Items rendered when history loads, before their heights are known: less than a
#: screen's worth of most conversations, so a conversation opens fast.
FIRST_PAGE = 6
#: Then the view renders the items above, as many as their heights so far say are
#: missing, until it holds a screen and this much more (in screens); the rest come as
#: the person scrolls up. Why not more: each message kept as widgets costs memory
#: (an answer with a code block ~175 kB, ``bench/tab_memory.py``). With twelve items
#: rendered up front and a screen more filled in, a conversation of 40 such messages
#: kept 12 of them; it keeps 6 now, and the five-tab window of ``bench/startup.py``
#: idles 0.7 MiB smaller (118.1 -> 117.4 MiB RSS, a model server answering).
FILL_MARGIN = 0.5
#: Most item widgets kept alive; beyond this, the far side of the window is dropped.
MAX_RENDERED = 90
#: While the view follows the end, the screens of newest items that keep their widgets
#: (the view and some to scroll back through at once); older ones are dropped.
FOLLOW_SCREENS = 3
#: ... and at least this many items (the newest answer and the question before it):
#: not more, as an answer of the soak's markdown and code is taller than three screens
#: and holds ~3.6 MB of Qt's documents and layouts (``bench/soak_window.py``).
FOLLOW_LEAST = 2
#: While the view follows the end, items above the rendered ones kept as data (their
#: text): a page to scroll back through before the store is read. Older ones are let
#: go of once twice as many pile up (at a turn's start), and read back from the store
#: a page at a time on scrolling up, as when the conversation was opened: a
#: conversation kept open for thousands of turns holds a few pages, not every turn's
#: answer and tool results (``bench/soak_window.py``).
KEPT_ABOVE = PAGE_SIZE
#: A view hidden this long (another tab shown) lets go of the widgets off its screen;
#: not at once, so flipping between two tabs does not render the same items again.
HIDDEN_RELEASE_MS = 2_000
#: How close (pixels) to the end still counts as "at the end".
END_SLACK = 4


class ScrollPager(QObject):
    """Grows and shrinks the rendered window from the scroll position.

    Signals:
        follows_end_changed(bool): :attr:`follows_end` changed.
    """

    follows_end_changed = Signal(bool)

    def __init__(self, area: QScrollArea, content: QWidget, window: ItemWindow,
                 book: ItemBook) -> None:
        super().__init__(area)
        self._area = area
        self._content = content
        self._window = window
        self._book = book
        self._follows_end = True
        self._adjusting = False
        self._anchor: tuple[QWidget, int] | None = None
        self._paging = False
        self._earlier_source: Callable[[str], list[Any]] | None = None
        self._first_message_id: str | None = None
        bar = area.verticalScrollBar()
        bar.rangeChanged.connect(self._on_range_changed)
        bar.valueChanged.connect(self._on_value_changed)
        self._release_timer = QTimer(self)
        self._release_timer.setSingleShot(True)
        self._release_timer.setInterval(HIDDEN_RELEASE_MS)
        self._release_timer.timeout.connect(self._release_hidden)
        area.viewport().installEventFilter(self)  # a taller view may need more items

    @property
    def follows_end(self) -> bool:
        """True while the view keeps the end in sight."""
        return self._follows_end

    def reset(self) -> None:
        """Forget the anchor and follow the end (the view was emptied)."""
        self._anchor = None
        self.set_follows_end(True)

    def show_history(self, messages: list[Any], items: list[TranscriptItem]) -> None:
        """Render the last page of freshly loaded history; older pages come on scrolling."""
        self._first_message_id = _message_id(messages[0]) if messages else None
        self._window.reset(items, max(0, len(items) - FIRST_PAGE))
        # Once laid out: items shorter than the view change no scroll range to react to.
        QTimer.singleShot(0, self._fill_if_short)

    def set_earlier_source(self, fetch: Callable[[str], list[Any]] | None) -> None:
        """Where older messages come from (see ``TranscriptView.set_earlier_source``)."""
        self._earlier_source = fetch

    def appended(self) -> None:
        """Drop widgets the person cannot be looking at after an item was rendered at the end.

        Why: an open conversation gains an answer every turn and an answer's widgets
        cost far more than its text (Qt's text layouts, the highlighted code), so the
        widgets kept must not grow with the turns. While the view follows the end only
        the items within ``FOLLOW_SCREENS`` screens of it keep theirs; the rest come
        back a page at a time if the person scrolls up. While the person reads further
        up, the window keeps at most ``MAX_RENDERED`` and new items at the end lose
        theirs first (they are rendered again on scrolling down).
        """
        window = self._window
        if self._follows_end:
            excess = window.size - self._kept_at_end()
            if excess > 0:
                self._adjusting = True
                try:
                    window.drop_top(excess)
                finally:
                    self._adjusting = False
                self._set_scroll_value(self._area.verticalScrollBar().maximum())
            self._forget_old_items()
            if not self._area.isVisible():
                self._release_timer.start()  # a turn ran in a tab in the background
            return
        excess = window.size - MAX_RENDERED
        dropped = window.items[window.hi - excess : window.hi] if excess > 0 else []
        if dropped and not any(item is self._book.open for item in dropped):
            window.drop_bottom(excess)

    def _forget_old_items(self) -> None:
        """Let go of items far above the rendered ones when the store can give them back.

        Cut at a stored user message, as the store's pages start: the oldest item
        kept is where the page before it is read from.
        """
        window = self._window
        if self._earlier_source is None or window.lo <= 2 * KEPT_ABOVE:
            return
        for index in range(window.lo - KEPT_ABOVE, 0, -1):
            item = window.items[index]
            if isinstance(item, UserItem) and item.message_id is not None:
                self._book.forget(window.forget_before(index))
                self._first_message_id = item.message_id
                return

    def _kept_at_end(self, screens: int = FOLLOW_SCREENS, least: int = FOLLOW_LEAST) -> int:
        """How many of the newest rendered items fill ``screens`` screens.

        At least ``least`` and at most ``MAX_RENDERED``; heights are those laid
        out so far (a tab never shown keeps few, and fills up once shown).
        """
        window = self._window
        wanted = self._area.viewport().height() * screens
        height = 0
        kept = 0
        for item in reversed(window.items[window.lo : window.hi]):
            if kept >= least and height >= wanted:
                break
            widget = window.widgets.get(item.key)
            height += widget.height() if widget is not None else 0
            kept += 1
        return min(MAX_RENDERED, kept)

    def _release_hidden(self) -> None:
        """A tab hidden for a while keeps only the widgets of the screen it shows.

        Why: every tab of the window but one is hidden, and each kept the widgets of
        a few answers (see FOLLOW_LEAST). Only while it follows the end: shown again,
        it shows that same screen at once and fills the rest as it does when opened.
        """
        window = self._window
        if self._area.isVisible() or not self._follows_end or not window.includes_end:
            return
        excess = window.size - self._kept_at_end(screens=1, least=1)
        if excess > 0:
            self._adjusting = True
            try:
                window.drop_top(excess)
            finally:
                self._adjusting = False

    def scroll_to_end(self) -> None:
        """Jump to the newest message and follow the end again."""
        if not self._window.includes_end:
            items = self._window.items
            self._window.reset(items, max(0, len(items) - PAGE_SIZE))
        self._anchor = None
        self.set_follows_end(True)
        self._set_scroll_value(self._area.verticalScrollBar().maximum())

    def set_follows_end(self, follows: bool) -> None:
        """Set :attr:`follows_end`, announcing a change."""
        if follows != self._follows_end:
            self._follows_end = follows
            self.follows_end_changed.emit(follows)

    # -- scroll bar -----------------------------------------------------------------

    def _set_scroll_value(self, value: int) -> None:
        self._adjusting = True
        try:
            self._area.verticalScrollBar().setValue(value)
        finally:
            self._adjusting = False

    def _widget_top(self, widget: QWidget) -> int:
        return widget.mapTo(self._content, QPoint(0, 0)).y()

    def _on_range_changed(self, _minimum: int, maximum: int) -> None:
        if self._follows_end:
            self._set_scroll_value(maximum)
        elif self._anchor is not None:
            widget, offset = self._anchor
            self._set_scroll_value(self._widget_top(widget) - offset)
        self._fill_if_short()

    def _on_value_changed(self, value: int) -> None:
        if self._adjusting:
            return
        self._anchor = None
        bar = self._area.verticalScrollBar()
        at_end = value >= bar.maximum() - END_SLACK
        self.set_follows_end(at_end and self._window.includes_end)
        if not self._paging:
            self._page_if_near_edge()

    # -- paging -----------------------------------------------------------------------

    def _more_above(self) -> bool:
        return self._window.lo > 0 or (
            self._earlier_source is not None and self._first_message_id is not None)

    def _load_earlier(self) -> bool:
        """Put the page before the oldest loaded message in front (True: there was one)."""
        if self._earlier_source is None or self._first_message_id is None:
            return False
        messages = list(self._earlier_source(self._first_message_id))
        if not messages:
            self._first_message_id = None  # the root is loaded
            return False
        self._first_message_id = _message_id(messages[0])
        self._window.prepend(self._book.items_from(messages))
        return True

    def _page_if_near_edge(self) -> None:
        """Render the next page when the view is within a screen of the window's edge."""
        bar = self._area.verticalScrollBar()
        margin = self._area.viewport().height()
        if bar.value() <= margin and self._more_above():
            self._start_paging(self._page_up)
        elif bar.value() >= bar.maximum() - margin and not self._window.includes_end:
            self._start_paging(self._page_down)

    def _start_paging(self, page: Callable[[], None]) -> None:
        self._paging = True
        QTimer.singleShot(0, page)

    def _finish_paging(self) -> None:
        # Let the new widgets settle their heights before paging again.
        QTimer.singleShot(50, self._end_paging)

    def _end_paging(self) -> None:
        self._paging = False
        if not self._follows_end:
            self._page_if_near_edge()  # still at an edge: keep filling
        else:
            self._fill_if_short()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """A resized or shown viewport may need more items; a hidden one fewer, later."""
        kind = event.type()
        if kind == QEvent.Type.Resize:
            self._fill_if_short()
        elif kind == QEvent.Type.Hide:
            self._release_timer.start()
        elif kind == QEvent.Type.Show:
            self._release_timer.stop()
            QTimer.singleShot(0, self._fill_if_short)
        return False

    def _missing_height(self) -> int:
        """Pixels the rendered items lack to fill the view and FILL_MARGIN more (<= 0: none)."""
        viewport = self._area.viewport().height()
        maximum = self._area.verticalScrollBar().maximum()
        shown = maximum + viewport if maximum > 0 else \
            sum(widget.height() for widget in self._window.widgets.values())
        return int(viewport * (1 + FILL_MARGIN)) - shown

    def _fill_if_short(self) -> None:
        """Render items above while the view is shown and too short (see FILL_MARGIN)."""
        if not self._paging and self._area.isVisible() and self._more_above() \
                and self._missing_height() > 0:
            self._start_paging(self._fill_up)

    def _fill_up(self) -> None:
        """Render about as many items above as the view still lacks."""
        missing = self._missing_height()
        if missing <= 0:  # filled meanwhile; the person may have scrolled to an edge
            self._end_paging()
            return
        heights = [widget.height() for widget in self._window.widgets.values()]
        average = max(1.0, sum(heights) / len(heights)) if heights else 1.0
        self._page_up(min(PAGE_SIZE, max(1, math.ceil(missing / average))))

    def _page_up(self, count: int = PAGE_SIZE) -> None:
        window = self._window
        if window.lo <= 0 and window.widgets:
            self._load_earlier()
        if window.lo <= 0 or not window.widgets:
            self._paging = False
            return
        first = window.widgets[window.items[window.lo].key]
        self._anchor = (first, self._widget_top(first) - self._area.verticalScrollBar().value())
        window.render_before(max(0, window.lo - count))
        excess = window.size - MAX_RENDERED
        dropped = window.items[window.hi - excess : window.hi] if excess > 0 else []
        if dropped and not any(item is self._book.open for item in dropped):
            window.drop_bottom(excess)
        self._finish_paging()

    def _page_down(self) -> None:
        window = self._window
        if window.includes_end or not window.widgets:
            self._paging = False
            return
        last = window.widgets[window.items[window.hi - 1].key]
        self._anchor = (last, self._widget_top(last) - self._area.verticalScrollBar().value())
        window.render_after(min(len(window.items), window.hi + PAGE_SIZE))
        excess = window.size - MAX_RENDERED
        if excess > 0:
            window.drop_top(excess)
        self._finish_paging()


def _message_id(entry: Any) -> str | None:
    """The store id of a message dict or record (None when it has none)."""
    value = entry.get("id") if isinstance(entry, dict) else getattr(entry, "id", None)
    return None if value is None else str(value)
