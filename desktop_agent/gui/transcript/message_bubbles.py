"""The person's messages (right-aligned bubbles) and error notices."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontMetrics, QGuiApplication, QResizeEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.transcript.branch_switcher import BranchSwitcher
from desktop_agent.gui.transcript.items import ErrorItem, UserItem
from desktop_agent.gui.transcript.painted_panel import PaintedPanel, set_text_color
from desktop_agent.gui.transcript.text_views import FittedTextBrowser
from desktop_agent.gui.transcript.theme import TranscriptTheme
from desktop_agent.gui.transcript.widget_style import action_button, role_label

if TYPE_CHECKING:  # made when a message has pictures or is edited, not by an idle window
    from desktop_agent.gui.transcript.message_editor import MessageEditor
    from desktop_agent.gui.transcript.picture_strip import PictureStrip

#: A bubble takes at most this share of the transcript's width.
BUBBLE_WIDTH_SHARE = 0.8
_BUBBLE_PADDING = 28
#: The two ways back from a message's "Restore files" menu.
RESTORE_FILES = "Restore files to before this message"
RESTORE_AND_BRANCH = "Restore files and go back to here (a new branch)"


class UserMessageWidget(QWidget):
    """A sent message in a bubble that hugs its text, with Copy, Edit and Restore files.

    Edit swaps the bubble for an inline editor; sending from it emits the new text.
    "Restore files…" (offered once the conversation's tools have changed files)
    opens a menu: put the working folder back as it was before this message, or
    that and move the conversation back to here, so the next message starts a
    new branch beside the old one.

    The editor, the menu and the version switcher are made when first needed
    (:attr:`editor`, :attr:`restore_menu`, :attr:`branches`): almost every message
    in a transcript has none of them open, and made up front they were about 125
    of the ~200 kB a message cost (``bench/tab_memory.py``).

    Signals:
        edit_requested(str, str): item key and the edited text, when an edit is sent.
        copy_requested(str): Copy was clicked (the text is already on the clipboard).
        branch_requested(str, int): item key and -1/+1 (another version of the message).
        restore_requested(str, bool): item key, and whether to go back to here as well.
    """

    edit_requested = Signal(str, str)
    copy_requested = Signal(str)
    branch_requested = Signal(str, int)
    restore_requested = Signal(str, bool)

    def __init__(
        self, item: UserItem, theme: TranscriptTheme, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.item = item
        self.bubble = PaintedPanel(self)
        self.bubble.set_panel_colors(theme.user_bubble, radius=14)
        self.text_view = FittedTextBrowser(self.bubble)
        set_text_color(self.text_view, theme.user_bubble_text)
        self.text_view.setPlainText(item.text)
        self.text_view.setVisible(bool(item.text) or not item.pictures)
        bubble_layout = QVBoxLayout(self.bubble)
        bubble_layout.setContentsMargins(12, 8, 12, 8)
        bubble_layout.addWidget(self.text_view)
        self.pictures: PictureStrip | None = None
        if item.pictures:
            from desktop_agent.gui.transcript.picture_strip import PictureStrip

            self.pictures = PictureStrip(item.pictures, theme, self.bubble)
            bubble_layout.addWidget(self.pictures)

        role = role_label("You", theme, self)
        self.copy_button = action_button("Copy", theme, self, self._copy)
        self.edit_button = action_button("Edit", theme, self, self.start_editing)
        self.restore_button = action_button("Restore files\u2026", theme, self,
                                            self._open_restore_menu)
        self.restore_button.setToolTip("Put the working folder back as it was before this "
                                       "message")
        self.restore_button.setVisible(False)
        self._restore_offered = False
        self._theme = theme
        self._editor: MessageEditor | None = None
        self._restore_menu: QMenu | None = None
        self._branches: BranchSwitcher | None = None

        role_row = QHBoxLayout()
        role_row.addStretch(1)
        role_row.addWidget(role)
        self._bubble_row = QHBoxLayout()
        self._bubble_row.addStretch(1)
        self._bubble_row.addWidget(self.bubble)
        self._actions_row = QHBoxLayout()
        self._actions_row.setSpacing(2)
        self._actions_row.addStretch(1)
        self.set_branch(item.branch)
        actions_row = self._actions_row
        actions_row.addWidget(self.copy_button)
        actions_row.addWidget(self.edit_button)
        actions_row.addWidget(self.restore_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(role_row)
        layout.addLayout(self._bubble_row)
        layout.addLayout(actions_row)
        self._natural_width = self._measure_text_width()
        if self.pictures is not None:  # as wide as the thumbnails need, too
            self._natural_width = max(self._natural_width, self.pictures.sizeHint().width())

    def plain_text(self) -> str:
        """The message text."""
        return self.item.text

    @property
    def editor(self) -> MessageEditor:
        """The inline editor (hidden until Edit), made on first use."""
        if self._editor is None:
            from desktop_agent.gui.transcript.message_editor import MessageEditor

            self._editor = MessageEditor(self._theme, self)
            self._editor.setVisible(False)
            self._editor.submitted.connect(self._send_edit)
            self._editor.cancelled.connect(self.stop_editing)
            self._bubble_row.addWidget(self._editor, 4)
        return self._editor

    @property
    def restore_menu(self) -> QMenu:
        """The "Restore files…" menu, made on first use."""
        if self._restore_menu is None:
            key = self.item.key
            self._restore_menu = QMenu(self)
            self._restore_menu.addAction(RESTORE_FILES).triggered.connect(
                lambda: self.restore_requested.emit(key, False))
            self._restore_menu.addAction(RESTORE_AND_BRANCH).triggered.connect(
                lambda: self.restore_requested.emit(key, True))
        return self._restore_menu

    @property
    def branches(self) -> BranchSwitcher:
        """The ‹ n/m › switcher (hidden when the message has one version), made on first use."""
        if self._branches is None:
            key = self.item.key
            self._branches = BranchSwitcher(self._theme, self)
            self._branches.step.connect(lambda offset: self.branch_requested.emit(key, offset))
            self._actions_row.insertWidget(1, self._branches)  # after the stretch
        return self._branches

    def set_branch(self, branch: tuple[int, int] | None) -> None:
        """Show which version of the message this is."""
        if self._branches is not None or (branch is not None and branch[1] > 1):
            self.branches.set_position(branch)

    def offer_restore(self, offered: bool) -> None:
        """Show "Restore files…" (the conversation's tools have changed files)."""
        self._restore_offered = offered
        self.restore_button.setVisible(offered and not self.editing)

    def _open_restore_menu(self) -> None:
        # Right-aligned under the button: the message sits at the window's right edge.
        corner = self.restore_button.rect().bottomRight()
        corner.setX(corner.x() - self.restore_menu.sizeHint().width())
        self.restore_menu.popup(self.restore_button.mapToGlobal(corner))

    def _measure_text_width(self) -> int:
        metrics = QFontMetrics(self.text_view.font())
        widest = max((metrics.horizontalAdvance(line) for line in self.item.text.splitlines()),
                     default=0)
        return widest + 2 * int(self.text_view.document().documentMargin()) + 4

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Keep the bubble as narrow as its text, up to a share of the width."""
        super().resizeEvent(event)
        limit = int(event.size().width() * BUBBLE_WIDTH_SHARE)
        self.bubble.setFixedWidth(max(60, min(self._natural_width + _BUBBLE_PADDING, limit)))

    @property
    def editing(self) -> bool:
        """Whether the inline editor is open."""
        return self._editor is not None and not self._editor.isHidden()

    def start_editing(self) -> None:
        """Replace the bubble with an editor holding the message text."""
        self.bubble.setVisible(False)
        self.edit_button.setVisible(False)
        self.copy_button.setVisible(False)
        self.restore_button.setVisible(False)
        self.editor.setVisible(True)
        self.editor.start(self.item.text)

    def stop_editing(self) -> None:
        """Close the editor and show the bubble again."""
        if self._editor is not None:
            self._editor.setVisible(False)
        self.bubble.setVisible(True)
        self.edit_button.setVisible(True)
        self.copy_button.setVisible(True)
        self.restore_button.setVisible(self._restore_offered)

    def _send_edit(self, text: str) -> None:
        self.stop_editing()
        self.edit_requested.emit(self.item.key, text)

    def _copy(self) -> None:
        QGuiApplication.clipboard().setText(self.item.text)
        self.copy_requested.emit(self.item.text)


class ErrorNoticeWidget(PaintedPanel):
    """An error in words, with a Retry button when retrying makes sense.

    Signals:
        retry_requested(): Retry was clicked.
    """

    retry_requested = Signal()

    def __init__(
        self, item: ErrorItem, theme: TranscriptTheme, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.set_panel_colors(theme.error_background, theme.error_text)
        self.item = item
        icon = QLabel(self)
        size = self.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize)
        icon.setPixmap(
            self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning).pixmap(size, size)
        )
        icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.message_label = QLabel(item.text, self)
        set_text_color(self.message_label, theme.text)
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.retry_button = QPushButton("Retry", self)
        self.retry_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.retry_button.clicked.connect(self.retry_requested)
        self.retry_button.setVisible(item.retry)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        layout.setSpacing(10)
        layout.addWidget(icon)
        layout.addWidget(self.message_label, 1)
        layout.addWidget(self.retry_button, 0, Qt.AlignmentFlag.AlignTop)

    def plain_text(self) -> str:
        """The error text."""
        return self.item.text
