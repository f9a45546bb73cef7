"""Server → MCP servers…: each configured MCP server, its state, what it offers, its log.

The panel shows what :class:`~desktop_agent.session.McpServerBoard` says and
hands clicks back to it (the level chooser sends ``logging/setLevel``, Reconnect
restarts the server); it decides nothing itself. While it is open it asks the
board again every :data:`REFRESH_MS` for the chosen server's log and, less
often, for the states. The log is the person's: nothing here reaches a model.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.icons import icon
from desktop_agent.gui.loop_work import OwnedTasks
from desktop_agent.gui.theme import style_chrome

if TYPE_CHECKING:
    from desktop_agent.session import McpServerBoard, McpServerView

log = logging.getLogger("desktop_agent.gui.mcp_servers")

#: How often the chosen server's log is read again while the panel is open.
REFRESH_MS = 1000
#: The states are read again every this many log reads.
STATES_EVERY = 5
_DEFAULT_LEVEL = "the server's default"
#: The icon beside each state in the list of servers.
_STATE_ICONS = {"connected": "wifi", "connecting": "hourglass", "reconnecting": "refresh-cw",
                "failed": "triangle-alert", "stopped": "wifi-off", "disabled": "wifi-off",
                "not started": "clock"}


def _offers(view: McpServerView) -> str:
    def count(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    return ", ".join((count(view.tools, "tool"), count(view.resources, "resource"),
                      count(view.templates, "template"), count(view.prompts, "prompt")))


class McpServersPanel(QDialog):
    """The MCP servers of config.json, one chosen at a time.

    Args:
        board: The servers as the session shows them.
        parent: The window.

    Attributes:
        servers: The list of servers (each row: name and state).
        state: The chosen server's state (and why it failed).
        level: The log level asked of the chosen server.
        log_view: Its log messages, newest last.
    """

    def __init__(self, board: McpServerBoard, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        style_chrome(self)
        self.setObjectName("mcpServersPanel")
        self.setWindowTitle("MCP servers")
        self._board = board
        self._views: dict[str, McpServerView] = {}
        self._tasks = OwnedTasks()
        self._shown_log: tuple[str, int, float] | None = None
        self._ticks = 0
        self.problem: str | None = None

        outer = QVBoxLayout(self)
        split = QSplitter(Qt.Orientation.Horizontal)
        self.servers = QListWidget()
        self.servers.setObjectName("mcpServerList")
        self.servers.setAccessibleName("MCP servers")
        self.servers.setSpacing(3)
        self.servers.setIconSize(QSize(18, 18))
        self.servers.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.servers.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.servers.setMinimumWidth(200)
        self.servers.currentItemChanged.connect(lambda *_: self._show_chosen())
        split.addWidget(self.servers)

        detail = QWidget()
        right = QVBoxLayout(detail)
        right.setContentsMargins(8, 0, 0, 0)
        form = QFormLayout()
        self.state = QLabel("Connecting to the servers…")
        self.state.setObjectName("mcpServerState")
        self.state.setWordWrap(True)
        self.state.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow("State", self.state)
        self.transport = QLabel()
        form.addRow("Transport", self.transport)
        self.offers = QLabel()
        self.offers.setObjectName("mcpServerOffers")
        form.addRow("Offers", self.offers)
        self.tool_list = QLabel()
        self.tool_list.setObjectName("mcpToolListStatus")
        self.tool_list.setWordWrap(True)
        form.addRow("Tool list", self.tool_list)
        right.addLayout(form)

        row = QHBoxLayout()
        row.addWidget(QLabel("Log level"))
        self.level = QComboBox()
        self.level.setObjectName("mcpLogLevel")
        self.level.setToolTip("Sent to the server (logging/setLevel): it sends messages at "
                              "this level and above. They are shown here, never to a model.")
        self.level.activated.connect(lambda _i: self._choose_level())
        row.addWidget(self.level, 1)
        self.reconnect = QPushButton("Reconnect")
        self.reconnect.setObjectName("mcpReconnect")
        self.reconnect.setToolTip("Stop the server and start it again")
        self.reconnect.clicked.connect(self._reconnect)
        row.addWidget(self.reconnect)
        right.addLayout(row)
        self.log_view = QPlainTextEdit()
        self.log_view.setObjectName("mcpServerLog")
        self.log_view.setReadOnly(True)
        self.log_view.setAccessibleName("Log messages of the server")
        self.log_view.setPlaceholderText("No log messages yet.")
        self.log_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        right.addWidget(self.log_view, 1)
        self.note = QLabel()
        self.note.setObjectName("mcpPanelNote")
        self.note.setWordWrap(True)
        self.note.hide()
        right.addWidget(self.note)
        split.addWidget(detail)
        split.setStretchFactor(1, 1)
        split.setSizes([230, 550])
        outer.addWidget(split, 1)
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        bottom = QHBoxLayout()
        bottom.addStretch(1)
        bottom.addWidget(close)
        outer.addLayout(bottom)
        self.resize(780, 480)
        self._fill_levels()
        self._set_enabled(False)

        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self._tick)
        self._timer.start()
        self._run(self._load(connect=True))

    # -- talking to the board -------------------------------------------------------------
    def _run(self, work: Coroutine[Any, Any, None]) -> None:
        self._tasks.start(work)

    def busy(self) -> bool:
        """Whether an answer of the board is awaited (tests wait for it)."""
        return self._tasks.busy()

    async def _load(self, connect: bool) -> None:
        from desktop_agent.session import NoMcpServers

        try:
            views = await self._board.overview(connect=connect)
        except NoMcpServers as exc:
            self.problem = str(exc)
            with contextlib.suppress(RuntimeError):
                self.state.setText(str(exc))
            return
        with contextlib.suppress(RuntimeError):  # the panel may be closed meanwhile
            self._show_views(views)

    def _tick(self) -> None:
        if self.busy():
            return
        self._ticks += 1
        if self._ticks % STATES_EVERY == 0:
            self._run(self._load(connect=False))
        name = self.chosen()
        if name is not None:
            self._run(self._read_log(name))

    async def _read_log(self, name: str) -> None:
        from desktop_agent.session import UnknownServer, log_line

        try:
            entries = await self._board.log(name)
        except (UnknownServer, LookupError):
            return
        key = (name, len(entries), entries[-1].time if entries else 0.0)
        with contextlib.suppress(RuntimeError):
            if key == self._shown_log or name != self.chosen():
                return
            self._shown_log = key
            bar = self.log_view.verticalScrollBar()
            at_end = bar.value() >= bar.maximum() - 2
            kept = bar.value()
            self.log_view.setPlainText("\n".join(log_line(e) for e in entries))
            bar.setValue(bar.maximum() if at_end else kept)  # newest in sight, unless reading

    def _choose_level(self) -> None:
        name, level = self.chosen(), self.level.currentData()
        if name is None or not isinstance(level, str):
            return

        async def send() -> None:
            from desktop_agent.core.errors import AgentError

            try:
                logs = await self._board.set_log_level(name, level)
            except (AgentError, ValueError, LookupError) as exc:
                self._say(f"The level could not be set: {exc}")
                return
            self._say(None if logs else f"{name} sends no log messages (it declares no "
                                        "logging), so the level changes nothing.")
            await self._load(connect=False)

        self._run(send())

    def _reconnect(self) -> None:
        name = self.chosen()
        if name is None:
            return
        self.state.setText("reconnecting…")

        async def again() -> None:
            from desktop_agent.core.errors import AgentError

            try:
                await self._board.restart(name)
            except (AgentError, LookupError) as exc:
                log.info("MCP server %s did not start again: %s", name, exc)
            await self._load(connect=True)  # its tools may have changed

        self._run(again())

    # -- showing --------------------------------------------------------------------------
    def chosen(self) -> str | None:
        """The name of the server shown on the right."""
        item = self.servers.currentItem()
        data = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        return data if isinstance(data, str) else None

    def view(self, name: str) -> McpServerView | None:
        """What was last shown of a server."""
        return self._views.get(name)

    def _show_views(self, views: list[McpServerView]) -> None:
        chosen = self.chosen()
        self._views = {v.name: v for v in views}
        self.servers.blockSignals(True)
        self.servers.clear()
        for view in views:
            item = QListWidgetItem(icon(_STATE_ICONS.get(view.state, "server")),
                                   f"{view.name} — {view.state}")
            item.setData(Qt.ItemDataRole.UserRole, view.name)
            item.setToolTip(view.reason or view.state)
            self.servers.addItem(item)
            if view.name == chosen:
                self.servers.setCurrentItem(item)
        if self.servers.currentItem() is None and views:
            self.servers.setCurrentRow(0)
        self.servers.blockSignals(False)
        self._show_chosen()

    def _show_chosen(self) -> None:
        name = self.chosen()
        view = self._views.get(name) if name is not None else None
        self._set_enabled(view is not None)
        if view is None:
            return
        self.level.setEnabled(view.state == "connected")  # only a running server hears it
        state = view.state + (f": {view.reason}" if view.reason else "")
        self.state.setText(state)
        self.state.setProperty("problem", view.state in ("failed", "stopped"))
        self.state.style().polish(self.state)  # the sheet colours a problem
        self.transport.setText(view.transport)
        connected = view.state == "connected"
        self.offers.setText(_offers(view) if connected else "—")
        self.tool_list.setText(view.tool_list or ("unchanged since it started" if connected
                                                  else "—"))
        index = self.level.findData(view.log_level) if view.log_level else 0
        self.level.setCurrentIndex(max(index, 0))
        if self._shown_log is None or self._shown_log[0] != name:
            self._shown_log = None
            self.log_view.clear()
            self._run(self._read_log(view.name))

    def _fill_levels(self) -> None:
        from desktop_agent.session import LOG_LEVELS

        self.level.addItem(_DEFAULT_LEVEL, None)
        for level in LOG_LEVELS:
            self.level.addItem(level, level)

    def _set_enabled(self, on: bool) -> None:
        for widget in (self.level, self.reconnect):
            widget.setEnabled(on)

    def _say(self, sentence: str | None) -> None:
        with contextlib.suppress(RuntimeError):
            self.note.setText(sentence or "")
            self.note.setVisible(bool(sentence))

    def closeEvent(self, event: QCloseEvent) -> None:
        """Stop asking the board when the panel closes."""
        self._timer.stop()
        self._tasks.cancel()
        super().closeEvent(event)
