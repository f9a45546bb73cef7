"""A file diff on a tool card or in the Approvals dock: counts, words, and the lines.

The diff itself is worked out by the session (``workspace.diffs``); this view
only lays it out: "+12 −3" and a sentence on top, then the lines with both
line numbers, unified by default and side by side where there is room (or when
the person asks), coloured with the transcript's pygments style.

Why in slices: a 10,000-line diff is 20,000 rows; inserting, colouring and
lexing them at once holds the event loop for most of a second. The rows are
added a slice at a time on the transcript's :class:`FrameScheduler` (a few
milliseconds per frame), and only once the view is first shown, so a folded
"what changed" section costs nothing until it is opened.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import (
    QColor,
    QFontDatabase,
    QResizeEvent,
    QShowEvent,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
)
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.transcript.code_highlight import file_lexer_future, token_formats
from desktop_agent.gui.transcript.frame_scheduler import WAIT, FrameScheduler
from desktop_agent.gui.transcript.painted_panel import set_text_color
from desktop_agent.gui.transcript.theme import TranscriptTheme
from desktop_agent.workspace.diffs import DiffLine, FileDiff, side_by_side_rows

if TYPE_CHECKING:
    from pygments.lexer import Lexer

#: Rows added per slice: small enough that one slice stays well under a frame.
ROWS_PER_STEP = 40
#: Narrower than this, a diff is shown unified unless the person asks otherwise.
SIDE_BY_SIDE_MIN_WIDTH = 900
#: Rows visible before the lines scroll inside the view.
VISIBLE_ROWS = 18

#: One row: sign (" ", "+", "-", "@" for a hunk header, "" for a blank), gutter, code.
Row = tuple[str, str, str]


def unified_rows(diff: FileDiff) -> list[Row]:
    """Rows of the unified view: both line numbers, the sign, the code."""
    rows: list[Row] = []
    width = _number_width(diff)
    for hunk in diff.hunks:
        rows.append(("@", "", hunk.header))
        for line in hunk.lines:
            old = "" if line.old_no is None else str(line.old_no)
            new = "" if line.new_no is None else str(line.new_no)
            rows.append((line.sign, f"{old:>{width}} {new:>{width}} {line.sign} ", line.text))
    return rows


def split_rows(diff: FileDiff) -> tuple[list[Row], list[Row]]:
    """Rows of the two columns of the side-by-side view, kept in step."""
    left: list[Row] = []
    right: list[Row] = []
    width = _number_width(diff)
    for hunk in diff.hunks:
        left.append(("@", "", hunk.header))
        right.append(("@", "", ""))
        for pair in side_by_side_rows(hunk):
            left.append(_side_row(pair.left, pair.left.old_no if pair.left else None, width))
            right.append(_side_row(pair.right, pair.right.new_no if pair.right else None, width))
    return left, right


def _side_row(line: DiffLine | None, number: int | None, width: int) -> Row:
    if line is None:
        return ("", "", "")
    return (line.sign, f"{'' if number is None else number:>{width}} {line.sign} ", line.text)


def _number_width(diff: FileDiff) -> int:
    last = max((max(h.old_start + h.old_count, h.new_start + h.new_count) for h in diff.hunks),
               default=1)
    return len(str(last))


class DiffView(QWidget):
    """Counts, a sentence, and the diff's lines (unified or side by side).

    Attributes:
        rows_shown: Rows added to the view so far (all of them once rendering ends).
    """

    def __init__(self, theme: TranscriptTheme, scheduler: FrameScheduler | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("diffView")
        self._theme = theme
        self._scheduler = scheduler
        self._diff: FileDiff | None = None
        self._side_by_side: bool | None = None  # None: chosen by the width
        self._rendered_mode: bool | None = None
        self._generation = 0
        self.rows_shown = 0
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.setSpacing(4)
        top = QHBoxLayout()
        top.setSpacing(8)
        self.counts = QLabel(self)
        self.counts.setObjectName("diffCounts")
        self.counts.setTextFormat(Qt.TextFormat.RichText)
        self.summary = QLabel(self)
        self.summary.setObjectName("diffSummary")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        set_text_color(self.summary, theme.muted_text)
        self.mode_button = QToolButton(self)
        self.mode_button.setObjectName("diffMode")
        self.mode_button.setCheckable(True)
        self.mode_button.setAutoRaise(True)
        self.mode_button.setText("Side by side")
        self.mode_button.setToolTip("Show the old and new lines side by side")
        self.mode_button.toggled.connect(self._on_mode_toggled)
        top.addWidget(self.counts)
        top.addWidget(self.summary, 1)
        top.addWidget(self.mode_button)
        layout.addLayout(top)
        columns = QHBoxLayout()
        columns.setSpacing(4)
        self.left = self._editor()
        self.right = self._editor()
        self.right.hide()
        columns.addWidget(self.left)
        columns.addWidget(self.right)
        layout.addLayout(columns)
        # One scroll position for both columns.
        self.left.verticalScrollBar().valueChanged.connect(self.right.verticalScrollBar().setValue)
        self.right.verticalScrollBar().valueChanged.connect(self.left.verticalScrollBar().setValue)
        self.hide()

    def _editor(self) -> QPlainTextEdit:
        editor = QPlainTextEdit(self)
        editor.setObjectName("diffLines")
        editor.setReadOnly(True)
        editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        editor.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        editor.setFrameShape(QPlainTextEdit.Shape.NoFrame)
        editor.document().setDocumentMargin(4)
        editor.setStyleSheet(f"QPlainTextEdit {{ background: {self._theme.code_background}; "
                             f"color: {self._theme.text}; border-radius: 4px; }}")
        return editor

    # -- content ------------------------------------------------------------------------

    def set_diff(self, diff: FileDiff | None, problem: str | None = None) -> None:
        """Show ``diff`` (or, with no diff, why the call would fail)."""
        self._diff = diff
        if diff is None:
            self.counts.setText(f"<span style='color:{self._theme.error_text}'>"
                                "<b>Would fail</b></span>")
            self.summary.setText(problem or "")
            set_text_color(self.summary, self._theme.error_text)
        else:
            added, removed = _diff_colors(self._theme)
            self.counts.setText(
                f"<b><span style='color:{added}'>+{diff.added}</span> "
                f"<span style='color:{removed}'>\u2212{diff.removed}</span></b>")
            self.summary.setText(diff.summary)
            set_text_color(self.summary, self._theme.muted_text)
        has_lines = diff is not None and bool(diff.hunks)
        self.mode_button.setVisible(has_lines)
        self.left.setVisible(has_lines)
        self.right.setVisible(False)
        self._rendered_mode = None
        self._generation += 1
        self.rows_shown = 0
        self.left.clear()
        self.right.clear()
        self.setVisible(diff is not None or bool(problem))  # renders when it can be seen
        self._render()

    def diff(self) -> FileDiff | None:
        """The diff shown (None when a problem is shown instead)."""
        return self._diff

    @property
    def side_by_side(self) -> bool:
        """Whether the lines are shown in two columns."""
        if self._side_by_side is not None:
            return self._side_by_side
        return self.width() >= SIDE_BY_SIDE_MIN_WIDTH

    def set_side_by_side(self, on: bool | None) -> None:
        """Two columns (True), one (False), or by the width (None)."""
        self._side_by_side = on
        self._render()

    def showEvent(self, event: QShowEvent) -> None:
        """Render the lines the first time they can be seen."""
        super().showEvent(event)
        self._render()

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Switch between one and two columns as the width crosses the threshold."""
        super().resizeEvent(event)
        if self._rendered_mode is not None and self._side_by_side is None:
            self._render()

    def _on_mode_toggled(self, checked: bool) -> None:
        if checked != self.side_by_side:
            self.set_side_by_side(checked)

    # -- rendering in slices --------------------------------------------------------------

    def _render(self) -> None:
        diff = self._diff
        if diff is None or not diff.hunks or not self.isVisible():
            return
        mode = self.side_by_side
        if mode == self._rendered_mode:
            return
        self._rendered_mode = mode
        self._generation += 1
        self.rows_shown = 0
        self.mode_button.blockSignals(True)
        self.mode_button.setChecked(mode)
        self.mode_button.blockSignals(False)
        self.left.clear()
        self.right.clear()
        self.right.setVisible(mode)
        if mode:
            left, right = split_rows(diff)
            columns: list[tuple[QPlainTextEdit, list[Row]]] = [(self.left, left),
                                                                 (self.right, right)]
        else:
            columns = [(self.left, unified_rows(diff))]
        total = len(columns[0][1])
        height = self.left.fontMetrics().lineSpacing() * (min(total, VISIBLE_ROWS) + 1) + 12
        for editor, _rows in columns:
            editor.setFixedHeight(height)
        job = self._render_job(columns, diff.path, self._generation)
        if self._scheduler is None:
            for _ in job:
                pass
        else:
            self._scheduler.add_job(job)

    def _render_job(self, columns: Sequence[tuple[QPlainTextEdit, list[Row]]], path: str,
                    generation: int) -> Iterator[object]:
        loading = file_lexer_future(path)
        while not loading.done():
            yield WAIT
        lexer = loading.result()
        painter = _RowPainter(self._theme)
        total = len(columns[0][1])
        for start in range(0, total, ROWS_PER_STEP):
            if generation != self._generation:
                return  # a newer diff or mode replaced this one
            for editor, rows in columns:
                try:
                    painter.append(editor, rows[start:start + ROWS_PER_STEP], lexer,
                                   first=start == 0)
                except RuntimeError:
                    return  # the view was deleted before this slice
            self.rows_shown = min(total, start + ROWS_PER_STEP)
            yield None


class _RowPainter:
    """Appends rows to an editor, each piece inserted with its format.

    Why not insert and colour after: every format change on text already laid
    out lays its block out again; inserting each piece with its format (inside one
    edit block) lays the slice out once.
    """

    def __init__(self, theme: TranscriptTheme) -> None:
        added_text, removed_text = _diff_colors(theme)
        base = QColor(theme.code_background)
        self._blocks: dict[str, QTextBlockFormat] = {}
        for sign, color, amount in (("+", QColor(added_text), 0.16),
                                    ("-", QColor(removed_text), 0.16),
                                    ("@", QColor(theme.accent), 0.16),
                                    ("", QColor(theme.muted_text), 0.10)):
            fmt = QTextBlockFormat()
            fmt.setBackground(_tint(base, color, amount))
            self._blocks[sign] = fmt
        self._blocks[" "] = QTextBlockFormat()
        self._plain = QTextCharFormat()
        self._plain.setForeground(QColor(theme.text))
        self._gutter = QTextCharFormat()
        self._gutter.setForeground(QColor(theme.muted_text))
        self._header = QTextCharFormat()
        self._header.setForeground(QColor(theme.accent))
        self._formats = token_formats(theme.code_style)

    def append(self, editor: QPlainTextEdit, rows: Sequence[Row], lexer: Lexer,
               first: bool) -> None:
        """Add ``rows`` at the end of ``editor`` (``first``: into its empty first line)."""
        pieces = self._pieces(lexer, [text for _s, gutter, text in rows if gutter])
        cursor = QTextCursor(editor.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.beginEditBlock()
        code_row = 0
        for index, (sign, gutter, text) in enumerate(rows):
            block = self._blocks.get(sign, self._blocks[" "])
            if first and index == 0:
                cursor.setBlockFormat(block)
            else:
                cursor.insertBlock(block, self._plain)
            if sign == "@":
                cursor.insertText(text, self._header)
            elif gutter:
                cursor.insertText(gutter, self._gutter)
                for value, fmt in pieces[code_row]:
                    cursor.insertText(value, fmt)
                code_row += 1
        cursor.endEditBlock()

    def _pieces(self, lexer: Lexer, texts: list[str]) -> list[list[tuple[str, QTextCharFormat]]]:
        """Each text cut into coloured pieces, the slice lexed as one text (strings span lines)."""
        lines: list[list[tuple[str, QTextCharFormat]]] = [[]]
        for _index, token_type, value in lexer.get_tokens_unprocessed("\n".join(texts)):
            fmt = None
            kind = token_type
            while kind is not None and fmt is None:
                fmt = self._formats.get(kind)
                kind = kind.parent
            for number, part in enumerate(value.split("\n")):
                if number:
                    lines.append([])
                if part:
                    lines[-1].append((part, fmt or self._plain))
        while len(lines) < len(texts):
            lines.append([])
        return lines


def _diff_colors(theme: TranscriptTheme) -> tuple[str, str]:
    """Added and removed text colours that read on the theme's background."""
    return ("#3fb950", "#f85149") if theme.dark else ("#1a7f37", "#cf222e")


def _tint(base: QColor, color: QColor, amount: float = 0.16) -> QColor:
    return QColor(round(base.red() + (color.red() - base.red()) * amount),
                  round(base.green() + (color.green() - base.green()) * amount),
                  round(base.blue() + (color.blue() - base.blue()) * amount))
