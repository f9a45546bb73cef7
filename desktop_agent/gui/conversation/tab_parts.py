"""The widgets of one conversation's page, laid out: header, notice, transcript, composer.

Why apart from :class:`~.conversation_tab.ConversationTab`: a tab restored in the
background is not built until it is first shown (or a turn, an error or an approval
needs it), and these widgets are most of what a tab costs (``bench/tab_memory.py``).
The tab decides *when* to build them and wires them to its controller; this module
only makes and places them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.conversation.composer import ComposerBox
from desktop_agent.gui.conversation.context_window_banner import ContextWindowBanner
from desktop_agent.gui.conversation.conversation_header import ConversationHeader
from desktop_agent.gui.conversation.doctor_banner import DoctorBanner
from desktop_agent.gui.conversation.files_changed_bar import FilesChangedBar
from desktop_agent.gui.conversation.status_line import StatusLine
from desktop_agent.gui.icons import icon, set_icon
from desktop_agent.gui.servers.server_picker import TRY_MODEL_COMMAND
from desktop_agent.gui.theme import style_chrome_when_shown
from desktop_agent.gui.transcript import TranscriptView
from desktop_agent.gui.transcript.view import COLUMN_MAX_WIDTH

if TYPE_CHECKING:
    from desktop_agent.gui.conversation.plan_panel import PlanPanel


class ServerNotice(QFrame):
    """A banner above the transcript when no model can be used yet.

    Signals:
        choose_server(): "Choose server…" was clicked.
        retry(): "Retry" (search for servers again) was clicked.
        enter_url(): "Enter URL…" was clicked.
    """

    choose_server = Signal()
    retry = Signal()
    enter_url = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("serverNotice")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 8)
        badge = QLabel()
        badge.setPixmap(icon("info").pixmap(20, 20))
        layout.addWidget(badge)
        self.message = QLabel()
        self.message.setWordWrap(True)
        layout.addWidget(self.message, 1)
        self.retry_button = QPushButton("Retry")
        set_icon(self.retry_button, "refresh-cw")
        self.retry_button.clicked.connect(self.retry)
        self.url_button = QPushButton("Enter URL…")
        self.url_button.clicked.connect(self.enter_url)
        self.choose_button = QPushButton("Choose server…")
        self.choose_button.clicked.connect(self.choose_server)
        for button in (self.retry_button, self.url_button, self.choose_button):
            layout.addWidget(button)

    def show_state(self, state: str) -> None:
        """``searching``, ``nothing_running``, ``choose`` or ``hidden``."""
        texts = {
            "searching": "Looking for model servers on this computer…",
            "nothing_running": "No model server is running. Start LM Studio, Ollama, llama.cpp "
                               "or vLLM and press Retry, or enter the URL of an "
                               "OpenAI-compatible server. To try the app without one, run "
                               f"“{TRY_MODEL_COMMAND}” in a terminal (a small "
                               "model, CPU only) and press Retry.",
            "choose": "Choose a server and a model for this conversation.",
        }
        if state not in texts:
            self.hide()
            return
        self.message.setText(texts[state])
        self.retry_button.setVisible(state == "nothing_running")
        self.url_button.setVisible(state == "nothing_running")
        self.choose_button.setVisible(state == "choose")
        self.show()


class TabParts:
    """One conversation page's widgets, made and placed in the page's layout.

    Layout: the header (model, folder, sandbox, network) on top; the transcript
    as the main surface (or a hint while the conversation is empty); the files
    bar, the plan, the rounded composer and the status line below it, centred in
    the same reading column as the messages.

    Attributes:
        header: Model, folder, sandbox and network of the conversation.
        notice: The "no server yet" banner (hidden until the window says otherwise).
        doctor: The model doctor's findings (a template without tools, a slow prompt).
        window_banner: The "conversation longer than the server's window" banner, with
            its fix (hidden until a turn's check says so).
        transcript: The messages.
        empty_hint: What to do in an empty conversation, shown instead of the transcript.
        pages: Shows either the transcript or the empty hint.
        files_bar: What the last turn changed in the folder, with Undo.
        plan_panel: The model's plan, made for the first plan (most conversations keep
            none, and an idle window need not load the panel's module).
        composer_box: The message box with its buttons and attachments.
        status_line: Context use, figures and "Processing prompt…".
    """

    def __init__(self, layout: QVBoxLayout) -> None:
        # The chrome above and below the transcript sits in two holders that carry the
        # stylesheet (see _chrome_holder): not the transcript, and not six pieces each.
        top, top_layout = _chrome_holder("conversationTopChrome")
        self.header = ConversationHeader()
        top_layout.addWidget(self.header)
        self.notice = ServerNotice()
        self.notice.hide()
        top_layout.addLayout(_centred(self.notice, margins=(16, 8, 16, 0)))
        self.doctor = DoctorBanner()
        top_layout.addLayout(_centred(self.doctor, margins=(16, 8, 16, 0)))
        self.window_banner = ContextWindowBanner()
        top_layout.addLayout(_centred(self.window_banner, margins=(16, 8, 16, 0)))
        layout.addWidget(top)

        self.transcript = TranscriptView()
        self.empty_hint = QLabel()
        self.empty_hint.setObjectName("emptyConversationHint")
        self.empty_hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_hint.setWordWrap(True)
        self.pages = QStackedWidget()
        self.pages.addWidget(self.empty_hint)
        self.pages.addWidget(self.transcript)
        layout.addWidget(self.pages, 1)

        bottom, bottom_layout = _chrome_holder("conversationBottomChrome")
        self.files_bar = FilesChangedBar()
        bottom_layout.addLayout(_centred(self.files_bar, margins=(16, 4, 16, 0)))
        self._bottom_layout, self._plan_row = bottom_layout, bottom_layout.count()
        self._plan_panel: PlanPanel | None = None
        self.composer_box = ComposerBox()
        bottom_layout.addLayout(_centred(self.composer_box, margins=(16, 4, 16, 2)))
        self.status_line = StatusLine()
        bottom_layout.addLayout(_centred(self.status_line, margins=(16, 0, 16, 6)))
        layout.addWidget(bottom)
        # Styled when first shown (see _chrome_holder).
        style_chrome_when_shown(top, bottom)

    @property
    def plan_panel(self) -> PlanPanel:
        """The model's plan, below the files bar; made on first use."""
        if self._plan_panel is None:
            from desktop_agent.gui.conversation.plan_panel import PlanPanel

            self._plan_panel = PlanPanel()
            self._bottom_layout.insertLayout(
                self._plan_row, _centred(self._plan_panel, margins=(16, 4, 16, 0)))
        return self._plan_panel

    def show_plan(self, plan: Any) -> None:
        """Show a ``Plan`` from the session; with no steps and no panel yet, make none."""
        if self._plan_panel is not None or (plan is not None and plan.steps):
            self.plan_panel.show_plan(plan)


def _chrome_holder(name: str) -> tuple[QWidget, QVBoxLayout]:
    """A plain widget that holds chrome pieces and carries the stylesheet for them.

    Why: Qt parses a stylesheet again for each widget it is set on (the app's sheet
    of ~60 rules: ~180 kB per widget, against ~10 kB for the widget itself;
    ``bench/tab_memory.py``). Set on six pieces of every tab, the sheet made a
    background tab cost 1.94 MB, 0.56 MB without it; set on the two holders, which
    style the same pieces, 1.35 MB; and a tab gets the sheet only when it is first
    shown.
    """
    holder = QWidget()
    holder.setObjectName(name)
    holder_layout = QVBoxLayout(holder)
    holder_layout.setContentsMargins(0, 0, 0, 0)
    holder_layout.setSpacing(0)
    return holder, holder_layout


def _centred(widget: QWidget, *, margins: tuple[int, int, int, int]) -> QHBoxLayout:
    """A row that keeps ``widget`` in the reading column (centred, at most its width)."""
    widget.setMaximumWidth(COLUMN_MAX_WIDTH - 8)
    row = QHBoxLayout()
    row.setContentsMargins(*margins)
    row.addStretch(0)
    row.addWidget(widget, 1)
    row.addStretch(0)
    return row
