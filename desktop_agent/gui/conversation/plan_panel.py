"""The model's plan, pinned above the composer.

Why pinned there and not in the transcript: the plan is the one thing of a
long run a person wants in sight while the transcript scrolls on: what is
done, what runs now, what comes next. It shows the plan the model last set
with ``update_plan`` (done steps struck through, the running one in the
accent colour); its header folds it to one line. It has no logic of its own:
the controller hands it a plan (or None, to hide it).
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QLabel, QToolButton, QVBoxLayout, QWidget

from desktop_agent.gui.icons import set_icon
from desktop_agent.gui.theme import current_colours, theme_signals

#: How each status reads (marker, words for screen readers).
MARKERS = {"completed": ("✓", "done"), "in_progress": ("●", "in progress"),
           "pending": ("○", "to do")}


def plan_summary(plan: Any) -> str:
    """``Plan · 1 of 3 done · now: Fix the parser`` (the folded panel's one line)."""
    counts = plan.counts()
    text = f"Plan · {counts['completed']} of {len(plan.steps)} done"
    running = next((s.step for s in plan.steps if s.status == "in_progress"), None)
    return text + (f" · now: {running}" if running else "")


class PlanPanel(QFrame):
    """The checklist the model keeps, folded to its summary on request; no signals."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("planPanel")
        self.setAccessibleName("Plan")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 4, 10, 6)
        layout.setSpacing(2)
        self.toggle = QToolButton()
        self.toggle.setObjectName("planToggle")
        self.toggle.setCheckable(True)
        self.toggle.setChecked(True)
        self.toggle.setAutoRaise(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setToolTip("The model's plan (it updates it with update_plan). "
                               "Click to fold or unfold.")
        self.toggle.toggled.connect(self._fold)
        layout.addWidget(self.toggle)
        self.steps = QLabel()
        self.steps.setObjectName("planSteps")
        self.steps.setTextFormat(Qt.TextFormat.RichText)
        self.steps.setWordWrap(True)
        self.steps.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.steps)
        self._plan: Any = None
        theme_signals().changed.connect(self._on_theme)
        self.hide()

    @property
    def plan(self) -> Any:
        """The plan shown (None when hidden)."""
        return self._plan

    def show_plan(self, plan: Any) -> None:
        """Show a ``Plan`` (from the session), or hide the panel for None or no steps."""
        self._plan = plan if plan is not None and plan.steps else None
        self._render()

    def step_texts(self) -> list[tuple[str, str]]:
        """(status, step) as shown, for tests and accessibility checks."""
        return [] if self._plan is None else [(s.status, s.step) for s in self._plan.steps]

    def _on_theme(self, _dark: bool) -> None:
        self._render()  # the colours are in the text

    def _fold(self, unfolded: bool) -> None:
        set_icon(self.toggle, "chevron-down" if unfolded else "chevron-right")
        self.steps.setVisible(unfolded and self._plan is not None)

    def _render(self) -> None:
        plan = self._plan
        if plan is None:
            self.hide()
            return
        colours = current_colours()
        lines = []
        if plan.explanation:
            lines.append(f'<div style="color:{colours.muted}">{html.escape(plan.explanation)}'
                         "</div>")
        for step in plan.steps:
            marker, words = MARKERS[step.status]
            text = html.escape(step.step)
            if step.status == "completed":
                line = (f'<span style="color:{colours.success}">{marker}</span> '
                        f'<s style="color:{colours.muted}">{text}</s>')
            elif step.status == "in_progress":
                line = (f'<span style="color:{colours.accent}">{marker}</span> '
                        f'<b style="color:{colours.accent}">{text}</b>')
            else:
                line = f'<span style="color:{colours.muted}">{marker}</span> {text}'
            lines.append(f'<div title="{words}">{line}</div>')
        self.steps.setText("".join(lines))
        self.toggle.setText(plan_summary(plan))
        self.toggle.setAccessibleDescription(
            "; ".join(f"{MARKERS[s.status][1]}: {s.step}" for s in plan.steps))
        self._fold(self.toggle.isChecked())
        self.show()
