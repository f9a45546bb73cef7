"""Files changed in a conversation, turn by turn, each file with its diff; undo or restore.

A window of its own (not modal): the turns that changed files, newest first,
each with its files; choosing a file shows its diff. The buttons report what
the person wants (undo that turn, restore files to before it, optionally
going back in the conversation too); the tab carries it out.

Hidden, it keeps no diffs: every turn's files with their diff lines (and the
diff shown) would otherwise stay in memory for as long as the conversation's
tab lives, each turn that changed files adding to them. Shown again, it asks
for the turns anew (``turns_wanted``), which also shows changes made meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QHideEvent, QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.conversation.folder_undo_actions import TurnFiles, turn_summary
from desktop_agent.gui.transcript.diff_view import DiffView
from desktop_agent.gui.transcript.theme import TranscriptTheme

_TURN = Qt.ItemDataRole.UserRole
_CHANGE_WORDS = {"added": "new", "modified": "changed", "deleted": "deleted"}


class FilesChangedPanel(QDialog):
    """The Files changed window of one conversation.

    Signals:
        undo_requested(str): Undo this turn (its id).
        restore_requested(str, bool): Restore files to before this message (its id),
            and whether to go back in the conversation too (a new branch).
        turns_wanted(): Shown with no turns held (first shown, or shown again
            after it dropped them on hiding): :meth:`set_turns` is wanted.
    """

    undo_requested = Signal(str)
    restore_requested = Signal(str, bool)
    turns_wanted = Signal()

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("filesChangedPanel")
        self.setWindowTitle(f"Files changed — {title}")
        self.resize(980, 620)
        self._turns: list[TurnFiles] = []
        self._holds_turns = False
        layout = QVBoxLayout(self)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        self.tree = QTreeWidget()
        self.tree.setHeaderHidden(True)
        self.tree.currentItemChanged.connect(self._show_current)
        splitter.addWidget(self.tree)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(6, 0, 0, 0)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        right_layout.addWidget(self.summary)
        self.diff_view = DiffView(TranscriptTheme.from_palette(self.palette()), parent=right)
        right_layout.addWidget(self.diff_view)
        right_layout.addStretch(1)
        splitter.addWidget(right)
        splitter.setSizes([330, 650])
        layout.addWidget(splitter, 1)
        self.empty = QLabel("No turn of this conversation has changed files yet.")
        layout.addWidget(self.empty)
        row = QHBoxLayout()
        self.branch_box = QCheckBox("Also go back in the conversation (a new branch)")
        row.addWidget(self.branch_box)
        row.addStretch(1)
        self.undo_button = QPushButton("Undo this turn")
        self.undo_button.clicked.connect(self._undo)
        self.restore_button = QPushButton("Restore files to before this turn")
        self.restore_button.clicked.connect(self._restore)
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        for button in (self.undo_button, self.restore_button, close):
            row.addWidget(button)
        layout.addLayout(row)
        self._update_buttons()

    @property
    def holds_turns(self) -> bool:
        """Whether the turns (and their diffs) are in memory (only while shown)."""
        return self._holds_turns

    def set_turns(self, turns: Sequence[TurnFiles]) -> None:
        """Show these turns (newest first); the first file of the newest is chosen.

        Ignored while hidden (a list that came after the panel was closed):
        it would be held unseen, and is asked for again when shown.
        """
        if not self.isVisible():
            return
        self._holds_turns = True
        self._fill(turns)

    def showEvent(self, event: QShowEvent) -> None:
        """Ask for the turns when shown without them."""
        super().showEvent(event)
        if not self._holds_turns:
            self.turns_wanted.emit()

    def hideEvent(self, event: QHideEvent) -> None:
        """Drop the turns and their diffs: hidden, nobody reads them."""
        super().hideEvent(event)
        self._fill([])
        self._holds_turns = False

    def _fill(self, turns: Sequence[TurnFiles]) -> None:
        self._turns = list(turns)
        self.tree.clear()
        for index, turn in enumerate(self._turns):
            top = QTreeWidgetItem([f"{turn.label} — {turn_summary(turn.changes)}"])
            top.setData(0, _TURN, (index, None))
            top.setToolTip(0, turn.label)
            for position, view in enumerate(turn.files):
                counts = f"  {view.diff.counts}" if view.diff is not None and view.diff.hunks \
                    else ""
                change = _CHANGE_WORDS.get(view.change, view.change)
                noun = {"dir": " folder", "link": " link"}.get(view.kind, "")
                child = QTreeWidgetItem([f"{change}{noun}  {view.path}{counts}"])
                child.setData(0, _TURN, (index, position))
                top.addChild(child)
            self.tree.addTopLevelItem(top)
            top.setExpanded(index == 0)
        self.empty.setVisible(not self._turns)
        first = self.tree.topLevelItem(0)
        if first is not None:
            self.tree.setCurrentItem(first.child(0) or first)
        else:
            self.summary.clear()
            self.diff_view.set_diff(None)
        self._update_buttons()

    def selected_turn(self) -> TurnFiles | None:
        """The turn of the chosen row."""
        item = self.tree.currentItem()
        if item is None:
            return None
        index, _position = item.data(0, _TURN)
        chosen: TurnFiles = self._turns[index]
        return chosen

    def _show_current(self, item: QTreeWidgetItem | None, _previous: object = None) -> None:
        self._update_buttons()
        if item is None:
            return
        index, position = item.data(0, _TURN)
        turn = self._turns[index]
        if position is None:
            self.summary.setText(turn_summary(turn.changes))
            self.summary.show()
            self.diff_view.set_diff(None)
            return
        view = turn.files[position]
        self.summary.setText(view.summary)
        self.summary.setVisible(view.diff is None)  # a diff says it in its own heading
        self.diff_view.set_diff(view.diff)

    def _update_buttons(self) -> None:
        turn = self.selected_turn()
        self.undo_button.setEnabled(turn is not None)
        can_restore = turn is not None and turn.changes.kind == "turn" \
            and turn.changes.message is not None
        self.restore_button.setEnabled(can_restore)
        self.branch_box.setEnabled(can_restore)

    def _undo(self) -> None:
        turn = self.selected_turn()
        if turn is not None:
            self.undo_requested.emit(turn.changes.turn)

    def _restore(self) -> None:
        turn = self.selected_turn()
        if turn is not None and turn.changes.message is not None:
            self.restore_requested.emit(turn.changes.message, self.branch_box.isChecked())
