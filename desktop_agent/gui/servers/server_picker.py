"""The server and model picker: what is running, and which model to talk to.

A non-modal dialog over the :class:`ServerCatalog`: servers with their state
(up or down, and why), their chat models, a Refresh button, and a form for a
custom OpenAI-compatible URL with an optional API key. It emits the choice;
the window hands it to the current conversation's controller.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QStyle,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.icons import set_icon
from desktop_agent.gui.servers.server_catalog import ServerCatalog, ServerEntry
from desktop_agent.gui.theme import style_chrome

log = logging.getLogger("desktop_agent.gui.servers")

_ROLE = Qt.ItemDataRole.UserRole



class ServerPicker(QDialog):
    """Lists servers and models; emits the person's choice.

    Signals:
        chosen(str, str, object, object): base URL, model id, API key name or None,
            context length or None.
    """

    chosen = Signal(str, str, object, object)

    def __init__(self, catalog: ServerCatalog, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        style_chrome(self)
        self.setWindowTitle("Choose a server and model")
        self.setObjectName("serverPicker")
        self.resize(560, 480)
        self._catalog = catalog
        self._current: tuple[str, str] | None = None

        layout = QVBoxLayout(self)
        layout.setSpacing(8)
        self._status = QLabel()
        self._status.setWordWrap(True)
        self._status.setObjectName("serverPickerStatus")
        layout.addWidget(self._status)

        self._tree = QTreeWidget()
        self._tree.setHeaderLabels(["Server / model", "Context"])
        self._tree.setColumnWidth(0, 380)
        self._tree.setRootIsDecorated(True)
        self._tree.itemDoubleClicked.connect(lambda *_: self._accept_choice())
        self._tree.currentItemChanged.connect(self._update_buttons)
        layout.addWidget(self._tree, 1)

        custom = QGroupBox("Another OpenAI-compatible server")
        form = QFormLayout(custom)
        self.url_edit = QLineEdit()
        self.url_edit.setPlaceholderText("http://localhost:8000/v1")
        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setPlaceholderText("optional; stored in the system keyring")
        self.add_button = QPushButton("Add server")
        self.add_button.clicked.connect(self._add_custom)
        self.url_edit.returnPressed.connect(self._add_custom)
        self._custom_message = QLabel()
        self._custom_message.setWordWrap(True)
        self._custom_message.hide()
        form.addRow("URL", self.url_edit)
        form.addRow("API key", self.key_edit)
        row = QHBoxLayout()
        row.addWidget(self._custom_message, 1)
        row.addStretch(0)
        row.addWidget(self.add_button, 0, Qt.AlignmentFlag.AlignRight)
        form.addRow(row)
        layout.addWidget(custom)

        buttons = QDialogButtonBox()
        self.refresh_button = buttons.addButton("&Refresh", QDialogButtonBox.ButtonRole.ResetRole)
        set_icon(self.refresh_button, "refresh-cw")  # the window's own, tinted to the theme
        self.refresh_button.clicked.connect(catalog.refresh)
        self.use_button = buttons.addButton("&Use this model",
                                            QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._accept_choice)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

        catalog.discovery_started.connect(self._on_started)
        catalog.servers_changed.connect(self._populate)
        if catalog.searching:
            self._on_started()
        else:
            self._populate(catalog.servers)

    def set_current(self, base_url: str | None, model: str | None) -> None:
        """Highlight the conversation's current choice when it is listed."""
        self._current = (base_url, model) if base_url and model else None
        self._select_current()

    def focus_url(self) -> None:
        """Put the cursor in the custom URL field ("Enter URL")."""
        self.url_edit.setFocus()

    # -- catalog events -----------------------------------------------------

    def _on_started(self) -> None:
        self._status.setText("Looking for model servers on this computer…")
        self.refresh_button.setEnabled(False)

    def _populate(self, servers: list[ServerEntry]) -> None:
        self.refresh_button.setEnabled(True)
        self._tree.clear()
        style = self.style()
        up_icon = style.standardIcon(QStyle.StandardPixmap.SP_DialogApplyButton)
        down_icon = style.standardIcon(QStyle.StandardPixmap.SP_DialogCancelButton)
        model_icon = style.standardIcon(QStyle.StandardPixmap.SP_FileIcon)
        for server in servers:
            state = "up" if server.up else "not running"
            where = "llama.cpp in this app" if server.local else \
                f"{server.base_url} ({state})"
            item = QTreeWidgetItem([f"{server.name} — {where}", ""])
            item.setIcon(0, up_icon if server.up else down_icon)
            item.setData(0, _ROLE, None)
            if server.error and not server.up:
                item.setToolTip(0, server.error)
                child = QTreeWidgetItem([server.error, ""])
                child.setFlags(Qt.ItemFlag.NoItemFlags)
                item.addChild(child)
            elif server.up and not server.models:
                child = QTreeWidgetItem(["No chat model loaded on this server.", ""])
                child.setFlags(Qt.ItemFlag.NoItemFlags)
                item.addChild(child)
            for model in server.models:
                context = f"{model.context_length:,}" if model.context_length else "—"
                child = QTreeWidgetItem([model.id, context])
                child.setIcon(0, model_icon)
                child.setData(0, _ROLE, (server.base_url, model.id, server.api_key_name,
                                         model.context_length))
                item.addChild(child)
            self._tree.addTopLevelItem(item)
            item.setExpanded(server.up)
        # every server shown as up is counted, also one with no chat model yet
        up = [s for s in servers if s.up]
        count = sum(len(s.models) for s in up)
        if count:
            self._status.setText(f"{len(up)} server(s) running with {count} chat model(s). "
                                 "Pick a model and press Use.")
        elif up:
            self._status.setText(f"{len(up)} server(s) running, but none has a chat model "
                                 "loaded. Load one and press Refresh.")
        else:
            self._status.setText(
                "No model server is running. Run a model on this computer (Server → "
                "Models…), start LM Studio, Ollama, llama.cpp or vLLM and press Refresh, or "
                "enter the URL of an OpenAI-compatible server below.")
        self._select_current()
        self._update_buttons()

    def _select_current(self) -> None:
        if self._current is None:
            return
        for i in range(self._tree.topLevelItemCount()):
            top = self._tree.topLevelItem(i)
            children = [top.child(j) for j in range(top.childCount())] if top else []
            for child in children:
                data = child.data(0, _ROLE) if child is not None else None
                if child is not None and data and (data[0], data[1]) == self._current:
                    self._tree.setCurrentItem(child)
                    return

    def _update_buttons(self, *_args: object) -> None:
        self.use_button.setEnabled(self.selected() is not None)

    # -- choice -------------------------------------------------------------

    def selected(self) -> tuple[str, str, str | None, int | None] | None:
        """The highlighted model: (base URL, model, key name, context length)."""
        item = self._tree.currentItem()
        data = item.data(0, _ROLE) if item is not None else None
        if not data:
            return None
        base_url, model, key_name, context_length = data
        return str(base_url), str(model), key_name, context_length

    def select_model(self, base_url: str, model: str) -> bool:
        """Highlight a model by server URL and id (keyboard users and tests)."""
        self._current = (base_url.rstrip("/"), model)
        self._select_current()
        return self.selected() is not None and self.selected()[:2] == self._current  # type: ignore[index]

    def _accept_choice(self) -> None:
        choice = self.selected()
        if choice is None:
            return
        self.chosen.emit(*choice)
        self.accept()

    def _add_custom(self) -> None:
        try:
            url, persisted = self._catalog.add_custom(self.url_edit.text(),
                                                      self.key_edit.text() or None)
        except ValueError as exc:
            self._show_custom_message(str(exc), error=True)
            return
        self.key_edit.clear()
        if persisted is False:
            self._show_custom_message(
                "No system keyring is available, so the API key is kept for this session "
                "only; you will need to enter it again after a restart.", error=True)
        elif persisted:
            self._show_custom_message("Added; the API key is stored in the system keyring.")
        else:
            self._show_custom_message(f"Added {url}; looking for its models…")

    def _show_custom_message(self, text: str, *, error: bool = False) -> None:
        self._custom_message.setText(text)
        self._custom_message.setStyleSheet("color: #d9534f;" if error else "")
        self._custom_message.show()
