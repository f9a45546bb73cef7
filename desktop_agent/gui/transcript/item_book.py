"""The transcript's items as data: keys, the open answer, cards waiting to repaint.

Why a class of its own: the view shows items, but which item a key names, which
answer is still streaming, which cards changed since the last frame and which
answer offers Regenerate are bookkeeping that does not depend on how the
widgets are laid out or scrolled. :class:`~.view.TranscriptView` asks this book
and repaints what it reports.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from desktop_agent.gui.transcript.frame_scheduler import FrameScheduler
from desktop_agent.gui.transcript.item_widgets import answer_widget
from desktop_agent.gui.transcript.item_window import ItemWindow
from desktop_agent.gui.transcript.items import (
    AssistantItem,
    ToolCallPart,
    TranscriptItem,
    UserItem,
)
from desktop_agent.gui.transcript.stored_items import items_from_messages

#: Tool results are matched against at most this many recent items.
TOOL_RESULT_SEARCH_DEPTH = 50


class ItemBook:
    """Item keys, the open answer, dirty cards, tool-call lookup and branch counts.

    Attributes:
        open: the answer still streaming (None between answers).
    """

    def __init__(self, window: ItemWindow, scheduler: FrameScheduler) -> None:
        self._window = window
        self._scheduler = scheduler
        self._keys = itertools.count(1)
        self._keys_in_use: set[str] = set()
        self.open: AssistantItem | None = None
        self._dirty: set[str] = set()
        self._regenerate_key: str | None = None
        self._branch_source: Callable[[str], tuple[int, int] | None] | None = None
        scheduler.add_frame_hook(self.show_pending)

    def clear(self) -> None:
        """Forget every key and the open answer (the window was emptied)."""
        self._keys_in_use.clear()
        self.open = None
        self._dirty.clear()
        self._regenerate_key = None

    def key(self, message_id: str | None) -> str:
        """The item key: ``message_id`` when given, made unique if it is already shown."""
        key = str(message_id) if message_id is not None else f"item-{next(self._keys)}"
        while key in self._keys_in_use:
            key = f"{key}+"
        self._keys_in_use.add(key)
        return key

    def items_from(self, messages: list[Any]) -> list[TranscriptItem]:
        """Stored messages as items, their keys reserved so new items never collide."""
        items = items_from_messages(messages, lambda: self.key(None))
        self._keys_in_use |= {item.key for item in items}
        return items

    def forget(self, items: list[TranscriptItem]) -> None:
        """Free the keys of items let go of (read back from the store, they get them again)."""
        self._keys_in_use -= {item.key for item in items}

    # -- repainting ---------------------------------------------------------------

    def mark_dirty(self, item: AssistantItem | None) -> None:
        """Repaint ``item``'s widget at the next frame (nothing when it has none)."""
        if item is not None and item.key in self._window.widgets:
            self._dirty.add(item.key)
            self._scheduler.request_frame()

    def forget_dirty(self, item: AssistantItem) -> None:
        """Drop a pending repaint (the caller repaints the widget itself now)."""
        self._dirty.discard(item.key)

    def show_pending(self) -> None:
        """Bring every answer that changed since the last frame up to date."""
        dirty, self._dirty = self._dirty, set()
        for key in dirty:
            widget = answer_widget(self._window.widgets.get(key))
            if widget is not None:
                widget.sync()

    # -- tool calls -----------------------------------------------------------------

    def find_tool_call(self, tool_use_id: str | None) -> tuple[AssistantItem, ToolCallPart] | None:
        """The recent answer and card of call ``tool_use_id`` (None when not found)."""
        if not tool_use_id:
            return None
        for item in reversed(self._window.items[-TOOL_RESULT_SEARCH_DEPTH:]):
            if isinstance(item, AssistantItem):
                part = item.find_tool_call(tool_use_id)
                if part is not None:
                    return item, part
        return None

    def update_tool_call(self, tool_use_id: str | None, **fields: Any) -> bool:
        """Change a card's fields and repaint it; False when there is no such card."""
        found = self.find_tool_call(tool_use_id)
        if found is None:
            return False
        item, part = found
        for name, value in fields.items():
            setattr(part, name, value)
        item.revision += 1
        self.mark_dirty(item)
        return True

    # -- regenerate and branches ------------------------------------------------------

    @property
    def regenerate_key(self) -> str | None:
        """The answer that offers Regenerate (None: none does)."""
        return self._regenerate_key

    def update_regenerate(self) -> None:
        """Offer Regenerate on the last answer only, and not while one streams."""
        last = None
        if self.open is None:
            for item in reversed(self._window.items):
                if isinstance(item, AssistantItem):
                    last = item.key
                    break
                if isinstance(item, UserItem):
                    break
        if last == self._regenerate_key:
            return
        for key, visible in ((self._regenerate_key, False), (last, True)):
            widget = answer_widget(self._window.widgets.get(key)) if key else None
            if widget is not None:
                widget.set_regenerate_visible(visible)
        self._regenerate_key = last

    def set_branch_source(self, lookup: Callable[[str], tuple[int, int] | None] | None) -> None:
        """Where to ask which version a message is (see ``TranscriptView.set_branch_source``)."""
        self._branch_source = lookup

    def look_up_branch(self, item: UserItem | AssistantItem, again: bool = False) -> None:
        """Fill in ``item.branch`` once (or ``again``, after the tree changed)."""
        if again:
            item.branch_known = False
        if not item.branch_known and self._branch_source is not None:
            item.branch = self._branch_source(item.key)
            item.branch_known = True

    def branch_of(self, key: str) -> tuple[int, int] | None:
        """The (position, count) known for message ``key`` (None: no other version)."""
        item = next((i for i in self._window.items if i.key == key), None)
        return item.branch if isinstance(item, UserItem | AssistantItem) else None
