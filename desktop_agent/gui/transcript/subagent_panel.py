"""The subagent a delegation card runs: its model and figures in one line, its run below.

Why on the card and live: a delegated task can take minutes on a small model,
and the person should see the subagent read, call and write while it works
(open while it runs, as Claude Code shows a Task), then fold it away. The
figures (model, requests, tokens, time) say what the delegation cost.
"""

from __future__ import annotations

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QVBoxLayout, QWidget

from desktop_agent.gui.transcript.collapsible_section import CollapsibleSection
from desktop_agent.gui.transcript.items import SubagentRun
from desktop_agent.gui.transcript.text_views import FittedTextBrowser
from desktop_agent.gui.transcript.theme import TranscriptTheme

_MARKS = {"running…": "…", "done": "✓", "failed": "✗"}


def figures_line(run: SubagentRun) -> str:
    """``writer · qwen2.5-1.5b · 3 requests · 1,234 tokens · 4.2 s`` (or ``running…``)."""
    parts = [part for part in (run.model,) if part]
    if not run.finished:
        return " · ".join([*parts, "running…"])
    parts.append(f"{run.requests} request{'s' if run.requests != 1 else ''}")
    if run.tokens is not None:
        parts.append(f"{run.tokens:,} tokens")
    parts.append(f"{run.seconds:.1f} s")
    if run.error:
        parts.append("stopped")
    return " · ".join(parts)


def run_text(run: SubagentRun) -> str:
    """The run as lines: what it wrote, each call with how it ended."""
    lines: list[str] = []
    for step in run.steps:
        if step[0] == "call":
            lines.append(f"{_MARKS.get(step[2], '·')} {step[1]}")
        else:
            lines.append(step[1].strip())
    if run.error:
        lines.append(f"Stopped: {run.error}")
    return "\n".join(line for line in lines if line) or "Starting…"


class SubagentPanel(CollapsibleSection):
    """Shows a :class:`SubagentRun`; :meth:`show_run` updates it when the run changed."""

    def __init__(self, run: SubagentRun, theme: TranscriptTheme,
                 parent: QWidget | None = None) -> None:
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(14, 0, 0, 2)
        self.run_view = FittedTextBrowser(body)
        self.run_view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.run_view.document().setDocumentMargin(6)
        layout.addWidget(self.run_view)
        super().__init__(f"Subagent {run.agent}", body, theme, parent)
        self.setObjectName("subagentRun")
        self.set_panel_colors(theme.code_background, theme.border)
        self._seen = -1
        self._finished = run.finished
        self.set_expanded(not run.finished)  # open while it works, folded when reopened
        self.show_run(run)

    def show_run(self, run: SubagentRun) -> None:
        """Draw the run again if it changed since last shown; fold it once it finished."""
        if run.revision == self._seen and self._seen >= 0:
            return
        self._seen = run.revision
        self.detail_label.setText(figures_line(run))
        self.run_view.setPlainText(run_text(run))
        if run.finished and not self._finished:
            self._finished = True
            self.set_expanded(False)  # the answer is the card's output; the run folds away
