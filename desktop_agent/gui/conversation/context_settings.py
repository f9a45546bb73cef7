"""The settings dialog's "Context" box: compaction, what tool schemas cost, AGENTS.md.

On a small local model the context window is the scarce thing: every request
carries every enabled tool's schema, and a long run needs the oldest messages
compacted to go on. This box lets a person choose how (summarise, drop, off)
and see, per tool and per MCP server, how many tokens the schemas take
before the conversation even starts, and the same for the working folder's
project instructions (``AGENTS.md``), with the switch that leaves them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QTreeWidget,
    QTreeWidgetItem,
    QWidget,
)

#: (label, setting value) in the order the combo box lists them.
COMPACTION_CHOICES = (
    ("Summarise older messages", "summarise"),
    ("Drop the oldest messages", "drop_oldest"),
    ("Off (the model's error ends the turn)", "off"),
)


class ContextSettingsBox(QGroupBox):
    """Compaction mode and the tool schemas' token cost.

    Args:
        settings: The conversation's settings (``compaction``, ``tools``).
        costs: ``SchemaCost`` entries (name, group, tokens) for every offered tool.
        instructions: The working folder's ``ProjectInstructions`` (None: it has none).
    """

    def __init__(self, settings: dict[str, Any], costs: Sequence[Any],
                 parent: QWidget | None = None, *, instructions: Any = None) -> None:
        super().__init__("Context", parent)
        form = QFormLayout(self)
        self.compaction = QComboBox()
        self.compaction.setObjectName("compactionMode")
        for label, value in COMPACTION_CHOICES:
            self.compaction.addItem(label, value)
        current = self.compaction.findData(settings.get("compaction") or "summarise")
        self.compaction.setCurrentIndex(max(0, current))
        self.compaction.setToolTip(
            "When a conversation nears the model's context window. The conversation here "
            "always keeps every message; only what is sent to the model is compacted.")
        form.addRow("When the context fills", self.compaction)
        enabled = settings.get("tools")
        sent = [c for c in costs if enabled is None or c.name in enabled]
        self.total_label = QLabel(
            f"Tool schemas sent with every request: {sum(c.tokens for c in sent):,} tokens")
        self.total_label.setObjectName("schemaTokens")
        form.addRow(self.total_label)
        self.costs = QTreeWidget()
        self.costs.setObjectName("schemaCosts")
        self.costs.setHeaderLabels(["Tool", "Tokens"])
        self.costs.setRootIsDecorated(True)
        self.costs.setMaximumHeight(140)
        groups: dict[str, QTreeWidgetItem] = {}
        totals: dict[str, int] = {}
        for cost in costs:
            group = groups.get(cost.group)
            if group is None:
                group = groups[cost.group] = QTreeWidgetItem(self.costs, [cost.group, ""])
            QTreeWidgetItem(group, [cost.name, f"{cost.tokens:,}"])
            totals[cost.group] = totals.get(cost.group, 0) + cost.tokens
        for name, item in groups.items():
            item.setText(1, f"{totals[name]:,}")
        self.costs.resizeColumnToContents(0)
        form.addRow(self.costs)
        self._instructions = instructions
        self.instructions = QCheckBox()
        self.instructions.setObjectName("projectInstructions")
        self.instructions.setChecked(settings.get("project_instructions") is not False)
        if instructions is None:
            self.instructions.setText("Project instructions: the working folder has no "
                                      "AGENTS.md or CLAUDE.md")
            self.instructions.setEnabled(False)
        else:
            self.show_instruction_tokens(None)
            cut = (f" It is {instructions.size:,} bytes: only the first "
                   f"{instructions.cap_bytes // 1024} KiB are sent." if instructions.truncated
                   else f" At most its first {instructions.cap_bytes // 1024} KiB are sent.")
            self.instructions.setToolTip(
                f"{instructions.path} goes into the system prompt of every request, read "
                f"again when it changes between turns.{cut}")
        form.addRow(self.instructions)

    def show_instruction_tokens(self, tokens: int | None) -> None:
        """Show what the project instructions cost per request (None: still counting)."""
        found = self._instructions
        if found is None:
            return
        cost = "counting tokens…" if tokens is None else f"{tokens:,} tokens"
        cut = ", cut at the cap" if found.truncated else ""
        self.instructions.setText(f"Send the project's {found.name} ({cost}{cut})")

    def group_tokens(self) -> dict[str, int]:
        """Total schema tokens per group as shown (built-in, each MCP server...)."""
        root = self.costs.invisibleRootItem()
        groups = [root.child(i) for i in range(root.childCount())]
        return {g.text(0): int(g.text(1).replace(",", "")) for g in groups if g is not None}

    def instructions_setting(self) -> bool | None:
        """The ``project_instructions`` setting as chosen (None: the default, on)."""
        return None if self.instructions.isChecked() else False

    def chosen_compaction(self) -> str:
        """The compaction setting as chosen."""
        return str(self.compaction.currentData())
