"""The message box: a rounded frame holding the text, the paperclip and Send/Stop.

Why one frame: people know this shape from every chat app (the send button
inside the box, at the end of the text), and it keeps the column's width for
the words. The box takes files by the paperclip or by drag-and-drop and lists
them above the text; what a file becomes in the request is decided elsewhere
(:mod:`desktop_agent.gui.conversation.attachments`).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QSize, Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QKeyEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.icons import set_icon

#: Keys an open completion list answers instead of the text field.
_LIST_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Escape, Qt.Key.Key_Tab,
              Qt.Key.Key_Backtab)

MIN_LINES = 1
MAX_LINES = 8
ROUND_BUTTON = 32


def _no_list() -> bool:
    """No completion list is open (until one is attached)."""
    return False


class Composer(QPlainTextEdit):
    """The text field: Enter sends, Shift+Enter starts a new line.

    Signals:
        submitted(): The person pressed Enter.
        stop_requested(): The person pressed Esc.
        mode_cycle_requested(): The person pressed Shift+Tab: the next permission
            mode, as in Claude Code (focus moves back with the header's controls).

    Attributes:
        completing: Returns whether a completion list (``@`` files) is open; its
            keys (Enter, Tab, Esc) then belong to the list, not to Send or Stop.
    """

    submitted = Signal()
    stop_requested = Signal()
    mode_cycle_requested = Signal()
    # A class default: Qt calls event() while the widget is still being built.
    completing: Callable[[], bool] = staticmethod(_no_list)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("composer")
        self.setAccessibleName("Message")
        self.setPlaceholderText("Message the model — Enter to send, Shift+Enter for a new line")
        self.setTabChangesFocus(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAcceptDrops(False)  # the frame around takes dropped files
        self.document().contentsChanged.connect(self._fit_height)
        self._fit_height()

    def _fit_height(self) -> None:
        """Grow with the text from one to eight lines, then scroll."""
        lines = max(MIN_LINES, min(MAX_LINES, int(self.document().size().height())))
        margins = self.contentsMargins()
        extra = int(2 * self.document().documentMargin()) + margins.top() + margins.bottom()
        self.setFixedHeight(lines * self.fontMetrics().lineSpacing() + extra + 6)

    def event(self, event: QEvent) -> bool:
        """Leave Tab to an open list (it chooses) instead of moving the focus on."""
        if (self.completing() and event.type() == QEvent.Type.KeyPress
                and isinstance(event, QKeyEvent)
                and event.key() in (Qt.Key.Key_Tab, Qt.Key.Key_Backtab)):
            event.ignore()
            return False
        if (event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent)
                and event.key() == Qt.Key.Key_Backtab):
            self.mode_cycle_requested.emit()
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Send on Enter unless Shift (or an input method) asks for a new line."""
        if self.completing() and event.key() in _LIST_KEYS:
            event.ignore()  # the open list takes it (choose, close)
            return
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not (
                event.modifiers() & Qt.KeyboardModifier.ShiftModifier):
            self.submitted.emit()
            return
        if event.key() == Qt.Key.Key_Escape:
            self.stop_requested.emit()
            return
        super().keyPressEvent(event)


def _round_button(name: str, icon_name: str, tip: str, role: str | None) -> QToolButton:
    button = QToolButton()
    button.setObjectName(name)
    button.setAccessibleName(tip.split(" (")[0])
    button.setToolTip(tip)
    set_icon(button, icon_name, role)
    button.setIconSize(QSize(18, 18))
    button.setFixedSize(ROUND_BUTTON, ROUND_BUTTON)
    button.setCursor(Qt.CursorShape.PointingHandCursor)
    return button


class ComposerBox(QFrame):
    """The rounded box: attachment chips, the text, the paperclip, Send or Stop.

    Signals:
        send_requested(): Send was clicked or Enter pressed.
        stop_requested(): Stop was clicked or Esc pressed.
        mode_cycle_requested(): Shift+Tab in the text: the next permission mode.
        files_added(list): Paths (str) chosen with the paperclip or dropped.
        attachment_removed(int): The chip at this index was closed.
    """

    send_requested = Signal()
    stop_requested = Signal()
    mode_cycle_requested = Signal()
    files_added = Signal(list)
    attachment_removed = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("composerFrame")
        self.setAcceptDrops(True)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(10, 6, 8, 6)
        outer.setSpacing(4)
        self.chips = QWidget()
        self.chips.setObjectName("attachmentStrip")
        self._chip_layout = QHBoxLayout(self.chips)
        self._chip_layout.setContentsMargins(0, 0, 0, 0)
        self._chip_layout.setSpacing(6)
        self._chip_layout.addStretch(1)
        self.chips.hide()
        outer.addWidget(self.chips)

        row = QHBoxLayout()
        row.setSpacing(6)
        accent_text = "accent_text"
        self.attach_button = _round_button("attachButton", "paperclip",
                                           "Attach images or text files (or drop them here)",
                                           None)
        self.attach_button.clicked.connect(self.choose_files)
        self.text = Composer()
        self.text.submitted.connect(self.send_requested)
        self.text.stop_requested.connect(self.stop_requested)
        self.text.mode_cycle_requested.connect(self.mode_cycle_requested)
        self.text.installEventFilter(self)
        self.send_button = _round_button("sendButton", "arrow-up", "Send (Enter)", accent_text)
        self.send_button.clicked.connect(self.send_requested)
        self.stop_button = _round_button("stopButton", "square", "Stop the reply (Esc)",
                                         accent_text)
        self.stop_button.clicked.connect(self.stop_requested)
        self.stop_button.hide()
        row.addWidget(self.attach_button, 0, Qt.AlignmentFlag.AlignBottom)
        row.addWidget(self.text, 1)
        row.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignBottom)
        row.addWidget(self.stop_button, 0, Qt.AlignmentFlag.AlignBottom)
        outer.addLayout(row)

    def set_busy(self, busy: bool) -> None:
        """Show Stop while a reply runs, Send otherwise (same place, no jump)."""
        self.send_button.setVisible(not busy)
        self.send_button.setEnabled(not busy)
        self.stop_button.setVisible(busy)
        self.stop_button.setEnabled(busy)

    def show_attachments(self, names: list[str]) -> None:
        """One chip per attached file, each with a close button."""
        while self._chip_layout.count() > 1:
            item = self._chip_layout.takeAt(0)
            if item is not None and (widget := item.widget()) is not None:
                widget.deleteLater()
        for index, name in enumerate(names):
            chip = QWidget()
            layout = QHBoxLayout(chip)
            layout.setContentsMargins(0, 0, 0, 0)
            layout.setSpacing(2)
            label = QLabel(name)
            label.setObjectName("attachmentChip")
            remove = QToolButton()
            set_icon(remove, "x")
            remove.setAutoRaise(True)
            remove.setToolTip(f"Remove {name}")
            remove.setAccessibleName(f"Remove {name}")
            remove.clicked.connect(lambda _c=False, i=index: self.attachment_removed.emit(i))
            layout.addWidget(label)
            layout.addWidget(remove)
            self._chip_layout.insertWidget(index, chip)
        self.chips.setVisible(bool(names))

    def choose_files(self) -> None:
        """The paperclip: pick images or text files (non-blocking dialog)."""
        dialog = QFileDialog(self, "Attach files")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFiles)
        dialog.setNameFilters(["Images and text (*.png *.jpg *.jpeg *.gif *.webp *.txt *.md "
                               "*.py *.json *.csv *.log *.toml *.yaml *.yml *.html *.js *.ts)",
                               "All files (*)"])
        dialog.filesSelected.connect(lambda paths: self.files_added.emit(list(paths)))
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        """Accept dragged local files."""
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        """Attach dropped local files."""
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            self.files_added.emit(paths)
            event.acceptProposedAction()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Draw the frame's focus ring while the text has focus."""
        if watched is self.text and event.type() in (QEvent.Type.FocusIn,
                                                      QEvent.Type.FocusOut):
            self.setProperty("focused", event.type() == QEvent.Type.FocusIn)
            self.style().unpolish(self)
            self.style().polish(self)
        return super().eventFilter(watched, event)
