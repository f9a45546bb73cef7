"""The bar at the top of a conversation: model, permission mode, working folder, sandbox, network.

A small "AGENTS.md" mark beside the folder says when the folder's project
instructions go into the system prompt (the settings dialog says what they
cost and switches them off).

Why here and not in a dialog: these decide what the model is, what runs without
asking and what its commands may touch, so they stay in sight while the person
reads. ``bypassPermissions`` is drawn in the danger colour: everything runs
unasked. The header
only shows settings and reports choices through signals; the window applies
them to the conversation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QAction, QResizeEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QMenu,
    QSizePolicy,
    QToolButton,
    QWidget,
)

from desktop_agent.gui.icons import icon, set_icon, set_item_icon
from desktop_agent.session import PERMISSION_MODE_DETAILS, PERMISSION_MODE_LABELS

#: Sandbox levels (the settings' ``sandbox`` values) and how the header names them.
SANDBOX_LABELS = {
    "workdir": "Sandboxed",
    "read_only": "Read-only",
    "off": "No sandbox",
}
SANDBOX_TIPS = {
    "workdir": "Commands may change only the working folder; the rest of the system is "
               "read-only and your home folder is hidden.",
    "read_only": "Commands may read the working folder and change nothing.",
    "off": "Commands run with your account's full rights. Every command asks first and is "
           "never remembered.",
}


#: The icon beside each permission mode in the selector.
# What the model menu's last two actions carry as their data (a model's is its
# (server URL, model id, context length)).
_ADD_SERVER = "add-server"
_REDISCOVER = "rediscover"
_MODE_ICONS = {"default": "shield", "acceptEdits": "pencil", "plan": "search",
               "bypassPermissions": "shield-alert"}


def short_path(path: Path) -> str:
    """``~/…`` for folders under the home folder, else the path."""
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)


class ElidingToolButton(QToolButton):
    """A tool button whose text shortens (with …) to the room it gets.

    Why: a long folder path or model id must not make the window wider; the
    full text stays in the tooltip.
    """

    def __init__(self, mode: Qt.TextElideMode, limit: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self._mode = mode
        self._limit = limit
        self.setMinimumWidth(90)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)

    def set_full_text(self, text: str) -> None:
        """Set the text to show (shortened as needed)."""
        self._full = text
        self._elide()

    def full_text(self) -> str:
        """The text before shortening."""
        return self._full

    def sizeHint(self) -> QSize:
        """As wide as the text needs, up to the limit."""
        hint = super().sizeHint()
        wanted = self.fontMetrics().horizontalAdvance(self._full) + self.iconSize().width() + 28
        return QSize(min(wanted, self._limit), hint.height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Shorten the text to the new width."""
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        room = max(20, self.width() - self.iconSize().width() - 28)
        self.setText(self.fontMetrics().elidedText(self._full, self._mode, room))


class ShrinkingComboBox(QComboBox):
    """A combo box that may get narrower than its text when the header has no room.

    Why: the header must fit a 1024-pixel window with the approval dock open; the
    label is then cut (Qt elides it) and the tooltip still says the whole of it.
    """

    def minimumSizeHint(self) -> QSize:
        """Room for the icon and the arrow (the icon alone still tells the choices apart)."""
        hint = super().minimumSizeHint()
        return QSize(min(hint.width(), self.iconSize().width() + 36), hint.height())


class ConversationHeader(QWidget):
    """Model switcher, working folder chooser, sandbox level and network switch.

    Signals:
        model_chosen(str, str, object): base URL, model id, context length (or None).
        add_server_requested(): "Add server…" was chosen.
        rediscover_requested(): "Search for servers again" was chosen.
        folder_chosen(str): The person picked a working folder.
        sandbox_chosen(str): A sandbox level (``workdir``, ``read_only``, ``off``).
        permission_mode_chosen(str): A permission mode (``default``, ``acceptEdits``,
            ``plan``, ``bypassPermissions``).
        network_toggled(bool): Whether commands may use the network.
        instructions_clicked(): The project-instructions mark was clicked (the
            window opens the conversation's settings, where the switch is).
    """

    model_chosen = Signal(str, str, object)
    add_server_requested = Signal()
    rediscover_requested = Signal()
    folder_chosen = Signal(str)
    sandbox_chosen = Signal(str)
    permission_mode_chosen = Signal(str)
    network_toggled = Signal(bool)
    instructions_clicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("conversationHeader")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 6, 12, 6)
        layout.setSpacing(6)

        self.model_button = ElidingToolButton(Qt.TextElideMode.ElideRight, 260)
        self.model_button.setObjectName("modelSwitcher")
        self.model_button.setAccessibleName("Model")
        set_icon(self.model_button, "bot")
        self.model_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.model_menu = QMenu(self.model_button)
        # One connection for the menu's actions, which say what they do in their data:
        # the menu is filled again after every turn, and PySide keeps a little of each
        # Python callable connected to an action after the action is gone.
        self.model_menu.triggered.connect(self._model_action_triggered)
        self.model_button.setMenu(self.model_menu)
        layout.addWidget(self.model_button)

        self.mode_box = ShrinkingComboBox()
        self.mode_box.setObjectName("permissionMode")
        self.mode_box.setAccessibleName("Permission mode")
        for mode, label in PERMISSION_MODE_LABELS.items():
            self.mode_box.addItem(label, mode)
            set_item_icon(self.mode_box, self.mode_box.count() - 1, _MODE_ICONS[mode])
            self.mode_box.setItemData(self.mode_box.count() - 1, PERMISSION_MODE_DETAILS[mode],
                                      Qt.ItemDataRole.ToolTipRole)
        self.mode_box.activated.connect(
            lambda i: self.permission_mode_chosen.emit(str(self.mode_box.itemData(i))))
        layout.addWidget(self.mode_box)
        layout.addStretch(1)

        self.folder_button = ElidingToolButton(Qt.TextElideMode.ElideMiddle, 300)
        self.folder_button.setObjectName("workFolder")
        self.folder_button.setAccessibleName("Working folder")
        set_icon(self.folder_button, "folder")
        # A menu: the recent folders first (one click), then the file dialog.
        self.folder_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.folder_menu = QMenu(self.folder_button)
        self.folder_menu.aboutToShow.connect(self._fill_folder_menu)
        self.folder_button.setMenu(self.folder_menu)
        layout.addWidget(self.folder_button)

        self.instructions_mark = QToolButton()
        self.instructions_mark.setObjectName("projectInstructionsMark")
        self.instructions_mark.setAccessibleName("Project instructions in use")
        self.instructions_mark.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.instructions_mark.setAutoRaise(True)
        set_icon(self.instructions_mark, "file-text")
        self.instructions_mark.clicked.connect(lambda _c=False: self.instructions_clicked.emit())
        self.instructions_mark.hide()
        layout.addWidget(self.instructions_mark)

        self.sandbox_box = ShrinkingComboBox()
        self.sandbox_box.setObjectName("sandboxLevel")
        self.sandbox_box.setAccessibleName("Sandbox level")
        for level, label in SANDBOX_LABELS.items():
            self.sandbox_box.addItem(label, level)
            set_item_icon(self.sandbox_box, self.sandbox_box.count() - 1,
                          "shield-alert" if level == "off" else "shield-check")
            self.sandbox_box.setItemData(self.sandbox_box.count() - 1, SANDBOX_TIPS[level],
                                         Qt.ItemDataRole.ToolTipRole)
        self.sandbox_box.activated.connect(
            lambda i: self.sandbox_chosen.emit(str(self.sandbox_box.itemData(i))))
        layout.addWidget(self.sandbox_box)

        self.network_button = QToolButton()
        self.network_button.setObjectName("networkSwitch")
        self.network_button.setAccessibleName("Network for commands")
        self.network_button.setCheckable(True)
        self.network_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.network_button.clicked.connect(
            lambda _c=False: self.network_toggled.emit(self.network_button.isChecked()))
        layout.addWidget(self.network_button)

        self._folder = Path.home()
        self._recent: list[Path] = []
        self._servers: list[Any] = []
        self._current: tuple[str | None, str | None] = (None, None)
        self.show_settings({}, None)
        self.set_servers([])

    # -- what the window tells it ---------------------------------------------

    def show_settings(self, settings: dict[str, Any], folder: Path | None) -> None:
        """Show a conversation's model, folder, sandbox level and network switch."""
        model = settings.get("model")
        local = settings.get("server")  # the models this computer runs: no address
        self._current = (local or settings.get("base_url"), model)
        self.model_button.set_full_text(str(model) if model else "Choose a model")
        where = "on this computer" if local else f"at {settings.get('base_url')}"
        self.model_button.setToolTip(
            f"{model} {where} — click to switch" if model
            else "Choose the server and model for this conversation")
        if folder is not None:
            self._folder = folder
            self.folder_button.set_full_text(short_path(folder))
            self.folder_button.setToolTip(
                f"Working folder: {folder}\nTools read and write here. Click to choose "
                "another folder or a recent one.")
        self.show_permission_mode(str(settings.get("permission_mode") or "default"))
        level = settings.get("sandbox", "workdir")
        index = max(0, self.sandbox_box.findData(level))
        self.sandbox_box.setCurrentIndex(index)
        self.sandbox_box.setToolTip(SANDBOX_TIPS[str(self.sandbox_box.itemData(index))])
        network = settings.get("network") is True
        unsandboxed = settings.get("sandbox") == "off"
        self.network_button.setEnabled(not unsandboxed)
        self.network_button.setChecked(network or unsandboxed)
        set_icon(self.network_button, "wifi" if network else "wifi-off")
        self.network_button.setText("Network on" if network else "Network off")
        self.network_button.setToolTip(
            "Without a sandbox, commands can reach the network like any program."
            if unsandboxed else
            "Commands may use the network. Click to cut them off." if network else
            "Commands cannot reach the network. Click to allow it for this conversation.")
        if unsandboxed:
            set_icon(self.network_button, "wifi")
            self.network_button.setText("Network on")

    def show_permission_mode(self, mode: str) -> None:
        """Select ``mode``; ``bypassPermissions`` in the danger colour (everything runs unasked)."""
        index = self.mode_box.findData(mode)
        if index < 0:
            index = self.mode_box.findData("default")
            mode = "default"
        self.mode_box.setCurrentIndex(index)
        self.mode_box.setToolTip(f"{PERMISSION_MODE_DETAILS[mode]}\nShift+Tab in the message "
                                 "box switches between the first three.")
        dangerous = mode == "bypassPermissions"
        if self.mode_box.property("danger") != dangerous:
            self.mode_box.setProperty("danger", dangerous)
            self.mode_box.style().unpolish(self.mode_box)
            self.mode_box.style().polish(self.mode_box)

    def show_instructions(self, found: Any) -> None:
        """Show whether the folder's ``AGENTS.md`` goes into the prompt (a ProjectInstructions).

        Hidden when the folder has no such file or the conversation leaves it out.
        """
        if found is None or not found.included:
            self.instructions_mark.hide()
            return
        self.instructions_mark.setText(found.name)
        cut = (f" Only its first {found.cap_bytes // 1024} KiB of {found.size:,} bytes are sent."
               if found.truncated else "")
        self.instructions_mark.setToolTip(
            f"{found.path} is added to the system prompt of every request.{cut} "
            "Click for its token cost and the switch that leaves it out.")
        self.instructions_mark.show()

    def show_sandbox(self, level: str, label: str, detail: str, sandboxed: bool) -> None:
        """Name the sandbox that will actually apply (the session works it out).

        Why: the chosen level alone said "Sandboxed" on a machine without
        bubblewrap, where commands would run with the account's full rights.
        """
        for index in range(self.sandbox_box.count()):
            self.sandbox_box.setItemText(
                index, SANDBOX_LABELS[str(self.sandbox_box.itemData(index))])
        index = self.sandbox_box.findData(level)
        if index < 0:
            return
        self.sandbox_box.setItemText(index, label)
        set_item_icon(self.sandbox_box, index, "shield-check" if sandboxed else "shield-alert")
        self.sandbox_box.setToolTip(detail)
        self.sandbox_box.setProperty("unsandboxed", not sandboxed)

    def set_servers(self, servers: list[Any]) -> None:
        """Fill the model menu with the running servers' models (ServerEntry list)."""
        self._servers = [s for s in servers if getattr(s, "up", False) and s.models]
        menu = self.model_menu
        menu.clear()
        for server in self._servers:
            menu.addSection(server.name if getattr(server, "local", False)
                            else f"{server.name} · {server.base_url}")
            for model in server.models:
                action = menu.addAction(model.id)
                action.setCheckable(True)
                action.setChecked((server.base_url, model.id) == self._current)
                action.setData((server.base_url, model.id, model.context_length))
        if not self._servers:
            empty = menu.addAction("No running server found")
            empty.setEnabled(False)
        menu.addSeparator()
        menu.addAction(icon("plus"), "Add server…").setData(_ADD_SERVER)
        menu.addAction(icon("refresh-cw"), "Search for servers again").setData(_REDISCOVER)

    def _model_action_triggered(self, action: QAction) -> None:
        chosen = action.data()
        if chosen == _ADD_SERVER:
            self.add_server_requested.emit()
        elif chosen == _REDISCOVER:
            self.rediscover_requested.emit()
        elif isinstance(chosen, tuple) and len(chosen) == 3:
            self.model_chosen.emit(*chosen)

    def model_names(self) -> list[str]:
        """The models offered in the menu (tests and accessibility checks)."""
        return [a.text() for a in self.model_menu.actions()
                if a.isCheckable()]

    def set_recent_folders(self, folders: list[Path]) -> None:
        """The folders picked lately, newest first, offered at the top of the folder menu."""
        self._recent = list(folders)

    def _fill_folder_menu(self) -> None:
        menu = self.folder_menu
        menu.clear()
        menu.addAction(icon("folder-open"), "Choose a folder…", self.choose_folder)
        if self._recent:
            menu.addSeparator()
            menu.addAction("Recent folders").setEnabled(False)  # Fusion draws no section titles
        for folder in self._recent:
            action = menu.addAction(short_path(folder))
            action.setToolTip(str(folder))
            action.setCheckable(True)
            action.setChecked(folder == self._folder)
            action.triggered.connect(lambda _c=False, f=str(folder): self.folder_chosen.emit(f))
        menu.setToolTipsVisible(True)

    def recent_folder_names(self) -> list[str]:
        """The recent folders the menu offers, as it shows them (tests, accessibility)."""
        self._fill_folder_menu()
        return [a.text() for a in self.folder_menu.actions() if a.isCheckable()]

    def choose_folder(self) -> None:
        """Ask for a working folder (non-blocking dialog)."""
        dialog = QFileDialog(self, "Choose the working folder", str(self._folder))
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
        dialog.fileSelected.connect(self.folder_chosen)
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()
