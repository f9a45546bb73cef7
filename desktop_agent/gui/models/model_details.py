"""The selected model: its facts, the settings it will run with, Run / Stop / Restart.

The settings start at the ones the person saved for the model, else at what the
engine chose for this machine (the largest context that fits, one thread per
physical core, no GPU layer on the CPU build, one slot), and can be edited before
*Run*; edited ones are kept for next time. Whether it fits is said before it starts;
a model the engine refuses as too big is started only by a second click ("Run
anyway"). A model that ended unasked shows how (the signal, with advice) and offers
*Restart*.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.icons import current_palette, set_icon
from desktop_agent.gui.models.model_texts import (
    count_text,
    fit_colour,
    fit_label,
    fit_tip,
    size_text,
)
from desktop_agent.gui.models.run_state import IDLE, RunState

if TYPE_CHECKING:
    from desktop_agent.engine import LibraryEntry, RunSettings

#: llama.cpp's smallest useful context and the largest this form offers.
MIN_CONTEXT, MAX_CONTEXT = 512, 1_048_576
MAX_SLOTS = 16


class ModelDetails(QFrame):
    """Facts and run settings of one library entry.

    Signals:
        run_requested(object, object, bool): Run this file (a ``Path``) with these
            ``RunSettings`` (None: not edited), and whether even when too big.
        stop_requested(object): Stop the model running from this file.
        restart_requested(): Start the crashed model again.
        use_requested(object): Point the visible conversation at this ``LocalServer``.
    """

    run_requested = Signal(object, object, bool)
    stop_requested = Signal(object)
    restart_requested = Signal()
    use_requested = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("modelDetails")
        self._entry: LibraryEntry | None = None
        self._state = IDLE
        self._confirming = False
        self._failure: str | None = None
        self._initial: tuple[int, int, int, int] | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 12, 14, 12)
        layout.setSpacing(6)
        self.title = QLabel()
        self.title.setObjectName("modelTitle")
        self.where = QLabel()
        self.where.setObjectName("modelPath")
        self.where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.where.setWordWrap(True)
        self.verdict = QLabel()
        self.verdict.setWordWrap(True)
        self.state = QLabel()
        self.state.setObjectName("modelState")
        self.state.setWordWrap(True)
        for label in (self.title, self.where, self.verdict, self.state):
            layout.addWidget(label)

        self.context = _spin(MIN_CONTEXT, MAX_CONTEXT, 1024, " tokens")
        self.threads = _spin(1, max(1, os.cpu_count() or 1), 1)
        self.gpu_layers = _spin(0, 999, 1)
        self.gpu_layers.setToolTip("Layers to run on a graphics card (0: this llama.cpp "
                                   "build runs on the CPU).")
        self.slots = _spin(1, MAX_SLOTS, 1)
        self.slots.setToolTip("Conversations answered at once; each gets the whole context.")
        form = QGridLayout()
        form.setHorizontalSpacing(10)
        for column, (text, box) in enumerate((("Context", self.context), ("Threads", self.threads),
                                              ("GPU layers", self.gpu_layers),
                                              ("Parallel", self.slots))):
            caption = QLabel(text)
            caption.setObjectName("modelSettingCaption")
            form.addWidget(caption, 0, column)
            form.addWidget(box, 1, column)
        form.setColumnStretch(4, 1)
        layout.addLayout(form)

        buttons = QHBoxLayout()
        self.run_button = QPushButton("Run")
        self.run_button.setProperty("role", "primary")
        set_icon(self.run_button, "send", "accent_text")
        self.run_button.clicked.connect(self._on_run)
        self.stop_button = QPushButton("Stop")
        set_icon(self.stop_button, "circle-stop")
        self.stop_button.clicked.connect(self._on_stop)
        self.restart_button = QPushButton("Restart")
        set_icon(self.restart_button, "refresh-cw")
        self.restart_button.clicked.connect(self._on_restart)
        self.use_button = QPushButton("Use in this conversation")
        self.use_button.clicked.connect(self._on_use)
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.restart_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.use_button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        self.show_entry(None)

    @property
    def entry(self) -> LibraryEntry | None:
        """The model shown."""
        return self._entry

    def show_entry(self, entry: LibraryEntry | None, saved: RunSettings | None = None) -> None:
        """Show ``entry`` with the settings saved for it, else the ones chosen for it."""
        self._entry = entry
        self._confirming = False
        self._failure = None
        if entry is None:
            self.title.setText("Choose a model to see its details.")
            for label in (self.where, self.verdict, self.state):
                label.clear()
            self._refresh_buttons()
            return
        info = entry.info
        self.title.setText(entry.display_name)
        facts = [entry.source.value, size_text(entry.size_bytes)]
        if info is not None:
            facts[1:1] = [part for part in (info.architecture, info.size_label,
                                            info.quantization) if part]
            facts.append(f"trained for {count_text(info.context_length)} tokens")
        self.where.setText(" · ".join(facts) + f"\n{entry.path}")
        self.verdict.setText(fit_tip(entry))
        self._colour_verdict()
        fit = entry.fit
        trained = info.context_length if info is not None else None
        self.context.setMaximum(max(MIN_CONTEXT, trained or MAX_CONTEXT))
        chosen = (fit.context, fit.threads, fit.gpu_layers) if fit is not None else \
            (8192, self.threads.value(), 0)
        self.context.setValue(_saved(saved, "context_length", chosen[0]))
        self.threads.setValue(_saved(saved, "threads", chosen[1]))
        self.gpu_layers.setValue(_saved(saved, "gpu_layers", chosen[2]))
        self.slots.setValue(saved.parallel if saved is not None else 1)
        self._initial = self._form()
        self._refresh_buttons()

    def show_state(self, state: RunState) -> None:
        """Whether the shown model runs (or starts) now, and how it ended if it crashed."""
        self._state = state
        if state.starting or state.server is not None:
            self._confirming = False
        self._refresh_buttons()

    def restyle(self) -> None:
        """Colour the sentences again in the theme now in use."""
        self._colour_verdict()
        self._refresh_buttons()

    def _colour_verdict(self) -> None:
        entry = self._entry
        badge = fit_label(entry.fit, entry.problem) if entry is not None else ""
        self.verdict.setStyleSheet(f"color: {fit_colour(badge, current_palette())};")

    def show_failure(self, error: Exception) -> None:
        """The model did not start: why (the file refused, too big, the port taken...).

        A model refused as too big for the memory free now is started by a second
        click; the button says so.
        """
        from desktop_agent.engine.errors import ModelTooBigError

        self._confirming = isinstance(error, ModelTooBigError)
        self._failure = str(error)
        self._refresh_buttons()

    def settings(self) -> RunSettings:
        """The run settings as the form says."""
        from desktop_agent.engine import RunSettings

        context, threads, gpu_layers, slots = self._form()
        return RunSettings(context_length=context, threads=threads, gpu_layers=gpu_layers,
                           parallel=slots)

    def _form(self) -> tuple[int, int, int, int]:
        return (self.context.value(), self.threads.value(), self.gpu_layers.value(),
                self.slots.value())

    def _refresh_buttons(self) -> None:
        entry, state = self._entry, self._state
        usable = entry is not None and entry.problem is None
        up, crashed = state.server is not None, state.crash is not None
        starting = state.starting
        self.run_button.setVisible(not up and not crashed)
        self.run_button.setEnabled(usable and not starting)
        self.run_button.setText("Run anyway" if self._confirming else
                                "Starting…" if starting else "Run")
        self.restart_button.setVisible(crashed)
        self.stop_button.setVisible(up or crashed)
        self.use_button.setVisible(up)
        for box in (self.context, self.threads, self.gpu_layers, self.slots):
            box.setEnabled(usable and not up and not starting)
        colours = current_palette()
        if state.crash is not None:
            self.state.setText(state.crash.message)
            self.state.setStyleSheet(f"color: {colours.danger};")
        elif state.server is not None:
            server = state.server
            memory = f" · {size_text(state.rss_bytes)} in memory" if state.rss_bytes else ""
            self.state.setText(f"Running at {server.base_url} with "
                               f"{count_text(server.context_length)} tokens of context, "
                               f"{server.threads} threads{memory}.")
            self.state.setStyleSheet(f"color: {colours.success};")
        elif self._failure is not None and not starting:
            self.state.setText(self._failure + (" Click “Run anyway” to start it all the same."
                                                if self._confirming else ""))
            self.state.setStyleSheet(
                f"color: {colours.warning if self._confirming else colours.danger};")
        else:
            self.state.clear()

    def _on_run(self) -> None:
        entry = self._entry
        if entry is None:
            return
        anyway, self._confirming = self._confirming, False
        self._failure = None
        edited = self._form() != self._initial
        self.run_requested.emit(entry.path, self.settings() if edited else None, anyway)

    def _on_stop(self) -> None:
        if self._entry is not None:
            self.stop_requested.emit(self._entry.path)

    def _on_restart(self) -> None:
        self.restart_requested.emit()

    def _on_use(self) -> None:
        if self._state.server is not None:
            self.use_requested.emit(self._state.server)


def _saved(saved: RunSettings | None, name: str, chosen: int) -> int:
    value = getattr(saved, name, None) if saved is not None else None
    return value if isinstance(value, int) else chosen


def _spin(low: int, high: int, step: int, suffix: str = "") -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setSingleStep(step)
    box.setSuffix(suffix)
    box.setGroupSeparatorShown(True)
    box.setMinimumWidth(90)
    return box

