"""The lines of a diff, painted only where they can be seen.

Why not a ``QPlainTextEdit``: a 10,000-line file rewritten is 20,000 rows, and a
text document lays out and keeps every row it is given. Even added a slice per
frame, each slice relaid the growing document and held the window for tens to
hundreds of milliseconds. Here the rows stay Python data (the diff's own line
tuples), the scroll bars count rows, and a paint draws the few dozen rows in
view: showing a diff costs the same for ten lines as for twenty thousand.
Colours come from pygments, lexed a block of rows at a time when a block is
first painted and kept. With a frame scheduler the lexing happens in the
scheduler's slices (one block per slice) and the rows are painted plain until
their colours are ready, so scrolling never waits for pygments.

The coloured pieces are kept as one flat tuple per row (text, style number,
text, style number...), the styles (which hold a ``QColor`` and a ``QFont``) in
one list. Why: a tuple that holds only strings and integers is dropped from the
garbage collector's lists the first time a young collection sees it, while a
list, or a tuple holding a Qt wrapper or a tuple not yet dropped, stays tracked.
A fully rewritten 10,000-line file makes about 200,000 pieces; kept as
``[(text, style)]`` lists they made every full collection walk them all
(``bench/diff_render.py`` measured 20-50 ms pauses in the colouring slices);
flat tuples cost the collector nothing after their first young collection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol, cast

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import (
    QColor,
    QContextMenuEvent,
    QFont,
    QFontDatabase,
    QGuiApplication,
    QPainter,
    QPaintEvent,
    QResizeEvent,
)
from PySide6.QtWidgets import QAbstractScrollArea, QFrame, QMenu, QWidget

from desktop_agent.gui.transcript.code_highlight import token_formats
from desktop_agent.gui.transcript.frame_scheduler import FrameScheduler
from desktop_agent.gui.transcript.theme import TranscriptTheme

if TYPE_CHECKING:
    from pygments.lexer import Lexer
    from pygments.token import _TokenType

#: Rows lexed together (strings and comments that span lines colour right within a
#: block); small enough that one block lexes in a few milliseconds.
LEX_BLOCK_ROWS = 16
#: Spaces a tab stands for, so columns line up in the monospace view.
TAB_WIDTH = 4
#: Room left of the gutter and right of the longest line, in pixels.
MARGIN = 4


class DiffRow(Protocol):
    """One painted row: ``sign`` is " ", "+", "-", "@" (a hunk header) or "" (a blank).

    :class:`desktop_agent.workspace.diffs.DiffLine` has this shape, so the diff's
    own line tuples are rows as they are (no copy per line).
    """

    @property
    def sign(self) -> str: ...
    @property
    def old_no(self) -> int | None: ...
    @property
    def new_no(self) -> int | None: ...
    @property
    def text(self) -> str: ...


class PlainRow(NamedTuple):
    """A row that is not one of the diff's lines: a hunk header or a blank."""

    sign: str
    old_no: int | None
    new_no: int | None
    text: str


#: The blank row that keeps the two columns of a side-by-side view in step.
BLANK_ROW = PlainRow("", None, None, "")


#: Which line numbers the gutter shows: both (unified), the old side or the new side.
GUTTER_BOTH, GUTTER_OLD, GUTTER_NEW = "both", "old", "new"


class _Style(NamedTuple):
    color: QColor
    font: QFont


#: One row's coloured pieces, flat: text, its style's index in the view's style list,
#: text, index, and so on. One tuple of strings and integers per row, so the collector
#: stops tracking it the first time it sees it (see the module doc).
RowPieces = tuple[str | int, ...]
#: The style number of uncoloured text.
PLAIN_STYLE = 0


def diff_colors(theme: TranscriptTheme) -> tuple[str, str]:
    """Added and removed text colours that read on the theme's background."""
    return ("#3fb950", "#f85149") if theme.dark else ("#1a7f37", "#cf222e")


def tint(base: QColor, color: QColor, amount: float = 0.16) -> QColor:
    """``base`` moved ``amount`` of the way towards ``color`` (row backgrounds)."""
    return QColor(round(base.red() + (color.red() - base.red()) * amount),
                  round(base.green() + (color.green() - base.green()) * amount),
                  round(base.blue() + (color.blue() - base.blue()) * amount))


class DiffLines(QAbstractScrollArea):
    """A scrolling list of diff rows that paints only the rows in view.

    Attributes:
        copy_source: Makes the text "Copy diff" in the context menu puts on the
            clipboard (made only when asked: a long diff's text is not free).
    """

    def __init__(self, theme: TranscriptTheme, gutter: str = GUTTER_BOTH,
                 scheduler: FrameScheduler | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("diffLines")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self._theme = theme
        self._gutter_kind = gutter
        self._rows: Sequence[DiffRow] = ()
        self._number_width = 1
        self._widest = 0
        self._lexer: Lexer | None = None
        self._lexed: dict[int, RowPieces] = {}  # by row, once its block is lexed
        self._lexed_blocks: set[int] = set()
        self._scheduler = scheduler
        self._to_lex: list[int] = []  # blocks waiting for the scheduler, in paint order
        self._lex_generation = 0
        self.copy_source: Callable[[], str] | None = None
        base = QColor(theme.code_background)
        added, removed = (QColor(c) for c in diff_colors(theme))
        self._background = base
        self._row_backgrounds = {"+": tint(base, added), "-": tint(base, removed),
                                 "@": tint(base, QColor(theme.accent)),
                                 "": tint(base, QColor(theme.muted_text), 0.10)}
        self._text_color = QColor(theme.text)
        self._gutter_color = QColor(theme.muted_text)
        self._header_color = QColor(theme.accent)
        self._plain = _Style(self._text_color, self.font())
        self._style_list: list[_Style] = [self._plain]  # PLAIN_STYLE first
        self._style_numbers: dict[_TokenType, int] = {}

    # -- content ----------------------------------------------------------------------------

    def set_rows(self, rows: Sequence[DiffRow], number_width: int) -> None:
        """Show ``rows``; line numbers are right-aligned to ``number_width`` digits."""
        self._rows = rows
        self._number_width = number_width
        self._forget_colours()
        # One pass over the texts for the horizontal scroll range (C-speed max/len).
        self._widest = max(map(len, (row.text for row in rows)), default=0)
        self._update_scroll_ranges()
        self.verticalScrollBar().setValue(0)
        self.horizontalScrollBar().setValue(0)
        self.viewport().update()

    def set_gutter(self, gutter: str) -> None:
        """Show both line numbers (unified) or one side's (a side-by-side column)."""
        self._gutter_kind = gutter
        self._update_scroll_ranges()
        self.viewport().update()

    def set_lexer(self, lexer: Lexer) -> None:
        """Colour code with ``lexer`` from the next paint on."""
        self._lexer = lexer
        self._forget_colours()
        self.viewport().update()

    def row_texts(self) -> list[str]:
        """Each row as it reads on screen: the hunk header, or numbers, sign and code."""
        return [row.text if row.sign in ("@", "") else self._gutter(row) + row.text
                for row in self._rows]

    def row_count(self) -> int:
        """Rows in the view (painted or not)."""
        return len(self._rows)

    def row_height(self) -> int:
        """Height of one row in pixels."""
        return self.fontMetrics().lineSpacing()

    def visible_rows(self) -> range:
        """Indexes of the rows a paint draws now."""
        first = self.verticalScrollBar().value()
        shown = self.viewport().height() // max(1, self.row_height()) + 1
        return range(first, min(len(self._rows), first + shown))

    # -- Qt ---------------------------------------------------------------------------------

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Scroll ranges follow the viewport's size."""
        super().resizeEvent(event)
        self._update_scroll_ranges()

    def paintEvent(self, event: QPaintEvent) -> None:
        """Draw the rows in view, nothing else."""
        painter = QPainter(self.viewport())
        rect = self.viewport().rect()
        painter.fillRect(rect, self._background)
        metrics = self.fontMetrics()
        height = metrics.lineSpacing()
        ascent = metrics.ascent()
        char = max(1, metrics.horizontalAdvance("0"))
        left = MARGIN - self.horizontalScrollBar().value()
        top = 0
        for index in self.visible_rows():
            row = self._rows[index]
            background = self._row_backgrounds.get(row.sign)
            if background is not None:
                painter.fillRect(0, top, rect.width(), height, background)
            baseline = top + ascent
            if row.sign == "@":
                painter.setPen(self._header_color)
                painter.drawText(QPoint(left, baseline), row.text)
            elif row.sign:
                gutter = self._gutter(row)
                painter.setPen(self._gutter_color)
                painter.drawText(QPoint(left, baseline), gutter)
                x = left + len(gutter) * char
                pieces = self._pieces(index)
                for at in range(0, len(pieces), 2):
                    text = cast(str, pieces[at])
                    style = self._style_list[cast(int, pieces[at + 1])]
                    painter.setPen(style.color)
                    painter.setFont(style.font)
                    painter.drawText(QPoint(x, baseline), text)
                    x += len(text) * char
                painter.setFont(self.font())
            top += height
        painter.end()

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        """Offer to copy the whole diff as text (the painted rows are not selectable)."""
        menu = QMenu(self)
        action = menu.addAction("Copy diff")
        source = self.copy_source
        action.setEnabled(source is not None)
        if source is not None:
            action.triggered.connect(lambda: QGuiApplication.clipboard().setText(source()))
        menu.exec(event.globalPos())

    # -- internals --------------------------------------------------------------------------

    def _update_scroll_ranges(self) -> None:
        height = max(1, self.row_height())
        in_view = max(1, self.viewport().height() // height)
        vertical = self.verticalScrollBar()
        vertical.setRange(0, max(0, len(self._rows) - in_view))
        vertical.setPageStep(in_view)
        vertical.setSingleStep(1)
        char = max(1, self.fontMetrics().horizontalAdvance("0"))
        gutter = len(self._gutter(PlainRow(" ", 0, 0, "")))
        content = (gutter + self._widest) * char + 2 * MARGIN
        horizontal = self.horizontalScrollBar()
        horizontal.setRange(0, max(0, content - self.viewport().width()))
        horizontal.setPageStep(self.viewport().width())
        horizontal.setSingleStep(char * 4)

    def _gutter(self, row: DiffRow) -> str:
        width = self._number_width
        old = "" if row.old_no is None else str(row.old_no)
        new = "" if row.new_no is None else str(row.new_no)
        if self._gutter_kind == GUTTER_OLD:
            return f"{old:>{width}} {row.sign} "
        if self._gutter_kind == GUTTER_NEW:
            return f"{new:>{width}} {row.sign} "
        return f"{old:>{width}} {new:>{width}} {row.sign} "

    def _forget_colours(self) -> None:
        self._lexed.clear()
        self._lexed_blocks.clear()
        self._to_lex.clear()
        self._lex_generation += 1

    def _pieces(self, index: int) -> RowPieces:
        pieces = self._lexed.get(index)
        if pieces is not None:
            return pieces
        block = index // LEX_BLOCK_ROWS
        if block in self._lexed_blocks:
            return ()  # lexed: a row with no text
        if self._scheduler is None or self._lexer is None:
            self._lex_block(block)
            return self._lexed.get(index, ())
        if block not in self._to_lex:
            if not self._to_lex:
                self._scheduler.add_job(self._lex_job(self._lex_generation))
            self._to_lex.append(block)
        text = self._rows[index].text.expandtabs(TAB_WIDTH)
        return (text, PLAIN_STYLE) if text else ()

    def _lex_job(self, generation: int) -> Iterator[object]:
        """Colour the blocks painted plain, one per scheduler slice, then repaint."""
        while self._to_lex and generation == self._lex_generation:
            block = self._to_lex.pop(0)
            if block not in self._lexed_blocks:
                self._lex_block(block)
            if not self._to_lex:
                try:
                    self.viewport().update()
                except RuntimeError:
                    return  # the view was deleted meanwhile
            yield None

    def _lex_block(self, block: int) -> None:
        """Cut the block's rows into coloured pieces, kept by row; rows without code get none.

        The lists used while cutting are thrown away; what is kept is one flat
        tuple of strings and numbers per row (see the module doc).
        """
        start = block * LEX_BLOCK_ROWS
        rows = self._rows[start:start + LEX_BLOCK_ROWS]
        code = [index for index, row in enumerate(rows) if row.sign and row.sign != "@"]
        texts = [rows[index].text.expandtabs(TAB_WIDTH) for index in code]
        self._lexed_blocks.add(block)
        if self._lexer is None:
            for index, text in zip(code, texts, strict=True):
                if text:
                    self._lexed[start + index] = (text, PLAIN_STYLE)
            return
        lines: list[list[str | int]] = [[]]
        for _offset, token_type, value in self._lexer.get_tokens_unprocessed("\n".join(texts)):
            style = self._style_number(token_type)
            for number, part in enumerate(value.split("\n")):
                if number:
                    lines.append([])
                if part:
                    lines[-1] += (part, style)
        for position, index in enumerate(code):
            if position < len(lines) and lines[position]:
                self._lexed[start + index] = tuple(lines[position])

    def _style_number(self, token_type: _TokenType) -> int:
        """The number of the token type's style in :attr:`_style_list` (added when new)."""
        number = self._style_numbers.get(token_type)
        if number is None:
            style = self._style(token_type)
            number = PLAIN_STYLE if style is self._plain else len(self._style_list)
            if number:
                self._style_list.append(style)
            self._style_numbers[token_type] = number
        return number

    def _style(self, token_type: _TokenType) -> _Style:
        """The colour and font of a token type (made anew: ``_style_number`` keeps them)."""
        formats = token_formats(self._theme.code_style)
        kind: _TokenType | None = token_type
        fmt = None
        while kind is not None and fmt is None:
            fmt = formats.get(kind)
            kind = kind.parent
        if fmt is None:
            return self._plain
        font = QFont(self.font())
        font.setBold(fmt.fontWeight() >= QFont.Weight.Bold)
        font.setItalic(fmt.fontItalic())
        color = fmt.foreground().color() if fmt.foreground().style() != Qt.BrushStyle.NoBrush \
            else self._text_color
        return _Style(color, font)
