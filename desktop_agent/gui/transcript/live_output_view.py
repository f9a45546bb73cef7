"""The live view on a running command's card: its newest lines, figures, and Stop.

Why its own widget: output can arrive for minutes. The view keeps a fixed
number of lines (a QPlainTextEdit drops the oldest blocks itself), appends
only the pieces it has not shown, and is fed at most once per frame by the
transcript's scheduler, so a command printing 100 MB costs the window a
bounded amount of work per frame, not per line.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QColor, QFontDatabase, QPalette, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QVBoxLayout, QWidget

from desktop_agent.gui.transcript.ansi_text import AnsiReader
from desktop_agent.gui.transcript.items import LiveOutput
from desktop_agent.gui.transcript.painted_panel import PaintedPanel
from desktop_agent.gui.transcript.theme import TranscriptTheme
from desktop_agent.gui.transcript.widget_style import action_button, muted_label

#: Lines the view holds before it starts again from the item's kept tail.
LIVE_LINES = 300
#: Lines in sight at once.
VISIBLE_LINES = 12


def figures_text(live: LiveOutput) -> str:
    """How much the command printed and for how long ("1,234 lines · 3.2 s")."""
    noun = "line" if live.lines == 1 else "lines"
    return f"{live.lines:,} {noun} · {live.elapsed:.1f} s"


class LiveOutputView(QWidget):
    """The tail of a running command's output, its line count and elapsed time.

    Signals:
        stop_clicked(): Stop was clicked (end just this command).
    """

    stop_clicked = Signal()

    def __init__(self, theme: TranscriptTheme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("liveOutput")
        self._theme = theme
        self._reader = AnsiReader(theme.dark)
        self._seen = 0
        panel = PaintedPanel(self)
        panel.set_panel_colors(theme.code_background, radius=6)
        self.text_view = QPlainTextEdit(panel)
        self.text_view.setReadOnly(True)
        self.text_view.document().setUndoRedoEnabled(False)  # else a copy of all it printed
        # Not setMaximumBlockCount: it trims on every insert (~15 ms for 100 lines).
        # The view starts again from the item's tail instead once it holds LIVE_LINES.
        self.text_view.setFrameShape(QPlainTextEdit.Shape.NoFrame)
        self.text_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text_view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        palette = self.text_view.palette()  # opaque, no style sheet: cheap to repaint
        palette.setColor(QPalette.ColorRole.Base, QColor(theme.code_background))
        palette.setColor(QPalette.ColorRole.Text, QColor(theme.text))
        self.text_view.setPalette(palette)
        line = self.text_view.fontMetrics().lineSpacing()
        self.text_view.setFixedHeight(line * VISIBLE_LINES + 12)
        self.text_view.setAccessibleName("Live command output")
        panel_layout = QVBoxLayout(panel)
        panel_layout.setContentsMargins(6, 4, 6, 4)
        panel_layout.addWidget(self.text_view)

        self.figures_label = muted_label("", theme, self, scale=0.85)
        self.stop_button = action_button("Stop", theme, self, self._stop)
        self.stop_button.setToolTip("End just this command; the turn goes on")
        self.stop_button.setAccessibleName("Stop this command")
        footer = QHBoxLayout()
        footer.setContentsMargins(2, 0, 0, 0)
        footer.addWidget(self.figures_label)
        footer.addStretch(1)
        footer.addWidget(self.stop_button)
        self.stop_button.setVisible(False)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(18, 0, 0, 4)
        layout.setSpacing(2)
        layout.addWidget(panel)
        layout.addLayout(footer)

    def show_output(self, live: LiveOutput) -> None:
        """Bring the view up to ``live``: the new pieces, the figures, Stop."""
        pieces = live.since(self._seen)
        if pieces is None or (pieces and self.text_view.document().blockCount() > LIVE_LINES):
            # Behind the kept tail, or long enough to trim: start again from the tail.
            # (Cheaper than removing the oldest lines: that re-lays out the rest.)
            self.text_view.clear()
            self._reader = AnsiReader(self._theme.dark)
            pieces = list(live.pieces)
        self._seen = live.received
        if pieces:
            self._append("".join(pieces))
        self.figures_label.setText(figures_text(live) + (" · stopping…" if live.stop_asked
                                                          else ""))
        self.stop_button.setVisible(live.stoppable and not live.stop_asked)

    def plain_text(self) -> str:
        """The lines shown, escapes gone."""
        return self.text_view.toPlainText()

    def _append(self, text: str) -> None:
        bar = self.text_view.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 2
        cursor = QTextCursor(self.text_view.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.beginEditBlock()
        for run in self._reader.runs(text):
            fmt = QTextCharFormat()
            if run.colour is not None:
                fmt.setForeground(QColor(run.colour))
            if run.bold:
                fmt.setFontWeight(700)
            cursor.insertText(run.text, fmt)
        cursor.endEditBlock()
        if at_end:  # follow the end unless the person scrolled up to read
            bar.setValue(bar.maximum())

    def _stop(self) -> None:
        self.stop_button.setVisible(False)
        self.figures_label.setText(self.figures_label.text() + " · stopping…")
        self.stop_clicked.emit()
