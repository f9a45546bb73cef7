"""A previewed command on its card: output, what it would change, Apply and Discard.

The command ran on an overlay of the working folder; nothing reached the
folder. The panel says what would change in one line ("changes 3 files,
deletes 1"), shows the output, the changes as a tree of folders with totals
(opened as far as is useful: a few changes all shown, ten thousand folded to
their folders, each folder's rows made when it is opened), and the diff of
the file chosen in the tree (the first changed file at first). Apply and
Discard (with an optional reason for the model) decide; a conflict names the
files changed meanwhile and offers *Apply anyway*. The panel only reports the
choice; the conversation tab hands it to the session.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.transcript.approval_panel import format_countdown
from desktop_agent.gui.transcript.painted_panel import set_text_color
from desktop_agent.gui.transcript.theme import TranscriptTheme
from desktop_agent.gui.transcript.widget_style import muted_label, scaled_font

if TYPE_CHECKING:
    from desktop_agent.gui.transcript.diff_view import DiffView
    from desktop_agent.gui.transcript.frame_scheduler import FrameScheduler
    from desktop_agent.gui.transcript.items import CommandPreviewState
    from desktop_agent.workspace.preview_views import ChangeTree

APPLY = "apply"
APPLY_ANYWAY = "apply_anyway"
DISCARD = "discard"

#: Changes up to this many are all shown, every folder open.
OPEN_ALL_BELOW = 40
#: Rows of the tree in view before it scrolls inside the card.
TREE_ROWS = 12
#: Lines of output in view before it scrolls.
OUTPUT_LINES = 8
_PATH = Qt.ItemDataRole.UserRole
_PENDING = "\u2026"  # the placeholder child of a folder not opened yet

_CHANGE_WORDS = {"created": "new", "modified": "changed", "deleted": "deleted",
                 "mode": "mode", "renamed": "renamed"}


def _size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB"):
        if value < 1024:
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def _own_words(node: ChangeTree) -> str:
    """What a tree row says of its path: its change, or a folder's totals."""
    change = node.change
    if node.children:
        own = f"{_CHANGE_WORDS.get(change.change, change.change)} folder; " if change else ""
        return own + node.totals.counts_sentence()  # the size has its own column
    if change is None:
        return ""
    words = _CHANGE_WORDS.get(change.change, change.change)
    if change.kind == "link":
        return f"{words} link \u2192 {change.target}"
    if change.hard_link_of:
        return f"{words}: hard link of {change.hard_link_of}"
    if change.change == "renamed":
        return f"renamed from {change.renamed_from}"
    if change.change == "mode":
        return f"mode {change.old_mode:o} \u2192 {change.mode:o}" \
            if change.old_mode is not None and change.mode is not None else words
    if change.kind == "dir" and change.change == "deleted":
        return f"deleted folder ({change.files:,} files)"
    return words


class CommandPreviewPanel(QWidget):
    """Output, changes and Apply / Discard of one previewed command.

    Signals:
        decided(str, str): ``apply``, ``apply_anyway`` or ``discard``, and the
            reason typed for the model (for a discard).
    """

    decided = Signal(str, str)

    def __init__(self, theme: TranscriptTheme, scheduler: FrameScheduler | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("commandPreview")
        self._theme = theme
        self._scheduler = scheduler
        self._state: CommandPreviewState | None = None
        self._shown_card: Any = None
        self._nodes: dict[str, ChangeTree] = {}
        self._folded_once = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(18, 4, 0, 4)
        layout.setSpacing(6)

        self.title = QLabel(self)
        self.title.setObjectName("previewTitle")
        self.title.setWordWrap(True)
        self.title.setFont(scaled_font(self.title, bold=True, scale=1.02))
        layout.addWidget(self.title)
        self.status = muted_label("", theme, self)
        self.status.setObjectName("previewStatus")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.problem = QLabel(self)
        self.problem.setObjectName("previewProblem")
        self.problem.setWordWrap(True)
        self.problem.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        set_text_color(self.problem, theme.error_text)
        self.problem.hide()
        layout.addWidget(self.problem)

        # Output, tree and diff: folded once the preview is decided (the card's output
        # keeps what the model was told), one click away.
        self.details_button = QToolButton(self)
        self.details_button.setObjectName("previewDetails")
        self.details_button.setAutoRaise(True)
        self.details_button.setCheckable(True)
        self.details_button.toggled.connect(self._show_details)
        self.details_button.hide()
        layout.addWidget(self.details_button)
        self.details = QWidget(self)
        details = QVBoxLayout(self.details)
        details.setContentsMargins(0, 0, 0, 0)
        details.setSpacing(6)
        layout.addWidget(self.details)
        self.output_label = muted_label("Output", theme, self.details, bold=True, scale=0.85)
        details.addWidget(self.output_label)
        self.output = QPlainTextEdit(self.details)
        self.output.setObjectName("previewOutput")
        self.output.setReadOnly(True)
        self.output.document().setUndoRedoEnabled(False)
        self.output.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.output.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        line = self.output.fontMetrics().lineSpacing()
        self.output.setMaximumHeight(line * OUTPUT_LINES + 12)
        details.addWidget(self.output)

        self.changes_label = muted_label("What it would change", theme, self.details, bold=True,
                                         scale=0.85)
        details.addWidget(self.changes_label)
        self.tree = QTreeWidget(self.details)
        self.tree.setObjectName("previewTree")
        self.tree.setColumnCount(3)
        self.tree.setHeaderLabels(["Path", "Change", "Size"])
        self.tree.setUniformRowHeights(True)  # 10,000 rows scroll without measuring each
        self.tree.setAlternatingRowColors(False)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        self.tree.itemExpanded.connect(self._fill_folder)
        self.tree.currentItemChanged.connect(self._show_selected)
        details.addWidget(self.tree)

        from desktop_agent.gui.transcript.diff_view import DiffView  # with the first preview

        self.diff_view: DiffView = DiffView(theme, scheduler, self.details)
        details.addWidget(self.diff_view)
        self.diff_note = muted_label("", theme, self.details, scale=0.9)
        self.diff_note.setWordWrap(True)
        self.diff_note.hide()
        details.addWidget(self.diff_note)

        self.reason = QLineEdit(self)
        self.reason.setObjectName("previewReason")
        self.reason.setPlaceholderText("Reason if you discard (optional, sent to the model)")
        self.reason.setAccessibleName("Reason for discarding")
        self.reason.returnPressed.connect(lambda: self._decide(DISCARD))
        layout.addWidget(self.reason)
        row = QHBoxLayout()
        row.setSpacing(6)
        self.apply_button = self._button("Apply", APPLY, "primary")
        self.apply_anyway_button = self._button("Apply anyway", APPLY_ANYWAY, "danger")
        self.discard_button = self._button("Discard", DISCARD, "danger")
        row.addWidget(self.apply_button)
        row.addWidget(self.apply_anyway_button)
        row.addStretch(1)
        row.addWidget(self.discard_button)
        layout.addLayout(row)
        from desktop_agent.gui.theme import style_chrome

        style_chrome(self)
        self._tick = QTimer(self)
        self._tick.setInterval(500)
        self._tick.timeout.connect(self._update_status)

    def _button(self, text: str, action: str, role: str) -> QPushButton:
        button = QPushButton(text, self)
        button.setAccessibleName(text)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        button.setProperty("role", role)
        button.clicked.connect(lambda: self._decide(action))
        return button

    # -- state ---------------------------------------------------------------------------
    def show_state(self, state: CommandPreviewState) -> None:
        """Show ``state`` (a new card's contents are laid out once)."""
        self._state = state
        card = state.card
        if card is not self._shown_card:
            self._shown_card = card
            self._show_card(card)
        deciding = state.deciding
        for widget in (self.reason, self.apply_button, self.discard_button):
            widget.setVisible(deciding)
            widget.setEnabled(deciding)
        self.apply_button.setVisible(deciding and state.status != "conflict"
                                     and card.incomplete is None)
        self.apply_anyway_button.setVisible(state.status == "conflict")
        self.apply_anyway_button.setEnabled(state.status == "conflict")
        problem = state.message if state.status in ("conflict", "failed") else None
        problem = problem or card.incomplete
        self.problem.setText(problem or "")
        self.problem.setVisible(bool(problem))
        summary = card.summary
        titles = {"applied": f"Applied: {summary}", "failed": f"Partly applied: {summary}",
                  "discarded": f"Discarded: {summary}", "applying": f"Applying: {summary}"}
        self.title.setText(titles.get(state.status, f"Would change the folder: {summary}"))
        if deciding and state.deadline is not None:
            self._tick.start()
        else:
            self._tick.stop()
        decided = state.status in ("applied", "discarded", "failed")
        self.details_button.setVisible(decided and bool(card.changes))
        if decided and not self._folded_once:
            self._folded_once = True  # folded when decided; the person may open it again
            self.details_button.setChecked(False)
            self._show_details(False)
        self._update_status()

    def _show_details(self, shown: bool) -> None:
        self.details.setVisible(shown)
        self.details_button.setText("Hide the changes" if shown else "Show the changes")

    def _update_status(self) -> None:
        state = self._state
        if state is None:
            return
        if state.status in ("waiting", "conflict"):
            text = "Nothing has reached the working folder yet."
            if state.deadline is not None:
                left = format_countdown(state.deadline - time.monotonic())
                text += f" Discarded automatically in {left}."
        elif state.status == "applying":
            text = "Moving the changes into the working folder\u2026"
        else:
            text = state.message or ""
        self.status.setText(text)

    def _decide(self, action: str) -> None:
        state = self._state
        if state is None or not state.deciding:
            return
        for widget in (self.apply_button, self.apply_anyway_button, self.discard_button,
                       self.reason):
            widget.setEnabled(False)
        self.decided.emit(action, self.reason.text().strip() if action == DISCARD else "")

    # -- the card's contents ---------------------------------------------------------------
    def _show_card(self, card: Any) -> None:
        output = card.output.rstrip("\n")  # no empty last line to scroll to
        self.output.setPlainText(output)
        lines = max(1, min(OUTPUT_LINES, output.count("\n") + 1))
        self.output.setFixedHeight(self.output.fontMetrics().lineSpacing() * lines + 12)
        self.tree.clear()
        self._nodes = {}
        has_changes = bool(card.changes)
        self.changes_label.setVisible(has_changes)
        self.tree.setVisible(has_changes)
        if not has_changes:
            self.diff_view.hide()
            return
        open_all = len(card.changes) <= OPEN_ALL_BELOW
        self._add_children(self.tree.invisibleRootItem(), card.tree, open_all)
        rows = card.tree.count() if open_all else self._open_while_it_fits()
        rows = max(1, min(TREE_ROWS, rows))  # as tall as its rows, up to TREE_ROWS
        row_height = max(self.tree.sizeHintForRow(0), self.fontMetrics().height() + 4)
        self.tree.setFixedHeight(row_height * (rows + 1) + 8)
        first = card.tree.first_path(lambda path: path in card.diffs)  # as the tree lists them
        if first is not None:
            self._show_diff(first)
        else:
            self.diff_view.hide()

    def _open_while_it_fits(self) -> int:
        """Open folders, top first, while the rows in view stay within :data:`TREE_ROWS`.

        A lone folder is always opened (``node_modules/`` alone says little);
        returns the rows then in view.
        """
        shown = self.tree.topLevelItemCount()
        pending = [self.tree.topLevelItem(i) for i in range(shown)]
        while pending:
            item = pending.pop(0)
            if item is None:
                continue
            node = self._nodes.get(item.data(0, _PATH))
            if node is None or not node.children:
                continue
            if shown > 1 and shown + len(node.children) > TREE_ROWS:
                break
            item.setExpanded(True)  # fills it (_fill_folder)
            shown += item.childCount()
            pending.extend(item.child(i) for i in range(item.childCount()))
        return shown

    def _add_children(self, parent: QTreeWidgetItem, node: ChangeTree, open_all: bool) -> None:
        for child in node.children:
            item = QTreeWidgetItem(parent)
            name = child.name + ("/" if child.is_folder else "")
            item.setText(0, name)
            item.setText(1, _own_words(child))
            size = child.totals.bytes if child.children else (
                child.change.size if child.change is not None
                and child.change.change != "deleted" and child.change.kind == "file" else 0)
            item.setText(2, _size(size) if size else "")
            item.setToolTip(0, child.path)
            item.setData(0, _PATH, child.path)
            self._nodes[child.path] = child
            if child.children:
                if open_all:
                    self._add_children(item, child, open_all)
                    item.setExpanded(True)
                else:
                    QTreeWidgetItem(item, [_PENDING])  # filled when opened

    def _fill_folder(self, item: QTreeWidgetItem) -> None:
        """Make a folder's rows when it is first opened (ten thousand are never all made)."""
        first = item.child(0) if item.childCount() == 1 else None
        if first is None or first.text(0) != _PENDING:
            return
        node = self._nodes.get(item.data(0, _PATH))
        if node is None:
            return
        item.takeChild(0)
        self._add_children(item, node, open_all=False)

    def _show_selected(self, current: QTreeWidgetItem | None,
                       _previous: QTreeWidgetItem | None) -> None:
        if current is not None:
            self._show_diff(str(current.data(0, _PATH)))

    def _show_diff(self, path: str) -> None:
        card = self._shown_card
        if card is None:
            return
        diff = card.diffs.get(path)
        if diff is not None:
            self.diff_note.hide()
            self.diff_view.set_diff(diff)
            return
        self.diff_view.hide()
        node = self._nodes.get(path)
        if node is not None and node.change is not None:
            self.diff_note.setText(node.change.summary)
            self.diff_note.show()
        else:
            self.diff_note.hide()
