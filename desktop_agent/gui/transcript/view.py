"""TranscriptView: one conversation's messages, streaming, in a scroll area.

Design (why a windowed column of real widgets): a transcript needs real
interactive parts (copy buttons, folding sections, selectable text, links),
which a QListView delegate can only paint, not host. So messages are real
widgets in a QScrollArea, but only a window of them exists at any time: the
conversation is kept as plain data items (``items.py``), widgets are made for
the last ``FIRST_PAGE`` items when history loads (then as many more as fill the
view and half a screen), and more are made a page at
a time as the person scrolls towards either edge of the window, while widgets
beyond ``MAX_RENDERED`` on the far side are dropped (``scroll_pager.py``). While the
view follows the end, new answers push the oldest widgets out sooner: only the items
filling a few screens at the end keep theirs, so a conversation left open for hundreds
of turns holds its items' text, not their widgets. The items themselves may
be only the last page of the stored branch: above the oldest one, the view asks
its earlier-messages source (:meth:`set_earlier_source`) for the page before.
Opening 10,000 messages therefore builds only the widgets that fill the view, and the
scroll position is kept anchored to what the person is looking at while pages
come and go. (The scroll bar measures the rendered window, not the whole
conversation; chat apps share this trade-off.)

Streaming: pieces are appended to the open item at once (O(1)) and shown once
per frame by a :class:`FrameScheduler`; the item's widget reads only the new
pieces (see ``assistant_message.py``). While :attr:`follows_end` is true the
view keeps the newest text in sight; scrolling up stops that until the person
scrolls back to the end.

The view holds no business logic: it displays what it is told and reports
clicks through signals. Its parts: :class:`~.item_book.ItemBook` keeps the
items as data (keys, the open answer, cards to repaint, tool-call lookup),
:class:`~.scroll_pager.ScrollPager` pages and anchors as the person scrolls,
:class:`~.item_window.ItemWindow` owns the rendered widgets and
:class:`~.item_widgets.ItemWidgets` turns items into widgets; this module
assembles them and offers the API the window drives.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QFrame, QHBoxLayout, QScrollArea, QVBoxLayout, QWidget

from desktop_agent.gui.none_refcount_guard import guard_none_refcount
from desktop_agent.gui.transcript.frame_scheduler import FrameScheduler
from desktop_agent.gui.transcript.item_book import ItemBook
from desktop_agent.gui.transcript.item_widgets import ItemWidgets, answer_widget, user_widget
from desktop_agent.gui.transcript.item_window import ItemWindow
from desktop_agent.gui.transcript.items import (
    AssistantItem,
    CompactionItem,
    ErrorItem,
    LiveOutput,
    ReplyNotePart,
    SubagentRun,
    ToolCallPart,
    ToolErrorPart,
    TranscriptItem,
    UserItem,
)
from desktop_agent.gui.transcript.scroll_pager import ScrollPager
from desktop_agent.gui.transcript.slim_scroll_bar import SlimScrollBar
from desktop_agent.gui.transcript.stored_items import settle_part
from desktop_agent.gui.transcript.theme import TranscriptTheme
from desktop_agent.session import SubagentReported, ToolCallState

if TYPE_CHECKING:
    from desktop_agent.gui.transcript.items import CommandPreviewState
    from desktop_agent.workspace.diffs import FileDiff

log = logging.getLogger("desktop_agent.gui.transcript")

#: Largest readable line length: the column is centred beyond this width.
COLUMN_MAX_WIDTH = 920


class TranscriptView(QScrollArea):
    """The streaming transcript of one conversation.

    Signals:
        retry_requested(): Retry was clicked on an error.
        edit_requested(str, str): Edit was clicked on a user message (item key, text).
        regenerate_requested(): Regenerate was clicked on the last answer.
        copy_requested(str): something was copied (it is already on the clipboard).
        follows_end_changed(bool): :attr:`follows_end` changed.
        approval_answered(str, str, str): tool use id, choice, reason, from a card.
        approval_arguments_edited(str, str): tool use id, arguments edited on a card (JSON).
        tool_stop_requested(str): tool use id: Stop on a running command's card.
        preview_decided(str, str, str): tool use id, ``apply``/``apply_anyway``/``discard``,
            the reason for the model: a command preview's buttons.
        branch_requested(str, int): message key and -1/+1: show another version of it.
        restore_requested(str, bool): message key, and whether to go back to it as well:
            put the files back as they were before that message.
    """

    branch_requested = Signal(str, int)
    restore_requested = Signal(str, bool)

    approval_answered = Signal(str, str, str)
    approval_arguments_edited = Signal(str, str)
    tool_stop_requested = Signal(str)
    preview_decided = Signal(str, str, str)

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

        self._scheduler = FrameScheduler(self)
        self._widgets = ItemWidgets(self, self._column, self._scheduler, self.palette())
        self._window = ItemWindow(self._column_layout, self._make_widget)
        self._book = ItemBook(self._window, self._scheduler)
        self._pager = ScrollPager(self, self._content, self._window, self._book)
        self._pager.follows_end_changed.connect(self.follows_end_changed)
        self._apply_content_style()

    # -- the API the window uses ---------------------------------------------

    def clear(self) -> None:
        """Remove everything (e.g. before showing another conversation)."""
        self._window.clear()
        self._book.clear()
        self._pager.reset()

    def add_user_message(self, text: str, message_id: str | None = None,
                         pictures: Sequence[str] = ()) -> str:
        """Show a sent message; returns its item key (``message_id`` if given)."""
        item = UserItem(self._book.key(message_id), text, pictures=list(pictures),
                        message_id=message_id)
        self._append_item(item)
        return item.key

    def begin_assistant_message(self, message_id: str | None = None) -> str:
        """Start a streaming answer; returns its item key."""
        if self._book.open is not None:
            self.end_assistant_message()
        item = AssistantItem(self._book.key(message_id))
        self._book.open = item
        self._append_item(item)
        self._book.update_regenerate()
        return item.key

    def append_text(self, delta: str) -> None:
        """Add a piece of answer text (shown at the next frame)."""
        if delta:
            item = self._ensure_open()
            item.append("text", delta)
            self._book.mark_dirty(item)

    def append_thinking(self, delta: str) -> None:
        """Add a piece of reasoning text (shown at the next frame)."""
        if delta:
            item = self._ensure_open()
            item.append("thinking", delta)
            self._book.mark_dirty(item)

    def add_tool_call(
        self, tool_use_id: str, name: str, input: dict[str, Any], source: str | None = None
    ) -> None:
        """Show a tool call as a compact card."""
        item = self._ensure_open()
        item.parts.append(ToolCallPart(tool_use_id, name, input, source))
        self._book.mark_dirty(item)

    def set_tool_result(self, tool_use_id: str, content: str, is_error: bool = False,
                        pictures: Sequence[str] = ()) -> None:
        """Fill in the output (and any pictures) of the card for ``tool_use_id``."""
        if not self._book.update_tool_call(tool_use_id, result=content, is_error=is_error,
                                           pictures=list(pictures)):
            log.debug("No card for tool result %s; shown as a note", tool_use_id)
            item = self._ensure_open()
            item.parts.append(ToolErrorPart(content) if is_error else ToolErrorPart(
                f"Tool result: {content}"))
            self._book.mark_dirty(item)

    def set_tool_input(self, tool_use_id: str, arguments: dict[str, Any]) -> None:
        """Show the input a call ran with (edited before it ran) on its card."""
        self._book.update_tool_call(tool_use_id, arguments=arguments, edited=True)

    def settle_tool_call(self, tool_use_id: str, state: ToolCallState) -> None:
        """Show a call as its stored result says it ended (the same as when reopened)."""
        found = self._book.find_tool_call(tool_use_id)
        if found is None:
            return
        item, part = found
        settle_part(part, state)
        item.revision += 1
        self._book.mark_dirty(item)

    def set_tool_status(self, tool_use_id: str, status: str) -> None:
        """Show where a call stands until its result arrives ("waiting for approval")."""
        self._book.update_tool_call(tool_use_id, status=status)

    def add_tool_output(self, tool_use_id: str, text: str, lines: int, elapsed: float,
                        stoppable: bool) -> None:
        """Add what a running command printed to its card (shown at the next frame)."""
        found = self._book.find_tool_call(tool_use_id)
        if found is None:
            return
        item, part = found
        if part.live is None:
            part.live = LiveOutput()
        part.live.append(text, lines, elapsed, stoppable)
        item.revision += 1
        self._book.mark_dirty(item)

    def add_subagent_step(self, event: SubagentReported) -> None:
        """A delegation's subagent did something (a ``SubagentReported``): show it on its card."""
        found = self._book.find_tool_call(event.tool_use_id)
        if found is None:
            return
        item, part = found
        if part.subagent is None:
            part.subagent = SubagentRun(event.agent, event.agent_id)
        part.subagent.apply(event)
        item.revision += 1
        self._book.mark_dirty(item)

    def mark_tool_stopping(self, tool_use_id: str) -> None:
        """Say on the card that Stop was asked (until the command's result comes)."""
        found = self._book.find_tool_call(tool_use_id)
        if found is not None and found[1].live is not None:
            found[1].live.stop_asked = True
            found[0].revision += 1
            self._book.mark_dirty(found[0])

    def set_tool_approval(self, tool_use_id: str, prompt: Any, outcome: str | None = None) -> None:
        """Ask on the call's card (an ApprovalPrompt) or stop asking (None, with the outcome)."""
        settled = {} if outcome is None else {"outcome": outcome, "status": outcome}
        self._book.update_tool_call(tool_use_id, approval=prompt, **settled)

    def set_tool_preview(self, tool_use_id: str, diff: FileDiff | None,
                         problem: str | None = None) -> None:
        """Show on the card what a file-changing call would do (or why it would fail)."""
        self._book.update_tool_call(tool_use_id, preview=(diff, problem))

    def set_command_preview(self, tool_use_id: str, state: CommandPreviewState) -> bool:
        """Show on a ``bash`` card what its command would change (False: no such card)."""
        return self._book.update_tool_call(tool_use_id, command_preview=state)

    def set_tool_change(self, tool_use_id: str, diff: FileDiff) -> None:
        """Keep on the card (folded) the diff of what the call changed."""
        self._book.update_tool_call(tool_use_id, change=diff)

    def add_tool_error(self, text: str, tool_use_id: str | None = None) -> None:
        """Show a tool problem: on its card when known, else as a line in the answer."""
        if self._book.update_tool_call(tool_use_id, result=text, is_error=True):
            return
        item = self._ensure_open()
        item.parts.append(ToolErrorPart(text))
        self._book.mark_dirty(item)

    def add_reply_note(self, text: str) -> None:
        """Mark the answer being shown (e.g. "the server cut the prompt to N tokens")."""
        item = self._ensure_open()
        item.parts.append(ReplyNotePart(text))
        self._book.mark_dirty(item)

    def end_assistant_message(self, interrupted: bool = False) -> None:
        """Finish the open answer and render its last blocks now."""
        item = self._book.open
        if item is None:
            return
        item.close(interrupted=interrupted)
        self._book.open = None
        self._book.forget_dirty(item)
        widget = answer_widget(self._window.widgets.get(item.key))
        if widget is not None:
            widget.sync()
        self._book.update_regenerate()

    def add_error(self, text: str, retry: bool = True) -> str:
        """Show an error in words, with Retry if ``retry``; ends an open answer first."""
        if self._book.open is not None:
            self.end_assistant_message(interrupted=True)
        item = ErrorItem(self._book.key(None), text, retry)
        self._append_item(item)
        return item.key

    def add_compaction_marker(self, messages: int, summary: str | None) -> str:
        """Show where the model's view was compacted ("N earlier messages summarised")."""
        item = CompactionItem(self._book.key(None), messages, summary)
        self._append_item(item)
        return item.key

    def load_messages(self, messages: Iterable[Any]) -> None:
        """Show stored history (OpenAI message dicts, optionally with metadata).

        Only the last page gets widgets; see the module docstring.
        """
        self.clear()
        messages = list(messages)
        self._pager.show_history(messages, self._book.items_from(messages))
        self._book.update_regenerate()
        self._pager.scroll_to_end()

    def set_earlier_source(self, fetch: Callable[[str], list[Any]] | None) -> None:
        """Where older messages come from: ``fetch(first_shown_message_id) -> messages``.

        Why: a long conversation is loaded a page at a time; when the person
        scrolls above the oldest loaded message the view asks for the page
        before it (root first, empty when there is none).
        """
        self._pager.set_earlier_source(fetch)

    def set_branch_source(self, lookup: Callable[[str], tuple[int, int] | None] | None) -> None:
        """Where to ask which version a message is: ``lookup(key) -> (pos, count) | None``.

        Asked only for messages that get a widget (a page at a time), never for
        the whole conversation.
        """
        self._book.set_branch_source(lookup)

    def refresh_branches(self) -> None:
        """Ask again for every message on screen (after a regenerate or an edit)."""
        for widget in list(self._window.widgets.values()):
            item = getattr(widget, "item", None)
            if isinstance(item, UserItem | AssistantItem):
                self._book.look_up_branch(item, again=True)
                shown = user_widget(widget) or answer_widget(widget)
                if shown is not None:
                    shown.set_branch(item.branch)

    def offer_restore(self, offered: bool) -> None:
        """Show (or hide) "Restore files…" on every user message, rendered now or later."""
        self._widgets.restore_offered = offered
        for widget in self._window.widgets.values():
            user = user_widget(widget)
            if user is not None:
                user.offer_restore(offered)

    @property
    def restore_offered(self) -> bool:
        """Whether user messages offer "Restore files…"."""
        return self._widgets.restore_offered

    def branch_of(self, key: str) -> tuple[int, int] | None:
        """The (position, count) shown on message ``key`` (None: no other version)."""
        return self._book.branch_of(key)

    @property
    def follows_end(self) -> bool:
        """True while the view keeps the end in sight."""
        return self._pager.follows_end

    def scroll_to_end(self) -> None:
        """Jump to the newest message and follow the end again."""
        self._pager.scroll_to_end()

    def flush(self) -> None:
        """Show every pending piece now instead of at the next frame."""
        self._book.show_pending()

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
        return self._widgets.theme

    @property
    def scheduler(self) -> FrameScheduler:
        """The frame scheduler (exposed so callers can finish pending formatting)."""
        return self._scheduler

    # -- items and widgets ------------------------------------------------------

    def _ensure_open(self) -> AssistantItem:
        if self._book.open is None:
            self.begin_assistant_message()
        assert self._book.open is not None
        return self._book.open

    def _append_item(self, item: TranscriptItem) -> None:
        # Not rendered when the person is reading older pages; it renders when they come back.
        if self._window.append(item):
            self._pager.appended()

    def _make_widget(self, item: TranscriptItem) -> QWidget:
        if isinstance(item, UserItem | AssistantItem):
            self._book.look_up_branch(item)
        return self._widgets.make(item, regenerate=item.key == self._book.regenerate_key)

    # -- palette --------------------------------------------------------------------

    def changeEvent(self, event: QEvent) -> None:
        """Follow palette changes (light/dark) by re-theming and rebuilding the window."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self._widgets.retheme(self.palette()):
            self._apply_content_style()
            self._window.rebuild()

    def _apply_content_style(self) -> None:
        # An opaque, palette-filled content widget with static contents lets Qt
        # scroll by moving pixels and, when the content grows, repaint only the
        # newly exposed strip rather than the whole viewport every frame.
        palette = self._content.palette()
        palette.setColor(QPalette.ColorRole.Window, QColor(self.theme.background))
        self._content.setPalette(palette)
        self._content.setAutoFillBackground(True)
        self._content.setAttribute(Qt.WidgetAttribute.WA_StaticContents, True)
        self._scroll_bar.set_handle_color(self.theme.muted_text)
