"""A download's progress: bytes, speed, time left, Cancel; then what went wrong and what next.

The bar names the file, fills as bytes arrive ("412 MB of 1.1 GB · 12.3 MB/s · 56 s
left"), and turns into a sentence when the download ends badly. The action offered
follows the engine's error type, never its words: a partial file kept (network gone,
disk full, cancelled) offers *Resume*; a checksum mismatch (file deleted) offers
*Download again*; a gated repository offers *Add token…*, then *Download again*.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.icons import current_palette, set_icon
from desktop_agent.gui.models.model_texts import size_text, speed_text, time_left_text

if TYPE_CHECKING:
    from desktop_agent.engine import DownloadError, DownloadProgress
    from desktop_agent.session import ModelDownload

#: The progress bar's resolution (bytes do not fit a Qt int for files over 2 GB).
STEPS = 1000


class DownloadBar(QFrame):
    """Shows one download from start to end.

    Signals:
        cancel_requested(): Cancel was clicked.
        retry_requested(object): Resume or download again this ``ModelDownload``.
        token_requested(): The repository is gated: the person wants to add a token.
    """

    cancel_requested = Signal()
    retry_requested = Signal(object)
    token_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("downloadBar")
        self._target: ModelDownload | None = None
        self._last: DownloadProgress | None = None
        self._error = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 10, 14, 10)
        layout.setSpacing(6)
        top = QHBoxLayout()
        self.title = QLabel()
        self.title.setObjectName("downloadTitle")
        self.figures = QLabel()
        self.figures.setObjectName("modelsSummary")
        top.addWidget(self.title, 1)
        top.addWidget(self.figures)
        layout.addLayout(top)
        self.progress = QProgressBar()
        self.progress.setRange(0, STEPS)
        self.progress.setTextVisible(False)
        layout.addWidget(self.progress)
        bottom = QHBoxLayout()
        self.message = QLabel()
        self.message.setWordWrap(True)
        bottom.addWidget(self.message, 1)
        self.token_button = QPushButton("Add token…")
        self.token_button.clicked.connect(self.token_requested)
        self.retry_button = QPushButton("Resume")
        set_icon(self.retry_button, "refresh-cw")
        self.retry_button.clicked.connect(self._retry)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel_requested)
        self.close_button = QPushButton("Dismiss")
        self.close_button.clicked.connect(self.hide)
        bottom.addStretch(0)
        for button in (self.token_button, self.retry_button, self.cancel_button,
                       self.close_button):
            button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
            bottom.addWidget(button)
        layout.addLayout(bottom)
        self.hide()

    @property
    def target(self) -> ModelDownload | None:
        """The download shown (the last one, once it ended)."""
        return self._target

    def start(self, target: ModelDownload) -> None:
        """A download of ``target`` began."""
        self._target = target
        self._last = None
        self.title.setText(f"Downloading {target.filename} from {target.repo_id}")
        self.figures.setText("starting…")
        self.progress.setRange(0, STEPS)
        self.progress.setValue(0)
        self._say("", error=False)
        self._buttons(cancel=True)
        self.show()

    def show_progress(self, progress: DownloadProgress) -> None:
        """A progress report: the bar, bytes, speed and time left."""
        self._last = progress
        total = progress.total_bytes
        if progress.verifying:
            self.title.setText(f"Checking {progress.filename}")
        elif self._target is not None:
            self.title.setText(f"Downloading {progress.filename} from {self._target.repo_id}")
        if total:
            self.progress.setRange(0, STEPS)
            self.progress.setValue(min(STEPS, round(progress.downloaded_bytes * STEPS / total)))
        else:
            self.progress.setRange(0, 0)  # busy: the hub did not say how big
        parts = [f"{size_text(progress.downloaded_bytes)} of {size_text(total)}"
                 if total else size_text(progress.downloaded_bytes)]
        if progress.verifying:
            parts.append("verifying the checksum")
        else:
            parts += [text for text in (speed_text(progress.bytes_per_second),
                                        time_left_text(progress.seconds_left)) if text]
        self.figures.setText(" · ".join(parts))

    def finish(self, sentence: str) -> None:
        """The download ended well; ``sentence`` says what happens next."""
        self.progress.setRange(0, STEPS)
        self.progress.setValue(STEPS)
        last = self._last
        self.figures.setText(size_text(last.total_bytes) if last is not None and
                             last.total_bytes else "")
        self._say(sentence, error=False)
        self._buttons(close=True)

    def fail(self, error: DownloadError) -> None:
        """The download ended badly: the engine's sentence and the action its type calls for."""
        from desktop_agent.engine import (
            ChecksumMismatchError,
            DiskFullError,
            DownloadCancelledError,
            DownloadInterruptedError,
            GatedModelError,
        )

        kept = isinstance(error, DownloadInterruptedError | DiskFullError |
                          DownloadCancelledError)
        gated = isinstance(error, GatedModelError)
        self.retry_button.setText("Resume" if kept else "Download again")
        cancelled = isinstance(error, DownloadCancelledError)
        self.title.setText(("Download cancelled: " if cancelled else "Download stopped: ")
                           + error.filename)
        last = self._last  # no speed or time left any more: what stays on disk, if anything
        self.figures.setText(f"{size_text(last.downloaded_bytes)} of "
                             f"{size_text(last.total_bytes)} kept"
                             if kept and last is not None and last.total_bytes else "")
        if not kept:
            self.progress.setValue(0)
        # A cancel is the person's own act: the title and the figures already say which file
        # and how much stays, so the line says only what Resume will do.
        self._say("Resume downloads the rest." if cancelled else str(error),
                  error=not cancelled)
        self._buttons(retry=kept or gated or isinstance(error, ChecksumMismatchError),
                      token=gated, close=True)

    def restyle(self) -> None:
        """Colour the sentence in the theme now in use."""
        self.message.setStyleSheet(f"color: {current_palette().danger};" if self._error else "")

    def _say(self, text: str, *, error: bool) -> None:
        self._error = error
        self.message.setText(text)
        self.message.setVisible(bool(text))
        self.restyle()

    def _buttons(self, *, cancel: bool = False, retry: bool = False, token: bool = False,
                 close: bool = False) -> None:
        self.cancel_button.setVisible(cancel)
        self.retry_button.setVisible(retry)
        self.token_button.setVisible(token)
        self.close_button.setVisible(close)

    def _retry(self) -> None:
        if self._target is not None:
            self.retry_requested.emit(self._target)
