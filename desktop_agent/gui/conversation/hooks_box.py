"""What config.json adds to every conversation's agent: hook commands (and, later, subagents).

Shown read-only in Conversation settings: a hook runs at every matching event,
so a person should be able to see which commands those are without opening
the file. The problem sentence says why none run when the file's ``hooks`` are
malformed.
"""

from __future__ import annotations

from PySide6.QtWidgets import QGroupBox, QLabel, QListWidget, QVBoxLayout, QWidget

from desktop_agent.session import AppConfig


class HooksBox(QGroupBox):
    """The hook commands of config.json, one line each: event, tools matched, command."""

    def __init__(self, config: AppConfig | None = None, parent: QWidget | None = None) -> None:
        super().__init__("Hooks (config.json)", parent)
        self.setObjectName("hooksBox")
        layout = QVBoxLayout(self)
        self.hooks = QListWidget()
        self.hooks.setObjectName("configuredHooks")
        self.hooks.setMaximumHeight(90)
        layout.addWidget(self.hooks)
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.problem.setObjectName("hooksProblem")
        self.problem.hide()
        layout.addWidget(self.problem)
        hooks, problem = (config or AppConfig()).command_hooks()
        for hook in hooks:
            tools = f" [{hook.matcher}]" if hook.matcher not in (None, "", "*") else ""
            self.hooks.addItem(f"{hook.event_name}{tools}: {hook.command}  "
                               f"(≤ {hook.timeout:g} s, in the sandbox)")
        if not hooks:
            self.hooks.addItem("No hooks: add \"hooks\" to config.json to run commands at "
                               "PreToolUse, Stop, Notification…")
        if problem:
            self.problem.setText(problem)
            self.problem.show()

    def lines(self) -> list[str]:
        """The lines shown (tests and accessibility checks)."""
        return [self.hooks.item(i).text() for i in range(self.hooks.count())]
