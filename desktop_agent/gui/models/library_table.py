"""The table of models on this computer: one row per model, its facts and its fit.

Like LM Studio's "My Models": name, parameters, quantisation, file size, trained
context, whether its template offers tools, whether it fits this machine now (a
coloured badge; its sentence in the tooltip), where it was found, and whether it
runs (with the engine's memory). A model that cannot be used stays listed with
what is wrong, so a half-downloaded file is seen broken rather than missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QRect,
    QSize,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QWidget,
)

from desktop_agent.gui.icons import current_palette
from desktop_agent.gui.models.model_texts import (
    context_text,
    fit_colour,
    fit_label,
    fit_tip,
    parameters_text,
    quantisation_text,
    size_text,
    tools_text,
)
from desktop_agent.gui.models.run_state import IDLE, RunState, resolved

if TYPE_CHECKING:
    from desktop_agent.engine import LibraryEntry

AnyIndex = QModelIndex | QPersistentModelIndex

COLUMNS = ("Model", "Params", "Quant", "Size", "Context", "Tools", "Fit", "Source", "Status")
NAME, PARAMETERS, QUANTISATION, SIZE, CONTEXT, TOOLS, FIT, SOURCE, STATUS = range(len(COLUMNS))
#: What each short title means (the header's tooltips).
COLUMN_TIPS = ("", "Parameters", "Quantisation: how the weights are stored", "Size on disk",
               "The context it was trained for (tokens)", "Whether its chat template offers tools",
               "Whether it fits this computer's free memory now", "Whose folder it is in",
               "Whether it runs now, and the engine's memory")
#: The value sorting uses (sizes and counts as numbers, not as their text).
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
#: The path of the row's model file.
PATH_ROLE = Qt.ItemDataRole.UserRole + 2


class LibraryTableModel(QAbstractTableModel):
    """The library's entries as rows, with the running state of each."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._entries: list[LibraryEntry] = []
        self._states: Mapping[Path, RunState] = {}

    def set_entries(self, entries: Sequence[LibraryEntry]) -> None:
        """Show these models (a new scan)."""
        self.beginResetModel()
        self._entries = list(entries)
        self.endResetModel()

    def set_states(self, states: Mapping[Path, RunState]) -> None:
        """Show which models run, start or crashed now; only the status column changes."""
        self._states = states
        if self._entries:
            self.dataChanged.emit(self.index(0, STATUS),
                                  self.index(len(self._entries) - 1, STATUS))

    def entry(self, row: int) -> LibraryEntry | None:
        """The entry shown in ``row``."""
        return self._entries[row] if 0 <= row < len(self._entries) else None

    def row_of(self, path: Path) -> int:
        """The row showing ``path``, or -1."""
        key = resolved(path)
        return next((row for row, entry in enumerate(self._entries)
                     if resolved(entry.path) == key), -1)

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        """One row per model."""
        return 0 if parent.isValid() else len(self._entries)

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        """The facts of :data:`COLUMNS`."""
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Column titles."""
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.ToolTipRole:
            return COLUMN_TIPS[section] or None
        if orientation == Qt.Orientation.Horizontal and \
                role == Qt.ItemDataRole.TextAlignmentRole and section in (SIZE, CONTEXT):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Text, tooltip, alignment and sort value of a cell."""
        entry = self.entry(index.row())
        if entry is None:
            return None
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._text(entry, column)
        if role == SORT_ROLE:
            return self._sort_value(entry, column)
        if role == PATH_ROLE:
            return str(entry.path)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tip(entry, column)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            if column in (SIZE, CONTEXT):
                return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if column == TOOLS:
                return int(Qt.AlignmentFlag.AlignCenter)
        if role == Qt.ItemDataRole.ForegroundRole and column in (STATUS, NAME):
            return self._status_colour(entry, column)
        return None

    def _text(self, entry: LibraryEntry, column: int) -> str:
        texts = {NAME: entry.display_name, PARAMETERS: parameters_text(entry),
                 QUANTISATION: quantisation_text(entry), SIZE: size_text(entry.size_bytes),
                 CONTEXT: context_text(entry), TOOLS: tools_text(entry),
                 FIT: fit_label(entry.fit, entry.problem), SOURCE: entry.source.value,
                 STATUS: self._status(entry)}
        return texts[column]

    def _state(self, entry: LibraryEntry) -> RunState:
        return self._states.get(resolved(entry.path), IDLE)

    def _status(self, entry: LibraryEntry) -> str:
        state = self._state(entry)
        if state.starting:
            return "Starting…"
        if state.crash is not None:
            signal = state.crash.signal_name
            return f"Stopped ({signal})" if signal else "Stopped"
        if state.server is not None:
            return f"Running · {size_text(state.rss_bytes)}" if state.rss_bytes else "Running"
        return ""

    def _status_colour(self, entry: LibraryEntry, column: int) -> QColor | None:
        colours = current_palette()
        if column == NAME:
            return QColor(colours.danger) if entry.problem is not None else None
        state = self._state(entry)
        if state.crash is not None:
            return QColor(colours.danger)
        return QColor(colours.success if state.server is not None else colours.muted)

    def _tip(self, entry: LibraryEntry, column: int) -> str:
        if column == FIT or (column == NAME and entry.problem is not None):
            return fit_tip(entry)
        if column == TOOLS and entry.info is not None:
            return ("Its chat template offers tools." if entry.info.supports_tools else
                    "Its chat template offers no tools: it runs with the app's tool template.")
        if column == STATUS:
            crash = self._state(entry).crash
            return crash.message if crash is not None else ""
        return str(entry.path) if column in (NAME, SOURCE) else ""

    def _sort_value(self, entry: LibraryEntry, column: int) -> Any:
        info = entry.info
        if column == PARAMETERS:
            return info.parameter_count if info is not None else -1
        if column == SIZE:
            return entry.size_bytes
        if column == CONTEXT:
            return info.context_length or 0 if info is not None else -1
        return self._text(entry, column).lower()


class FitBadgeDelegate(QStyledItemDelegate):
    """Draws the fit verdict as a small coloured pill (green, amber, red, grey)."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: AnyIndex) -> None:
        """The selection background, then the pill with its word."""
        text = str(index.data(Qt.ItemDataRole.DisplayRole) or "")
        style = option.widget.style() if option.widget is not None else None
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, option.widget)
        if not text:
            return
        colour = QColor(fit_colour(text, current_palette()))
        metrics = option.fontMetrics
        width = metrics.horizontalAdvance(text) + 16
        height = metrics.height() + 4
        rect = QRect(option.rect.left() + 6, option.rect.center().y() - height // 2,
                     width, height)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        fill = QColor(colour)
        fill.setAlpha(40)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(fill)
        painter.drawRoundedRect(rect, height / 2, height / 2)
        painter.setPen(colour)
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index: AnyIndex) -> QSize:
        """Room for the pill."""
        size = super().sizeHint(option, index)
        return QSize(size.width() + 20, max(size.height(), option.fontMetrics.height() + 10))


class LibraryTable(QTableView):
    """The sortable table over a :class:`LibraryTableModel` (rows selected whole)."""

    def __init__(self, model: LibraryTableModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("libraryTable")
        self.source_model = model
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(model)
        self.proxy.setSortRole(SORT_ROLE)
        self.setModel(self.proxy)
        self.setSortingEnabled(True)
        self.sortByColumn(NAME, Qt.SortOrder.AscendingOrder)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setShowGrid(False)
        self.setAlternatingRowColors(True)
        self.setWordWrap(False)
        self.verticalHeader().hide()
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 14)
        self.setItemDelegateForColumn(FIT, FitBadgeDelegate(self))
        header = self.horizontalHeader()
        header.setHighlightSections(False)
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        header.setSectionResizeMode(NAME, QHeaderView.ResizeMode.Stretch)
        for column in range(1, len(COLUMNS)):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setMinimumSectionSize(48)

    def selected_entry(self) -> LibraryEntry | None:
        """The highlighted model."""
        rows = self.selectionModel().selectedRows() if self.selectionModel() else []
        if not rows:
            return None
        return self.source_model.entry(self.proxy.mapToSource(rows[0]).row())

    def select_path(self, path: Path) -> bool:
        """Highlight the row of ``path``; False when it is not listed."""
        row = self.source_model.row_of(path)
        if row < 0:
            return False
        index = self.proxy.mapFromSource(self.source_model.index(row, NAME))
        self.selectRow(index.row())
        self.scrollTo(index)
        return True

