"""Conversation settings → Skills: each skill, what it costs in the prompt, a switch.

The list arrives from the session (``skill_listing``: a worker thread reads the
skill folders and counts with the context meter's counter) after the dialog
opened; until then, and when nothing was found, the box says so. The switches
write the ``skills_off`` setting, which the REST API reads and writes too.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QGridLayout,
    QGroupBox,
    QLabel,
    QVBoxLayout,
    QWidget,
)


class SkillsBox(QGroupBox):
    """The skills of the conversation (project and user level), each on or off.

    Attributes:
        switches: One check box per skill, by name (checked: offered to the model).
        total: What the skills section of the system prompt costs with the switches now.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Skills", parent)
        self.setObjectName("skillsBox")
        self._listing: Any = None
        self.switches: dict[str, QCheckBox] = {}
        layout = QVBoxLayout(self)
        self.total = QLabel("Looking for skills…")
        self.total.setObjectName("skillsTokens")
        self.total.setWordWrap(True)
        layout.addWidget(self.total)
        self._grid = QGridLayout()
        self._grid.setColumnStretch(1, 1)
        self._grid.setHorizontalSpacing(12)
        layout.addLayout(self._grid)
        self.skipped = QLabel()
        self.skipped.setObjectName("skillsSkipped")
        self.skipped.setWordWrap(True)
        self.skipped.hide()
        layout.addWidget(self.skipped)

    def show_listing(self, listing: Any) -> None:
        """Show the skills (a session ``SkillListing``)."""
        self._listing = listing
        for row, skill in enumerate(listing.skills):
            switch = QCheckBox(skill.name)
            switch.setObjectName(f"skill_{skill.name}")
            switch.setChecked(skill.name not in listing.off)
            switch.setToolTip(str(skill.folder))
            switch.toggled.connect(lambda _on: self._show_total())
            self.switches[skill.name] = switch
            about = QLabel(skill.description)
            about.setWordWrap(True)
            about.setProperty("muted", True)
            about.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            cost = QLabel(f"{skill.scope} · {listing.tokens[skill.name]:,} tokens")
            cost.setObjectName(f"skillTokens_{skill.name}")
            cost.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
            self._grid.addWidget(switch, row, 0, Qt.AlignmentFlag.AlignTop)
            self._grid.addWidget(about, row, 1)
            self._grid.addWidget(cost, row, 2, Qt.AlignmentFlag.AlignTop)
        if listing.skipped:
            self.skipped.setText("Not used: " + " ".join(listing.skipped))
            self.skipped.show()
        self._show_total()

    def show_problem(self, sentence: str) -> None:
        """The skills could not be read."""
        self.total.setText(sentence)

    def off(self) -> frozenset[str]:
        """The skills switched off now."""
        return frozenset(name for name, box in self.switches.items() if not box.isChecked())

    def _show_total(self) -> None:
        listing = self._listing
        if listing is None:
            return
        if not listing.skills:
            self.total.setText("No skills found. A skill is a folder with a SKILL.md in the "
                               "working folder's .agents/skills/ or in your data folder's "
                               "skills/.")
            return
        on = len(listing.skills) - len(self.off())
        self.total.setText(
            f"{on} of {len(listing.skills)} on: their names and descriptions cost "
            f"{listing.prompt_tokens(self.off()):,} tokens of the system prompt. The model "
            "loads a skill's instructions only when it applies.")

    def changes(self) -> dict[str, Any]:
        """``skills_off`` as switched (nothing before the list arrived)."""
        if self._listing is None:
            return {}
        known = {s.name for s in self._listing.skills}
        # names switched off here, and those off that were not found now (a folder
        # that was moved keeps its setting)
        off = sorted(self.off() | (self._listing.off - known))
        return {"skills_off": off or None}
