"""A file diff on a tool card or in the Approvals dock: counts, words, and the lines.

The diff itself is worked out by the session (``workspace.diffs``); this view
only lays it out: "+12 −3" and a sentence on top, then the lines with both
line numbers, unified by default and side by side where there is room (or when
the person asks), coloured with the transcript's pygments style.

The lines are a :class:`~desktop_agent.gui.transcript.diff_lines.DiffLines`,
which paints only the rows in view: a 20,000-row diff shows as fast as a short
one, and a folded "what changed" section costs nothing until it is opened.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QResizeEvent, QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from desktop_agent.gui.transcript.code_highlight import file_lexer_future
from desktop_agent.gui.transcript.diff_lines import (
    BLANK_ROW,
    GUTTER_BOTH,
    GUTTER_NEW,
    GUTTER_OLD,
    DiffLines,
    DiffRow,
    PlainRow,
    diff_colors,
)
from desktop_agent.gui.transcript.frame_scheduler import WAIT, FrameScheduler
from desktop_agent.gui.transcript.painted_panel import set_text_color
from desktop_agent.gui.transcript.theme import TranscriptTheme

if TYPE_CHECKING:
    from desktop_agent.workspace.diffs import FileDiff

#: Narrower than this, a diff is shown unified unless the person asks otherwise.
SIDE_BY_SIDE_MIN_WIDTH = 900
#: Rows visible before the lines scroll inside the view.
VISIBLE_ROWS = 18
#: Rows a filling view keeps however little room its panel has.
MIN_FILL_ROWS = 4


def unified_rows(diff: FileDiff) -> list[DiffRow]:
    """Rows of the unified view: each hunk's header, then its lines as they are."""
    rows: list[DiffRow] = []
    for hunk in diff.hunks:
        rows.append(PlainRow("@", None, None, hunk.header))
        rows.extend(hunk.lines)
    return rows


def split_rows(diff: FileDiff) -> tuple[list[DiffRow], list[DiffRow]]:
    """Rows of the two columns of the side-by-side view, kept in step."""
    from desktop_agent.workspace.diffs import side_by_side_rows  # loaded with the diff

    left: list[DiffRow] = []
    right: list[DiffRow] = []
    for hunk in diff.hunks:
        left.append(PlainRow("@", None, None, hunk.header))
        right.append(PlainRow("@", None, None, ""))
        for pair in side_by_side_rows(hunk):
            left.append(pair.left or BLANK_ROW)
            right.append(pair.right or BLANK_ROW)
    return left, right


def number_width(diff: FileDiff) -> int:
    """Digits of the largest line number the diff shows."""
    last = max((max(h.old_start + h.old_count, h.new_start + h.new_count) for h in diff.hunks),
               default=1)
    return len(str(last))


class DiffView(QWidget):
    """Counts, a sentence, and the diff's lines (unified or side by side).

    On a card the lines take the height of their rows (up to :data:`VISIBLE_ROWS`),
    since the transcript scrolls; in a panel of fixed height (the Approvals dock)
    ``fill`` lets them take the room there is and scroll inside, so the panel's
    other parts are never pushed over each other on a short screen.

    Attributes:
        rows_shown: Rows the lines view holds (0 until the diff is first shown).
    """

    def __init__(self, theme: TranscriptTheme, scheduler: FrameScheduler | None = None,
                 parent: QWidget | None = None, *, fill: bool = False) -> None:
        super().__init__(parent)
        self.setObjectName("diffView")
        self._fill = fill
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
        self.left = DiffLines(theme, GUTTER_BOTH, scheduler, self)
        self.right = DiffLines(theme, GUTTER_NEW, scheduler, self)
        self.right.hide()
        columns.addWidget(self.left)
        columns.addWidget(self.right)
        layout.addLayout(columns)
        # One scroll position for both columns.
        self.left.verticalScrollBar().valueChanged.connect(self.right.verticalScrollBar().setValue)
        self.right.verticalScrollBar().valueChanged.connect(self.left.verticalScrollBar().setValue)
        self.hide()

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
            added, removed = diff_colors(self._theme)
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
        self.left.set_rows((), 1)
        self.right.set_rows((), 1)
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

    # -- rendering ------------------------------------------------------------------------

    def _render(self) -> None:
        diff = self._diff
        if diff is None or not diff.hunks or not self.isVisible():
            return
        mode = self.side_by_side
        if mode == self._rendered_mode:
            return
        self._rendered_mode = mode
        self._generation += 1
        self.mode_button.blockSignals(True)
        self.mode_button.setChecked(mode)
        self.mode_button.blockSignals(False)
        self.right.setVisible(mode)
        width = number_width(diff)
        if mode:
            left, right = split_rows(diff)
            self.left.set_gutter(GUTTER_OLD)
            self.left.set_rows(left, width)
            self.right.set_rows(right, width)
        else:
            left = unified_rows(diff)
            self.left.set_gutter(GUTTER_BOTH)
            self.left.set_rows(left, width)
        self.left.copy_source = self.right.copy_source = diff.unified_text
        rows = min(len(left), VISIBLE_ROWS)
        height = self.left.row_height() * (rows + 1) + 12
        for lines in (self.left, self.right):
            if self._fill:
                lines.setMinimumHeight(self.left.row_height() * (MIN_FILL_ROWS + 1) + 12)
                lines.setMaximumHeight(height)
            else:
                lines.setFixedHeight(height)
        self.rows_shown = len(left)
        if self._scheduler is None:
            lexer = file_lexer_future(diff.path).result()
            self.left.set_lexer(lexer)
            self.right.set_lexer(lexer)
        else:
            self._scheduler.add_job(self._colour_job(diff.path, self._generation))

    def _colour_job(self, path: str, generation: int) -> Iterator[object]:
        """Hand the file's lexer to the lines once it has loaded (off the GUI thread)."""
        loading = file_lexer_future(path)
        while not loading.done():
            yield WAIT
        if generation != self._generation:
            return  # a newer diff or mode replaced this one
        lexer = loading.result()
        try:
            self.left.set_lexer(lexer)
            self.right.set_lexer(lexer)
        except RuntimeError:
            return  # the view was deleted before the lexer arrived
