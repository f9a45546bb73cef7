"""The window of transcript items that currently have widgets.

Why: see ``view.py`` — only a contiguous range ``[lo, hi)`` of a long
conversation is rendered. This class keeps that range, the widgets in it and
their order in the column layout consistent, so the pager
(``scroll_pager.py``) only decides *when* to grow or shrink the window.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QApplication, QVBoxLayout, QWidget

from desktop_agent.gui.transcript.items import TranscriptItem


class ItemWindow:
    """Items of one conversation and the widgets of the rendered range.

    Attributes:
        items: every item, oldest first (rendered or not).
        widgets: item key -> widget, for the rendered range only.
        lo: index of the first rendered item.
        hi: index one past the last rendered item.
    """

    def __init__(self, layout: QVBoxLayout, make_widget: Callable[[TranscriptItem], QWidget]):
        self._layout = layout  # ends with a stretch that stays last
        self._make_widget = make_widget
        self.items: list[TranscriptItem] = []
        self.widgets: dict[str, QWidget] = {}
        self.lo = 0
        self.hi = 0

    @property
    def includes_end(self) -> bool:
        """Whether the newest item is in the rendered range."""
        return self.hi == len(self.items)

    @property
    def size(self) -> int:
        """How many items are rendered."""
        return self.hi - self.lo

    def clear(self) -> None:
        """Drop every widget and item."""
        for key in list(self.widgets):
            self.drop(key)
        self.items = []
        self.lo = self.hi = 0

    def reset(self, items: list[TranscriptItem], rendered_from: int) -> None:
        """Replace the items and render ``items[rendered_from:]``."""
        self.clear()
        self.items = items
        self.lo = self.hi = len(items)
        self.render_before(rendered_from)

    def prepend(self, items: list[TranscriptItem]) -> None:
        """Add older items before all others (paged in from the store), unrendered."""
        self.items = [*items, *self.items]
        self.lo += len(items)
        self.hi += len(items)

    def forget_before(self, index: int) -> list[TranscriptItem]:
        """Let go of the unrendered items before ``index`` (the store keeps them); returns them."""
        index = min(index, self.lo)
        forgotten, self.items = self.items[:index], self.items[index:]
        self.lo -= index
        self.hi -= index
        return forgotten

    def append(self, item: TranscriptItem) -> bool:
        """Add a new item; it gets a widget only if the window reaches the end."""
        at_end = self.includes_end
        self.items.append(item)
        if not at_end:
            return False
        self._layout.insertWidget(self._layout.count() - 1, self._create(item))
        self.hi += 1
        return True

    def render_before(self, start: int) -> None:
        """Make widgets for ``items[start:lo]`` at the top of the window."""
        for offset, item in enumerate(self.items[start : self.lo]):
            self._layout.insertWidget(offset, self._create(item))
        self.lo = min(self.lo, start)

    def render_after(self, stop: int) -> None:
        """Make widgets for ``items[hi:stop]`` at the bottom of the window."""
        for item in self.items[self.hi : stop]:
            self._layout.insertWidget(self._layout.count() - 1, self._create(item))
        self.hi = max(self.hi, stop)

    def drop_top(self, count: int) -> None:
        """Remove the widgets of the first ``count`` rendered items."""
        for item in self.items[self.lo : self.lo + count]:
            self.drop(item.key)
        self.lo += count

    def drop_bottom(self, count: int) -> None:
        """Remove the widgets of the last ``count`` rendered items."""
        for item in self.items[self.hi - count : self.hi]:
            self.drop(item.key)
        self.hi -= count

    def drop(self, key: str) -> None:
        """Remove one item's widget (the item stays)."""
        widget = self.widgets.pop(key, None)
        if widget is not None:
            _let_go_of_focus(widget)
            self._layout.removeWidget(widget)
            widget.hide()
            widget.deleteLater()

    def rebuild(self) -> None:
        """Recreate every rendered widget (after a theme change)."""
        rendered = self.items[self.lo : self.hi]
        for item in rendered:
            self.drop(item.key)
        for index, item in enumerate(rendered):
            self._layout.insertWidget(index, self._create(item))

    def _create(self, item: TranscriptItem) -> QWidget:
        widget = self._make_widget(item)
        self.widgets[item.key] = widget
        return widget


def _let_go_of_focus(widget: QWidget) -> None:
    """Clear the keyboard focus when it is inside ``widget``, before it is hidden.

    Why: hiding the widget that holds the focus makes Qt pass the focus on to the
    next widget, and the scroll area then scrolls that one into view: a dropped
    answer the person had clicked in (Copy, a text selection) would throw the
    view back up the conversation and stop it following the end.
    """
    focus = QApplication.focusWidget()
    if focus is not None and (focus is widget or widget.isAncestorOf(focus)):
        focus.clearFocus()
