"""The widget for one assistant turn, fed incrementally from its item.

Why this shape: a turn is a column of parts in arrival order: reasoning
sections, rendered markdown, code blocks, tool cards. Finished markdown blocks
are rendered once (markdown-it to HTML) and collected into "chunk" documents
of bounded size, so adding a block re-lays out at most one small chunk; the
block still being written is shown in a separate tail view that is redrawn
each frame from just that block. Code streams as plain text into its own
widget and is highlighted when its fence closes. Nothing here ever re-renders
the whole message.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from desktop_agent.gui.transcript.block_splitter import (
    CodeClosed,
    CodeOpened,
    CodeText,
    ProseClosed,
    StreamingBlockSplitter,
)
from desktop_agent.gui.transcript.branch_switcher import BranchSwitcher
from desktop_agent.gui.transcript.code_block import CodeBlockWidget
from desktop_agent.gui.transcript.frame_scheduler import FrameScheduler
from desktop_agent.gui.transcript.items import (
    AssistantItem,
    ReplyNotePart,
    TextRun,
    ToolCallPart,
    ToolErrorPart,
)
from desktop_agent.gui.transcript.markdown_html import MarkdownRenderer, plain_text_html
from desktop_agent.gui.transcript.painted_panel import set_text_color
from desktop_agent.gui.transcript.text_views import FittedTextBrowser
from desktop_agent.gui.transcript.theme import TranscriptTheme
from desktop_agent.gui.transcript.thinking_section import ThinkingSection
from desktop_agent.gui.transcript.tool_card import ToolCard, format_arguments
from desktop_agent.gui.transcript.widget_style import action_button, muted_label, role_label
from desktop_agent.session import FILE_CHANGING_TOOLS

#: Finished markdown (source characters) gathered into one document before a new one starts.
CHUNK_CHARS = 600
#: The open block is rendered as markdown each frame up to this size, as plain text beyond.
TAIL_MARKDOWN_CHARS = 1500
#: Part widgets per page. Parts sit in pages so a change near the end re-lays out
#: one page and the list of pages, not every part of a very long answer.
PARTS_PER_PAGE = 16

PROSE_STYLE = """
p { margin-top: 0px; margin-bottom: 8px; }
h1, h2, h3, h4, h5, h6 { margin-top: 6px; margin-bottom: 6px; }
ul, ol { margin-top: 0px; margin-bottom: 8px; }
li { margin-bottom: 2px; }
pre { margin: 0px; }
"""


def prose_view(parent: QWidget | None = None) -> FittedTextBrowser:
    """A text view for rendered markdown with the transcript's paragraph spacing."""
    view = FittedTextBrowser(parent)
    view.document().setDefaultStyleSheet(PROSE_STYLE)
    return view


class AssistantMessageWidget(QWidget):
    """Shows an :class:`AssistantItem`; call :meth:`sync` after the item grows.

    Signals:
        copy_requested(str): Copy was clicked (the text is already on the clipboard).
        regenerate_requested(): Regenerate was clicked.
        approval_answered(str, str, str): tool use id, choice, reason (on a card).
        approval_arguments_edited(str, str): tool use id, arguments edited on a card (JSON).
        tool_stop_requested(str): tool use id: Stop on a running command's card.
        preview_decided(str, str, str): tool use id, ``apply``/``apply_anyway``/``discard``,
            the reason for the model (a command preview's buttons).
        branch_requested(str, int): item key and -1/+1 (another version of the answer).
    """

    branch_requested = Signal(str, int)

    copy_requested = Signal(str)
    regenerate_requested = Signal()
    approval_answered = Signal(str, str, str)
    approval_arguments_edited = Signal(str, str)
    tool_stop_requested = Signal(str)
    preview_decided = Signal(str, str, str)

    def __init__(
        self,
        item: AssistantItem,
        theme: TranscriptTheme,
        renderer: MarkdownRenderer,
        scheduler: FrameScheduler | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.item = item
        self._theme = theme
        self._renderer = renderer
        self._scheduler = scheduler
        # Reading position in the item.
        self._part_index = 0
        self._text_shown = 0
        self._revision = -1
        self._ended = False
        # Open text run state.
        self._run_kind: str | None = None
        self._splitter: StreamingBlockSplitter | None = None
        self._thinking: ThinkingSection | None = None
        self._code: CodeBlockWidget | None = None
        self._chunk: FittedTextBrowser | None = None
        self._chunk_html: list[str] = []
        self._chunk_chars = 0
        self._chunk_stale = False  # blocks added to the chunk since its HTML was set
        self._tail: FittedTextBrowser | None = None
        self._tail_text = ""
        self._pages: list[QVBoxLayout] = []
        self._cards: dict[str, ToolCard] = {}
        self._card_parts: list[tuple[ToolCallPart, ToolCard]] = []
        self._waiting_cards: list[tuple[ToolCallPart, ToolCard]] = []
        # Cards of file calls that ran and whose diff of what changed is not here yet.
        self._change_cards: list[tuple[ToolCallPart, ToolCard]] = []

        role = role_label("Assistant", theme, self)
        self._status = muted_label("", theme, self, scale=0.92)
        role_row = QHBoxLayout()
        role_row.setContentsMargins(0, 0, 0, 0)
        role_row.addWidget(role)
        role_row.addWidget(self._status)
        role_row.addStretch(1)

        self._body = QVBoxLayout()
        self._body.setContentsMargins(0, 0, 0, 0)
        self._body.setSpacing(6)

        self._actions = QWidget(self)
        self.copy_button = action_button("Copy", theme, self._actions, self._copy)
        self.regenerate_button = action_button(
            "Regenerate", theme, self._actions, self.regenerate_requested.emit
        )
        self._branches: BranchSwitcher | None = None  # made when there are versions
        actions_layout = self._actions_layout = QHBoxLayout(self._actions)
        actions_layout.setContentsMargins(0, 0, 0, 0)
        actions_layout.setSpacing(2)
        self.set_branch(item.branch)
        actions_layout.addWidget(self.copy_button)
        actions_layout.addWidget(self.regenerate_button)
        actions_layout.addStretch(1)
        self._actions.setVisible(False)
        self.regenerate_button.setVisible(False)
        self._regenerate_allowed = False

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(role_row)
        layout.addLayout(self._body)
        layout.addWidget(self._actions)
        self.sync()

    # -- public ---------------------------------------------------------------

    @property
    def ended(self) -> bool:
        """True once the turn's final render is done."""
        return self._ended

    @property
    def branches(self) -> BranchSwitcher:
        """The ‹ n/m › switcher, made on first use.

        Most answers have one version; made up front, the hidden switcher cost
        ~27 kB per answer in every shown transcript (``bench/tab_memory.py``).
        """
        if self._branches is None:
            key = self.item.key
            self._branches = BranchSwitcher(self._theme, self._actions)
            self._branches.step.connect(lambda offset: self.branch_requested.emit(key, offset))
            self._actions_layout.insertWidget(0, self._branches)
        return self._branches

    def set_branch(self, branch: tuple[int, int] | None) -> None:
        """Show which version of the answer this is."""
        if self._branches is not None or (branch is not None and branch[1] > 1):
            self.branches.set_position(branch)

    def set_regenerate_visible(self, visible: bool) -> None:
        """Offer Regenerate (the view does so on the last finished turn only)."""
        self._regenerate_allowed = visible
        self.regenerate_button.setVisible(visible and self._ended)

    def sync(self) -> None:
        """Show whatever the item gained since the last call."""
        parts = self.item.parts
        while self._part_index < len(parts):
            part = parts[self._part_index]
            if isinstance(part, TextRun):
                if self._text_shown < part.length:
                    new_text = part.since(self._text_shown)
                    self._text_shown = part.length
                    self._append_run(part.kind, new_text)
                if self._part_index == len(parts) - 1 and self.item.open:
                    break  # the run may still grow
                self._close_run()
            elif isinstance(part, ToolCallPart):
                self._close_run()
                self._add_card(part)
            elif isinstance(part, ToolErrorPart):
                self._close_run()
                self._add_tool_error(part.text)
            elif isinstance(part, ReplyNotePart):
                self._close_run()
                self._add_reply_note(part.text)
            self._part_index += 1
            self._text_shown = 0
        if self._revision != self.item.revision:
            self._revision = self.item.revision
            self._update_cards()
        self._update_tail()
        if not self.item.open and not self._ended:
            self._end()

    def plain_text(self) -> str:
        """Everything visible in the turn as plain text (reasoning, answer, tool names)."""
        texts: list[str] = []
        for widget in self.body_widgets():
            if isinstance(widget, CodeBlockWidget):
                texts.append(widget.code())
            elif isinstance(widget, ThinkingSection):
                texts.append(widget.text())
            elif isinstance(widget, ToolCard):
                texts.append(widget.tool_name)
            elif isinstance(widget, FittedTextBrowser):
                texts.append(widget.toPlainText())
            elif isinstance(widget, QLabel):
                texts.append(widget.text())
        return "\n".join(text for text in texts if text)

    def body_widgets(self) -> list[QWidget]:
        """The part widgets in display order (for inspection)."""
        found = []
        for page in self._pages:
            for index in range(page.count()):
                layout_item = page.itemAt(index)
                widget = layout_item.widget() if layout_item is not None else None
                if widget is not None:
                    found.append(widget)
        if self._tail is not None and self._tail.isVisibleTo(self):
            found.append(self._tail)
        return found

    # -- text runs ------------------------------------------------------------

    def _append_run(self, kind: str, text: str) -> None:
        if self._run_kind != kind:
            self._close_run()
            self._run_kind = kind
            if kind == "thinking":
                self._thinking = ThinkingSection(self._theme, self)
                self._insert(self._thinking)
            else:
                self._fold_thinking()
                self._splitter = StreamingBlockSplitter()
        if kind == "thinking":
            assert self._thinking is not None
            self._thinking.append(text)
            return
        assert self._splitter is not None
        self._apply_events(self._splitter.feed(text))

    def _close_run(self) -> None:
        if self._splitter is not None:
            self._apply_events(self._splitter.finish())
            self._splitter = None
            self._chunk = None  # prose after this run starts a fresh chunk
            self._update_tail()
        if self._thinking is not None and self._run_kind == "thinking":
            self._thinking.finish()
        self._run_kind = None

    def _fold_thinking(self) -> None:
        if self._thinking is not None and self._thinking.header_button.text() != "Reasoning":
            self._thinking.finish()

    def _apply_events(self, events: list) -> None:  # type: ignore[type-arg]
        for event in events:
            if isinstance(event, ProseClosed):
                self._add_prose(event.text)
            elif isinstance(event, CodeOpened):
                self._show_chunk()
                self._chunk = None
                self._code = CodeBlockWidget(event.language, self._theme, self._scheduler, self)
                self._code.copied.connect(self.copy_requested)
                self._insert(self._code)
            elif isinstance(event, CodeText) and self._code is not None:
                self._code.append(event.text)
            elif isinstance(event, CodeClosed) and self._code is not None:
                self._code.finish()
                self._code = None
        self._show_chunk()

    def _add_prose(self, markdown: str) -> None:
        """Add a finished block's HTML to the open chunk; shown by :meth:`_show_chunk`."""
        html = self._renderer.render(markdown)
        if self._chunk is None or self._chunk_chars >= CHUNK_CHARS:
            self._show_chunk()
            self._chunk = prose_view(self)
            self._chunk_html = []
            self._chunk_chars = 0
            self._insert(self._chunk)
        self._chunk_html.append(html)
        self._chunk_chars += len(markdown)
        self._chunk_stale = True

    def _show_chunk(self) -> None:
        """Give the open chunk the HTML of its blocks, once for all the blocks just added.

        Why not at each block: a stored answer arrives whole, and setting the chunk's
        HTML per block parsed and laid out its first blocks again with each one after.
        """
        if self._chunk is not None and self._chunk_stale:
            self._chunk.setHtml("".join(self._chunk_html))
        self._chunk_stale = False

    def _update_tail(self) -> None:
        tail = self._splitter.prose_tail() if self._splitter is not None else ""
        if tail == self._tail_text:
            return
        self._tail_text = tail
        if not tail.strip():
            if self._tail is not None:
                self._tail.setVisible(False)
                self._tail.clear()
            return
        if self._tail is None:
            self._tail = prose_view(self)
            self._body.addWidget(self._tail)
        if len(tail) <= TAIL_MARKDOWN_CHARS:
            self._tail.setHtml(self._renderer.render(tail))
        else:
            self._tail.setHtml(plain_text_html(tail))
        self._tail.setVisible(True)

    def _insert(self, widget: QWidget) -> None:
        """Add a part widget at the end (in the last page), keeping the tail view last."""
        if not self._pages or self._pages[-1].count() >= PARTS_PER_PAGE:
            page = QWidget(self)
            page_layout = QVBoxLayout(page)
            page_layout.setContentsMargins(0, 0, 0, 0)
            page_layout.setSpacing(self._body.spacing())
            index = self._body.count()
            if self._tail is not None:
                index = self._body.indexOf(self._tail)
            self._body.insertWidget(index, page)
            self._pages.append(page_layout)
        self._pages[-1].addWidget(widget)

    # -- tools ----------------------------------------------------------------

    def _add_card(self, part: ToolCallPart) -> None:
        card = ToolCard(
            part.tool_use_id,
            part.name,
            part.arguments,
            self._theme,
            source=part.source,
            scheduler=self._scheduler,
            parent=self,
        )
        card.arguments_view.copied.connect(self.copy_requested)
        card.approval_answered.connect(self.approval_answered)
        card.approval_arguments_edited.connect(self.approval_arguments_edited)
        card.stop_requested.connect(self.tool_stop_requested)
        card.preview_decided.connect(self.preview_decided)
        self._cards[part.tool_use_id] = card
        self._card_parts.append((part, card))
        card.settled_seen = part.settled
        self._insert(card)
        if part.edited:
            card.set_arguments(part.arguments)
        card.set_outcome(part.outcome)
        if part.preview is not None and part.result is None:
            card.set_preview(*part.preview)
        card.set_change(part.change)
        card.set_command_preview(part.command_preview)
        card.set_subagent(part.subagent)
        if part.result is not None:
            card.set_result(part.result, part.is_error)
            card.set_live(part.live)  # "10,001 lines · 6.2 s" stays when the card is made again
            card.set_pictures(part.pictures)
        else:
            if part.status:
                card.set_status(part.status)
            card.show_approval(part.approval)
            card.set_live(part.live)
            self._waiting_cards.append((part, card))

    def _update_cards(self) -> None:
        still_waiting = []
        for part, card in self._waiting_cards:
            if format_arguments(part.arguments) != card.arguments_text or (
                    part.edited and not card.edited):
                card.set_arguments(part.arguments)
            card.set_outcome(part.outcome)
            card.show_approval(part.approval if part.result is None else None)
            if part.preview is not None and part.result is None:
                card.set_preview(*part.preview)
            card.set_subagent(part.subagent)  # a delegation's subagent, as it works
            if part.result is not None:
                card.set_live(part.live)  # the last report may have come in this frame
                card.set_result(part.result, part.is_error)
                card.set_pictures(part.pictures)
                if part.change is None and part.name in FILE_CHANGING_TOOLS \
                        and not part.is_error:
                    self._change_cards.append((part, card))  # its stored diff comes next
                card.set_change(part.change)
            else:
                if part.status:
                    card.set_status(part.status)
                card.set_live(part.live)
                still_waiting.append((part, card))
        self._waiting_cards = still_waiting
        for part, card in self._card_parts:
            if part.command_preview is not None:
                card.set_command_preview(part.command_preview)
            if card.settled_seen != part.settled and part.result is not None:
                # Its stored result changed after it was shown (the turn's end reconciled
                # it with what the model was sent): show it as the store has it.
                card.settled_seen = part.settled
                card.set_outcome(part.outcome)
                card.set_result(part.result, part.is_error)
        changing = []
        for part, card in self._change_cards:
            if part.change is None:
                changing.append((part, card))
            else:
                card.set_change(part.change)
        self._change_cards = changing

    def _add_tool_error(self, text: str) -> None:
        label = QLabel(text, self)
        set_text_color(label, self._theme.error_text)
        label.setWordWrap(True)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._insert(label)

    def _add_reply_note(self, text: str) -> None:
        label = QLabel(f"⚠ {text}", self)
        label.setObjectName("replyNote")
        set_text_color(label, self._theme.error_text)
        label.setWordWrap(True)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._insert(label)

    # -- end and actions --------------------------------------------------------

    def _end(self) -> None:
        self._close_run()
        self._fold_thinking()
        self._update_tail()
        if self._tail is not None:
            self._body.removeWidget(self._tail)
            self._tail.deleteLater()
            self._tail = None
        for _part, card in self._waiting_cards:
            if self.item.interrupted:
                card.detail_label.setText("stopped")
        self._ended = True
        if self.item.interrupted:
            self._status.setText("· stopped")
        self._actions.setVisible(True)
        self.regenerate_button.setVisible(self._regenerate_allowed)

    def _copy(self) -> None:
        text = self.item.markdown()
        QGuiApplication.clipboard().setText(text)
        self.copy_requested.emit(text)
