"""Per-conversation settings, and the remembered approvals that can be revoked.

The dialog edits a copy of the settings and emits the changes; the window
hands them to the conversation's controller. Revoking a remembered approval
is applied at once (it only ever makes the app ask more).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.core.tooling.permissions import PermissionRule
from desktop_agent.gui.conversation.command_limits_box import CommandLimitsBox
from desktop_agent.gui.conversation.command_preview_box import CommandPreviewBox
from desktop_agent.gui.conversation.context_settings import ContextSettingsBox
from desktop_agent.gui.conversation.hooks_box import HooksBox
from desktop_agent.gui.conversation.skills_box import SkillsBox
from desktop_agent.gui.theme import style_chrome
from desktop_agent.session import (
    RULES_KEY,
    AppConfig,
    ConfigWriteError,
    asks_before_tools,
    conversation_allowed_tools,
    revoke_in_conversation,
)

_ROLE = Qt.ItemDataRole.UserRole
# The setting's three values: unset lets the SDK choose per server and model.
_TOOL_CALL_CHOICES: tuple[tuple[str, bool | None], ...] = (
    ("Automatic (recommended)", None),
    ("Constrained decoding: only well-formed calls", True),
    ("Native tool calls", False),
)


class ConversationSettingsDialog(QDialog):
    """Edits one conversation's settings.

    Signals:
        applied(dict): The changed settings (keys with None are removed).
        conversation_approval_revoked(str): A tool no longer allowed in this conversation.
        test_model_requested(): "Test this model" was clicked (run the tool-call probe).
    """

    applied = Signal(dict)
    conversation_approval_revoked = Signal(str)
    test_model_requested = Signal()

    def __init__(self, title: str, settings: dict[str, Any], tool_names: list[str],
                 parent: QWidget | None = None, *, schema_costs: Sequence[Any] = (),
                 instructions: Any = None) -> None:
        super().__init__(parent)
        style_chrome(self)
        self.setWindowTitle(f"Settings — {title}")
        self.setObjectName("conversationSettings")
        self._settings = dict(settings)
        # The settings scroll above the buttons: all of them are taller than a small
        # screen (or window), and the bottom ones must stay reachable.
        outer = QVBoxLayout(self)
        scroll = QScrollArea()
        scroll.setObjectName("settingsScroll")
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        page = QWidget()
        page.setObjectName("settingsPage")
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 0, 0, 0)

        model = QGroupBox("Model")
        form = QFormLayout(model)
        server = settings.get("base_url") or "none chosen"
        form.addRow("Server", QLabel(f"{server}"))
        form.addRow("Model", QLabel(str(settings.get("model") or "none chosen")))
        self.context_window = QLabel("Asking the server…" if settings.get("model")
                                     else "Known once a server and model are chosen.")
        self.context_window.setObjectName("contextWindowInUse")
        self.context_window.setWordWrap(True)
        form.addRow("Context window", self.context_window)
        self.system_prompt = QPlainTextEdit(str(settings.get("system_prompt") or ""))
        self.system_prompt.setPlaceholderText("Instructions sent before every message (optional)")
        self.system_prompt.setMaximumHeight(110)
        form.addRow("System prompt", self.system_prompt)
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0.0, 2.0)
        self.temperature.setSingleStep(0.1)
        self.temperature.setValue(float(settings.get("temperature", 0.7)))
        form.addRow("Temperature", self.temperature)
        self.max_tokens = QSpinBox()
        self.max_tokens.setRange(1, 1_000_000)
        self.max_tokens.setValue(int(settings.get("max_tokens", 4096)))
        form.addRow("Max tokens per reply", self.max_tokens)
        layout.addWidget(model)

        tools = QGroupBox("Tools")
        tools_layout = QVBoxLayout(tools)
        enabled = settings.get("tools")
        self.tool_boxes: dict[str, QCheckBox] = {}
        grid = QHBoxLayout()
        columns = [QVBoxLayout(), QVBoxLayout()]
        for i, name in enumerate(tool_names):
            box = QCheckBox(name)
            box.setChecked(enabled is None or name in enabled)
            self.tool_boxes[name] = box
            columns[i % 2].addWidget(box)
        for column in columns:
            column.addStretch(1)
            grid.addLayout(column)
        tools_layout.addLayout(grid)
        self.auto_execute = QCheckBox("Run tools without asking (auto-execute)")
        self.auto_execute.setChecked(not asks_before_tools(settings))
        self.auto_execute.setToolTip("Deny rules still apply. Off: every call waits in the "
                                     "Approvals panel.")
        tools_layout.addWidget(self.auto_execute)
        mode_row = QHBoxLayout()
        mode_row.addWidget(QLabel("Tool calls"))
        self.constrained = QComboBox()
        self.constrained.setObjectName("constrainedToolCalls")
        for label, value in _TOOL_CALL_CHOICES:
            self.constrained.addItem(label, value)
        chosen = settings.get("constrained_tool_calls")
        self.constrained.setCurrentIndex(
            next(i for i, (_, v) in enumerate(_TOOL_CALL_CHOICES)
                 if v == (chosen if isinstance(chosen, bool) else None)))
        self.constrained.setToolTip(
            "Constrained: the server may only write valid calls of enabled tools or a plain "
            "answer (for small models that misspell tools, or never call them). Needs "
            "llama.cpp, LM Studio, vLLM or Ollama. Automatic uses it where the server "
            "supports it and the model is not known to call tools natively.")
        mode_row.addWidget(self.constrained, 1)
        tools_layout.addLayout(mode_row)
        self.tool_call_mode = QLabel("In use: decided when the server answers…")
        self.tool_call_mode.setObjectName("toolCallModeInUse")
        self.tool_call_mode.setWordWrap(True)
        tools_layout.addWidget(self.tool_call_mode)
        probe_row = QHBoxLayout()
        self.probe_result = QLabel("Measured: not yet. The test asks the model four short "
                                   "questions each way (about a minute on a small CPU).")
        self.probe_result.setObjectName("toolCallProbeResult")
        self.probe_result.setWordWrap(True)
        probe_row.addWidget(self.probe_result, 1)
        self.test_model_button = QPushButton("Test this model")
        self.test_model_button.setObjectName("testThisModel")
        self.test_model_button.setToolTip(
            "Ask the model a few short questions with native, text-format and constrained "
            "tool calls; the way that works best is used from then on.")
        self.test_model_button.clicked.connect(self.test_model_requested)
        probe_row.addWidget(self.test_model_button)
        tools_layout.addLayout(probe_row)
        self.tool_decision = QCheckBox("Ask the model first whether a tool fits")
        self.tool_decision.setObjectName("toolDecision")
        self.tool_decision.setChecked(settings.get("tool_decision") is True)
        self.tool_decision.setToolTip(
            "With constrained calls: before a reply that could call a tool, two one-token "
            "requests ask the model whether one of the tools does what the message asks, and "
            "a 'no' gets an answer instead of a call. Fewer unwanted calls; a small model may "
            "also miss right ones. Needs a server that returns logprobs (llama.cpp does).")
        tools_layout.addWidget(self.tool_decision)
        layout.addWidget(tools)
        self.commands_box = CommandPreviewBox(settings)
        layout.addWidget(self.commands_box)
        self.limits_box = CommandLimitsBox(settings)
        layout.addWidget(self.limits_box)
        self.context_box = ContextSettingsBox(settings, schema_costs,
                                              instructions=instructions)
        layout.addWidget(self.context_box)
        self.skills_box = SkillsBox()
        layout.addWidget(self.skills_box)
        self.hooks_box = HooksBox()
        layout.addWidget(self.hooks_box)

        remembered = QGroupBox("Remembered approvals")
        r_layout = QVBoxLayout(remembered)
        self.approvals = QListWidget()
        self.approvals.setObjectName("rememberedApprovals")
        r_layout.addWidget(self.approvals)
        revoke_row = QHBoxLayout()
        revoke_row.addStretch(1)
        self.revoke_button = QPushButton("Revoke")
        self.revoke_button.clicked.connect(self._revoke_selected)
        revoke_row.addWidget(self.revoke_button)
        r_layout.addLayout(revoke_row)
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #d9534f;")
        self.problem.hide()
        r_layout.addWidget(self.problem)
        config_problem = AppConfig().problem()
        if config_problem:
            self.problem.setText(f"The config file cannot be used, so no remembered approval "
                                 f"applies and every call asks: {config_problem}")
            self.problem.show()
        self.approvals.setMinimumHeight(self.approvals.fontMetrics().lineSpacing() * 4)
        layout.addWidget(remembered, 1)
        self._fill_approvals()
        scroll.setWidget(page)
        outer.addWidget(scroll, 1)
        self._scroll = scroll

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.setObjectName("settingsButtons")
        buttons.accepted.connect(self._apply)
        buttons.rejected.connect(self.reject)
        outer.addWidget(buttons)
        self._fit(page, scroll, outer)

    def scroll_to(self, widget: QWidget) -> None:
        """Scroll the settings so that ``widget`` (one of them) is in sight."""
        self._scroll.ensureWidgetVisible(widget)

    def _fit(self, page: QWidget, scroll: QScrollArea, outer: QVBoxLayout) -> None:
        """Open as tall as the settings, but no taller than the window (nor the screen).

        The window is what the person sized to what they can see: a dialog
        reaching below it may reach below the screen too, and its OK with it.
        """
        room = self.screen().availableGeometry().height()
        owner = self.parentWidget()
        if owner is not None:
            room = min(room, owner.window().height())
        frame = 40  # the title bar the window manager adds
        wanted = page.sizeHint().height() + outer.sizeHint().height() \
            - scroll.sizeHint().height() + 2
        width = max(520, page.sizeHint().width() + scroll.verticalScrollBar().sizeHint().width()
                    + 24)
        self.resize(width, max(320, min(wanted, room - frame)))

    def _fill_approvals(self) -> None:
        self.approvals.clear()
        for name in conversation_allowed_tools(self._settings):
            item = QListWidgetItem(f"{name} — allowed in this conversation")
            item.setData(_ROLE, ("conversation", name))
            self.approvals.addItem(item)
        for rule in AppConfig().global_rules():
            if rule.decision != "allow":
                continue
            args = ", ".join(f"{k}={v}" for k, v in rule.arguments.items())
            suffix = f" ({args})" if args else ""
            item = QListWidgetItem(f"{rule.tool}{suffix} — always allowed (all conversations)")
            item.setData(_ROLE, ("rule", rule.to_dict()))
            self.approvals.addItem(item)
        if not self.approvals.count():
            item = QListWidgetItem("No remembered approvals: every tool call asks first.")
            item.setFlags(Qt.ItemFlag.NoItemFlags)
            self.approvals.addItem(item)
        self.revoke_button.setEnabled(self.approvals.count() > 0)

    def _revoke_selected(self) -> None:
        item = self.approvals.currentItem()
        data = item.data(_ROLE) if item is not None else None
        if not data:
            return
        kind, value = data
        if kind == "conversation":
            self._settings = {**self._settings, RULES_KEY:
                              revoke_in_conversation(self._settings, value)}
            self.conversation_approval_revoked.emit(value)
        else:
            try:
                AppConfig().remove_rule(PermissionRule.from_dict(value))
            except ConfigWriteError as exc:
                self.problem.setText(str(exc))
                self.problem.show()
        self._fill_approvals()

    def changes(self) -> dict[str, Any]:
        """The settings as edited (None for keys to remove)."""
        chosen = [name for name, box in self.tool_boxes.items() if box.isChecked()]
        all_on = len(chosen) == len(self.tool_boxes)
        return {
            "system_prompt": self.system_prompt.toPlainText().strip() or None,
            "temperature": round(self.temperature.value(), 2),
            "max_tokens": self.max_tokens.value(),
            "tools": None if all_on else chosen,
            # One key for both front ends: the REST API's confirmation mode.
            "confirm_tools": not self.auto_execute.isChecked(),
            "auto_execute": None,
            "compaction": self.context_box.chosen_compaction(),
            "constrained_tool_calls": self.constrained.currentData(),
            "tool_decision": True if self.tool_decision.isChecked() else None,
            "project_instructions": self.context_box.instructions_setting(),
            **self.limits_box.changes(),
            **self.commands_box.changes(),
            **self.skills_box.changes(),
        }

    def show_context_window(self, window: Any) -> None:
        """Show the window the server applies (a ``ContextWindow``) and where it came from."""
        if window is None or window.applied is None:
            self.context_window.setText(
                "Unknown: the server does not say (compaction waits for its refusal)." if
                window is not None else "Known once a server and model are chosen.")
            return
        trained = f"; the model was trained for {window.trained:,}" if window.trained and \
            window.trained != window.applied else ""
        self.context_window.setText(
            f"{window.applied:,} tokens per request, from {window.source}{trained}.")

    def show_tool_call_mode(self, mode: Any) -> None:
        """Say which tool-call mode the model gets now and why (None: no model chosen)."""
        if mode is None:
            self.tool_call_mode.setText("In use: decided once a server and model are chosen.")
            return
        self.show_tool_call_mode_text(mode.reason)

    def show_tool_call_mode_text(self, reason: str) -> None:
        """Say the tool-call mode's reason as the core gave it."""
        self.tool_call_mode.setText(f"In use: {reason}")

    def show_probe_running(self) -> None:
        """The probe is under way: say so and hold the button."""
        self.test_model_button.setEnabled(False)
        self.probe_result.setText("Measuring: asking the model a few short questions…")

    def show_probe_result(self, result: Any) -> None:
        """Show a tool-call probe's result (a ``ProbeResult``; None: never measured)."""
        self.test_model_button.setEnabled(True)
        if result is None:
            return
        if result.error:
            self.probe_result.setText(f"Not measured: {result.error}")
            return
        text = f"Measured: {result.summary}."
        if result.template_ignores_tools:
            text += " The chat template drops tools."
        self.probe_result.setText(text)

    def show_probe_error(self, sentence: str) -> None:
        """The probe could not start (no model, a missing key): say why."""
        self.test_model_button.setEnabled(True)
        self.probe_result.setText(sentence)

    def _apply(self) -> None:
        self.applied.emit(self.changes())
        self.accept()
