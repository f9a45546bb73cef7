"""A fenced code block: language label, Copy button and highlighted code."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from desktop_agent.gui.transcript.code_highlight import highlight_job
from desktop_agent.gui.transcript.frame_scheduler import FrameScheduler
from desktop_agent.gui.transcript.text_views import FittedPlainText
from desktop_agent.gui.transcript.theme import TranscriptTheme


class CodeBlockWidget(QFrame):
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

        header = QWidget(self)
        header.setObjectName("codeHeader")
        self._label = QLabel(language or "code", header)
        self._label.setObjectName("codeLanguage")
        self.copy_button = QToolButton(header)
        self.copy_button.setObjectName("codeCopy")
        self.copy_button.setText("Copy")
        self.copy_button.setToolTip("Copy code")
        self.copy_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.copy_button.clicked.connect(self._copy)
        header_layout = QHBoxLayout(header)
        header_layout.setContentsMargins(10, 3, 6, 3)
        header_layout.addWidget(self._label)
        header_layout.addStretch(1)
        header_layout.addWidget(self.copy_button)

        self.code_view = FittedPlainText(self)
        self.code_view.setObjectName("codeBody")
        self.code_view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
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

    def _highlight(self):  # type: ignore[no-untyped-def]
        document = self.code_view.document()
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
