"""A fenced code block: language label, Copy button and highlighted code."""

from __future__ import annotations

from collections.abc import Iterator

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import QHBoxLayout, QVBoxLayout, QWidget

from desktop_agent.gui.transcript.code_highlight import highlight_job
from desktop_agent.gui.transcript.frame_scheduler import FrameScheduler
from desktop_agent.gui.transcript.painted_panel import PaintedPanel, set_text_color
from desktop_agent.gui.transcript.text_views import FittedPlainText
from desktop_agent.gui.transcript.theme import TranscriptTheme
from desktop_agent.gui.transcript.widget_style import action_button, muted_label

_HEADER_HEIGHT = 28


class CodeBlockWidget(PaintedPanel):
    """Shows code as it streams (plain), then highlighted once the block closes.

    Signals:
        copied(str): the code was put on the clipboard by the Copy button.
    """

    copied = Signal(str)

    def __init__(
        self,
        language: str,
        theme: TranscriptTheme,
        scheduler: FrameScheduler | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("codeBlock")
        self._language = language
        self._theme = theme
        self._scheduler = scheduler
        self._finished = False
        self.highlighted = False

        self.set_panel_colors(
            theme.code_background,
            theme.border,
            header_fill=theme.code_header,
            header_height=_HEADER_HEIGHT,
        )
        header = QWidget(self)
        header.setFixedHeight(_HEADER_HEIGHT)
        self._label = muted_label(language or "code", theme, header, scale=0.85)
        self._label.setAlignment(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft)
        self.copy_button = action_button("Copy", theme, header, self._copy)
        self.copy_button.setObjectName("codeCopy")
        self.copy_button.setToolTip("Copy code")
        header_layout = QHBoxLayout(header)
        header_layout.setContentsMargins(10, 0, 4, 0)
        header_layout.addWidget(self._label)
        header_layout.addStretch(1)
        header_layout.addWidget(self.copy_button)

        self.code_view = FittedPlainText(self)
        self.code_view.setObjectName("codeBody")
        self.code_view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        set_text_color(self.code_view, theme.text)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(1, 0, 1, 1)
        layout.setSpacing(0)
        layout.addWidget(header)
        layout.addWidget(self.code_view)

    @property
    def language(self) -> str:
        """The fence's info word ("" when none was given)."""
        return self._language

    def code(self) -> str:
        """The code as plain text (what Copy puts on the clipboard)."""
        return self.code_view.toPlainText().removesuffix("\n")

    def append(self, text: str) -> None:
        """Add streamed code text."""
        self.code_view.append_plain(text)

    def finish(self) -> None:
        """The block closed: highlight it (sliced over frames when scheduled)."""
        if self._finished:
            return
        self._finished = True
        job = self._highlight()
        if self._scheduler is None:
            for _ in job:
                pass
        else:
            self._scheduler.add_job(job)

    def _highlight(self) -> Iterator[object]:
        try:
            document = self.code_view.document()
        except RuntimeError:
            return  # deleted (scrolled out of the window or cleared) before its turn
        yield from highlight_job(
            document, document.toPlainText(), self._language, self._theme.code_style
        )
        self.highlighted = True

    def _copy(self) -> None:
        code = self.code()
        QGuiApplication.clipboard().setText(code)
        self.copied.emit(code)
        self.copy_button.setText("Copied")
        QTimer.singleShot(1500, self._reset_copy_label)

    def _reset_copy_label(self) -> None:
        self.copy_button.setText("Copy")
