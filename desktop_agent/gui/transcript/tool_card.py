"""A compact card for one tool call: name and status, expandable details.

Why: tool calls are frequent and their arguments and output can be long; the
card keeps the conversation readable (one line per call) while the details
stay one click away, arguments as formatted JSON and output as text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QVBoxLayout, QWidget

from desktop_agent.gui.transcript.approval_panel import ApprovalPanel, ApprovalPrompt
from desktop_agent.gui.transcript.code_block import CodeBlockWidget
from desktop_agent.gui.transcript.collapsible_section import CollapsibleSection
from desktop_agent.gui.transcript.frame_scheduler import FrameScheduler
from desktop_agent.gui.transcript.items import LiveOutput
from desktop_agent.gui.transcript.painted_panel import PaintedPanel
from desktop_agent.gui.transcript.text_views import FittedTextBrowser
from desktop_agent.gui.transcript.theme import TranscriptTheme
from desktop_agent.gui.transcript.widget_style import muted_label

if TYPE_CHECKING:
    from desktop_agent.gui.transcript.command_preview_panel import CommandPreviewPanel
    from desktop_agent.gui.transcript.diff_view import DiffView
    from desktop_agent.gui.transcript.items import CommandPreviewState, SubagentRun
    from desktop_agent.gui.transcript.live_output_view import LiveOutputView
    from desktop_agent.gui.transcript.picture_strip import PictureStrip
    from desktop_agent.gui.transcript.subagent_panel import SubagentPanel
    from desktop_agent.workspace.diffs import FileDiff

#: Output beyond this many characters is cut in the card (the model got all of it).
OUTPUT_DISPLAY_LIMIT = 20_000


def format_arguments(arguments: Any) -> str:
    """Arguments as indented JSON (or as given when they are not JSON-able)."""
    try:
        return json.dumps(arguments, indent=2, ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError):
        return str(arguments)


class ToolCard(CollapsibleSection):
    """Shows a tool call; :meth:`set_result` or :meth:`set_error` completes it.

    While the call waits for the person, :meth:`show_approval` opens the card
    (arguments in view) and puts the answer buttons on it.

    While a command runs, :meth:`set_live` shows its newest output under the
    header (in sight while the card is folded) with Stop; the result replaces it.

    A command run on an overlay shows what it would change, with Apply and
    Discard, under the header (:meth:`set_command_preview`).

    Signals:
        toggled(bool): the details were shown or hidden (from CollapsibleSection).
        approval_answered(str, str, str): tool use id, choice, deny reason.
        approval_arguments_edited(str, str): tool use id, the arguments as edited
            on the card (JSON, each time they are valid).
        stop_requested(str): tool use id: Stop was clicked on the live output.
        preview_decided(str, str, str): tool use id, ``apply``/``apply_anyway``/``discard``,
            the reason for the model.
    """

    approval_answered = Signal(str, str, str)
    approval_arguments_edited = Signal(str, str)
    stop_requested = Signal(str)
    preview_decided = Signal(str, str, str)

    def __init__(
        self,
        tool_use_id: str,
        name: str,
        arguments: Any,
        theme: TranscriptTheme,
        *,
        source: str | None = None,
        scheduler: FrameScheduler | None = None,
        parent: QWidget | None = None,
    ) -> None:
        body = QWidget()
        body_layout = QVBoxLayout(body)
        body_layout.setContentsMargins(18, 2, 0, 4)
        body_layout.setSpacing(4)
        super().__init__(name, body, theme, parent)
        self._theme = theme
        self.set_panel_colors(theme.card_background, theme.border)
        self.tool_use_id = tool_use_id
        self.tool_name = name
        self.arguments_text = format_arguments(arguments)
        self.output_text: str | None = None
        self.is_error = False
        self.edited = False  # the arguments shown are the input it ran with, not the model's
        self.settled_seen = 0  # which settling of its part's stored result it shows

        arguments_label = muted_label("Arguments", theme, body, bold=True, scale=0.85)
        self._arguments_label = arguments_label
        self.arguments_view = CodeBlockWidget("json", theme, scheduler, body)
        self.arguments_view.append(self.arguments_text)
        self.arguments_view.finish()
        self._output_label = muted_label("Output", theme, body, bold=True, scale=0.85)
        self._output_panel = PaintedPanel(body)
        self._output_panel.set_panel_colors(theme.code_background, radius=6)
        self.output_view = FittedTextBrowser(self._output_panel)
        self.output_view.document().setDocumentMargin(8)
        output_layout = QVBoxLayout(self._output_panel)
        output_layout.setContentsMargins(0, 0, 0, 0)
        output_layout.addWidget(self.output_view)
        self.output_view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self._output_label.setVisible(False)
        self._output_panel.setVisible(False)
        body_layout.addWidget(arguments_label)
        body_layout.addWidget(self.arguments_view)
        body_layout.addWidget(self._output_label)
        body_layout.addWidget(self._output_panel)
        self.pictures: PictureStrip | None = None
        self._scheduler = scheduler
        # What a write_file/edit_file call would change (while it waits for approval).
        from desktop_agent.gui.transcript.diff_view import DiffView  # not an idle window's

        self.preview_view = DiffView(theme, scheduler, body)
        body_layout.insertWidget(2, self.preview_view)
        self.change_section: CollapsibleSection | None = None
        self.change_view: DiffView | None = None

        self.header_button.setToolTip(f"Tool call {tool_use_id}")
        self.header_button.setAccessibleName(f"Tool call {name}")
        self._source = source
        self._outcome: str | None = None
        self._status = ""
        self._picture_note = ""  # "2 pictures" in the header once the tool returned some
        self.approval_panel: ApprovalPanel | None = None
        self._expanded_before_asking = False
        self.live_view: LiveOutputView | None = None
        self.preview_panel: CommandPreviewPanel | None = None
        self._expanded_before_preview: bool | None = None  # set while a preview waits
        self.subagent_view: SubagentPanel | None = None
        self._live_note = ""  # "10,001 lines · 6.2 s" once a command with live output ended
        self._set_status("running…")

    def set_arguments(self, arguments: Any) -> None:
        """Show the input the call ran with (edited before it ran) instead of the model's."""
        self.arguments_text = format_arguments(arguments)
        self.arguments_view.code_view.setPlainText(self.arguments_text)
        self._arguments_label.setText("Arguments (edited before it ran)")
        self.edited = True

    def set_preview(self, diff: FileDiff | None, problem: str | None = None) -> None:
        """Show what the call would change in its file (or why it would fail)."""
        if diff is None and not problem:
            self.preview_view.hide()
            return
        if diff is self.preview_view.diff() and diff is not None:
            return
        self.preview_view.set_diff(diff, problem)

    def set_change(self, diff: FileDiff | None) -> None:
        """Keep, folded, the diff of what the call actually changed in its file."""
        if diff is None or not diff.changed:
            return
        self.preview_view.hide()  # the record of what happened replaces the proposal
        if self.change_view is not None:
            if self.change_view.diff() != diff:
                self.change_view.set_diff(diff)
            return
        from desktop_agent.gui.transcript.diff_view import DiffView

        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(12, 0, 0, 4)
        self.change_view = DiffView(self._theme, self._scheduler, body)
        layout.addWidget(self.change_view)
        self.change_section = CollapsibleSection(
            f"Changed {diff.path}  +{diff.added} \u2212{diff.removed}", body, self._theme, self)
        self.change_section.setObjectName("fileChange")
        self.change_section.set_expanded(False)
        self.change_view.set_diff(diff)
        # Under the header, not in the folded details: the change is what a person
        # looks for in a file call, so its line shows while the card is folded.
        card_layout = self.layout()
        assert card_layout is not None
        card_layout.addWidget(self.change_section)

    def set_command_preview(self, state: CommandPreviewState | None) -> None:
        """Show what a previewed command would change, and where the decision stands."""
        if state is None:
            return
        if self.preview_panel is None:
            # Imported by the first preview (none in an idle window).
            from desktop_agent.gui.transcript.command_preview_panel import CommandPreviewPanel

            self.preview_panel = CommandPreviewPanel(self._theme, self._scheduler, self)
            self.preview_panel.decided.connect(
                lambda action, reason: self.preview_decided.emit(self.tool_use_id, action,
                                                                 reason))
            card_layout = self.layout()
            assert card_layout is not None
            card_layout.addWidget(self.preview_panel)
        self.preview_panel.show_state(state)
        if self.live_view is not None:  # the command ended: its output is in the panel
            self.live_view.hide()
        if state.deciding:
            if self._expanded_before_preview is None:
                # Opened, as a card that asks is: the command in sight while deciding on it.
                self._expanded_before_preview = self.expanded
                self.set_expanded(True)
            self.set_panel_colors(self._theme.card_background, self._theme.accent)
            self._set_status("waiting for Apply or Discard")
        else:
            if self._expanded_before_preview is not None:  # decided: folds back as it was
                self.set_expanded(self._expanded_before_preview)
                self._expanded_before_preview = None
            self.set_panel_colors(self._theme.card_background, self._theme.border)

    def show_approval(self, prompt: ApprovalPrompt | None) -> None:
        """Ask on the card (``prompt``) or stop asking (None)."""
        if prompt is None:
            if self.approval_panel is not None:
                self.approval_panel.hide()
                self.approval_panel.deleteLater()
                self.approval_panel = None
                self.set_panel_colors(self._theme.card_background, self._theme.border)
                # The card opened to ask; answered, it folds back as it was (the
                # result's line and pictures show on the folded card).
                self.set_expanded(self._expanded_before_asking)
            return
        if self.approval_panel is not None:
            if prompt.edited:  # edited in the dock: the card shows what Allow runs
                self.approval_panel.show_arguments(prompt.arguments)
            return
        self._expanded_before_asking = self.expanded
        self.approval_panel = ApprovalPanel(prompt, self._theme, self)
        self.approval_panel.answered.connect(
            lambda choice, reason: self.approval_answered.emit(self.tool_use_id, choice, reason))
        self.approval_panel.arguments_edited.connect(
            lambda text: self.approval_arguments_edited.emit(self.tool_use_id, text))
        layout = self.layout()
        if isinstance(layout, QVBoxLayout):
            layout.addWidget(self.approval_panel)
        self.set_expanded(True)
        self.set_panel_colors(self._theme.card_background, self._theme.accent)

    def set_outcome(self, outcome: str | None) -> None:
        """What an error result means when the person (or the clock) refused the call."""
        self._outcome = outcome
        if outcome and self.output_text is None:
            self._set_status(outcome)

    def set_live(self, live: LiveOutput | None) -> None:
        """Show what the running command printed so far; once the result is in, its figures."""
        if live is None:
            return
        # Imported by the first command with live output (none in an idle window).
        from desktop_agent.gui.transcript.live_output_view import LiveOutputView, figures_text

        self._live_note = figures_text(live)
        if self.preview_panel is not None and self.output_text is None:
            return  # the command ended and waits for Apply or Discard: no Stop to offer
        if self.output_text is not None:  # e.g. a card made again after a theme change
            self._set_status(self._status)
            return
        if self.live_view is None:
            self.live_view = LiveOutputView(self._theme, self)
            self.live_view.stop_clicked.connect(
                lambda: self.stop_requested.emit(self.tool_use_id))
            card_layout = self.layout()
            assert card_layout is not None
            card_layout.addWidget(self.live_view)
        self.live_view.show_output(live)

    def set_subagent(self, run: SubagentRun | None) -> None:
        """Show the subagent a delegation call runs (live), under the header."""
        if run is None:
            return
        if self.subagent_view is None:
            # Imported by the first delegation (none in an idle window).
            from desktop_agent.gui.transcript.subagent_panel import SubagentPanel

            self.subagent_view = SubagentPanel(run, self._theme, self)
            card_layout = self.layout()
            assert card_layout is not None
            card_layout.addWidget(self.subagent_view)
            return
        self.subagent_view.show_run(run)

    def set_result(self, content: str, is_error: bool = False) -> None:
        """Fill the output; an error result marks the card as failed."""
        if self.live_view is not None:  # the result (in the details) replaces the live tail
            self.live_view.hide()
            self.live_view.deleteLater()
            self.live_view = None
        self.output_text = content
        self.is_error = is_error
        shown = content
        if len(content) > OUTPUT_DISPLAY_LIMIT:
            hidden = len(content) - OUTPUT_DISPLAY_LIMIT
            shown = f"{content[:OUTPUT_DISPLAY_LIMIT]}\n… ({hidden:,} more characters)"
        self.output_view.setPlainText(shown or "(no output)")
        self._output_label.setText(("Told the model" if self._outcome else "Error")
                                   if is_error else "Output")
        self._output_label.setVisible(True)
        self._output_panel.setVisible(True)
        self._set_status(self._outcome or ("failed" if is_error else "done"))

    def set_pictures(self, urls: Sequence[str]) -> None:
        """Show the pictures the tool returned (once), below the card's header.

        They stay visible while the card is folded: a screenshot is usually
        what the person wants to see of the call, the arguments and text rarely.
        """
        if self.pictures is not None or not urls:
            return
        from desktop_agent.gui.transcript.picture_strip import PictureStrip

        self.pictures = PictureStrip(urls, self._theme, self, indent=18)  # under the body
        card_layout = self.layout()
        assert card_layout is not None
        card_layout.addWidget(self.pictures)
        count = len(urls)
        self._picture_note = f"{count} picture{'s' if count != 1 else ''}"
        self._set_status(self._status)

    def set_status(self, status: str) -> None:
        """Say where the call stands before its result (e.g. waiting for approval)."""
        if self.output_text is None:
            self._set_status(status)

    def set_error(self, text: str) -> None:
        """The call could not run (unusable, denied or failed)."""
        self.set_result(text, is_error=True)

    def _set_status(self, status: str) -> None:
        self._status = status
        live = self._live_note if self.output_text is not None else ""
        parts = [part for part in (self._source, status, live, self._picture_note) if part]
        self.detail_label.setText(" · ".join(parts))
        border = self._theme.error_text if self.is_error and not self._outcome \
            else self._theme.border
        self.set_panel_colors(self._theme.card_background, border)
