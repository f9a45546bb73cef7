"""A conversation page's undo and restore: the files bar, the Files changed window, the question.

Why its own part: undo, restore and the Files changed window share a little
state (the turn the bar shows, the restore running, the forced retry after a
conflict) that the rest of the page never reads. Kept apart, the page wires
signals and this part owns that state; the decisions stay in the session
(through :class:`~desktop_agent.gui.conversation.folder_undo_actions.FolderUndoActions`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QMessageBox, QWidget

from desktop_agent.gui.conversation.folder_undo_actions import RestoreOutcome, turn_summary
from desktop_agent.gui.conversation.restore_wording import (
    AFTER_MESSAGE,
    EARLIER_CHANGES,
    RestoreQuestion,
    Undone,
    restore_question,
    undone_by_kind,
)

if TYPE_CHECKING:
    from desktop_agent.gui.conversation.composer import Composer
    from desktop_agent.gui.conversation.conversation_controller import ConversationController
    from desktop_agent.gui.conversation.files_changed_bar import FilesChangedBar
    from desktop_agent.gui.conversation.files_changed_panel import FilesChangedPanel
    from desktop_agent.gui.transcript import TranscriptView
    from desktop_agent.session import TurnChanges


class TabUndo:
    """Undo this turn, Restore files…, and the Files changed window of one page.

    Attributes:
        files_panel: The Files changed window, once opened.
        restore_question: The question asked before a restore, while open.
    """

    def __init__(self, page: QWidget, controller: ConversationController,
                 files_bar: FilesChangedBar, transcript: TranscriptView,
                 composer: Composer) -> None:
        self._page = page  # parent of the question and the Files changed window
        self._controller = controller
        self._files_bar = files_bar
        self._transcript = transcript
        self._composer = composer
        self._shown_turn: str | None = None
        self._shown_kind = "turn"
        self._undone: Undone = EARLIER_CHANGES  # whose changes the running restore takes back
        self.restore_question: QMessageBox | None = None
        self._retry_forced: Callable[[], Awaitable[RestoreOutcome]] | None = None
        self._undo_task: asyncio.Task[None] | None = None
        self.files_panel: FilesChangedPanel | None = None
        self._panel_task: asyncio.Task[None] | None = None
        files_bar.undo_requested.connect(self.undo_shown_turn)
        files_bar.files_requested.connect(self.show_files_changed)
        files_bar.overwrite_requested.connect(self._overwrite)
        controller.busy_changed.connect(self.on_busy)
        controller.undo.files_changed.connect(self.on_files_changed)
        controller.undo.files_changed.connect(lambda _changes: transcript.offer_restore(True))
        transcript.restore_requested.connect(self.restore_from_message)

    def on_files_changed(self, changes: TurnChanges) -> None:
        """Show what a turn (or a restore, or a command) changed, with its Undo."""
        self._shown_turn, self._shown_kind = changes.turn, changes.kind
        label = {"restore": "Undo this restore", "command": "Undo the command"}.get(
            changes.kind, "Undo this turn")
        self._files_bar.show_changes(turn_summary(changes, self._undone), label)
        if self.files_panel is not None and self.files_panel.isVisible():
            self.show_files_changed()

    def on_busy(self, busy: bool) -> None:
        """Hide the bar while a turn runs: the new turn says what it changes when it ends."""
        if busy:
            self._files_bar.hide()
        self._files_bar.set_running(busy)

    def can_undo(self) -> bool:
        """Whether the bar shows a turn's changes to undo (what ``/undo`` undoes)."""
        return self._shown_turn is not None

    def undo_shown_turn(self) -> None:
        """Undo the turn the bar shows (a conflict is asked about on the bar)."""
        turn = self._shown_turn
        self._run_restore(lambda force=False: self._controller.undo.undo_turn(turn, force=force),
                          undone_by_kind(self._shown_kind))

    def undo_turn(self, turn: str) -> None:
        """Undo ``turn`` (from the Files changed panel)."""
        chosen = self.files_panel.selected_turn() if self.files_panel is not None else None
        kind = chosen.changes.kind if chosen is not None and chosen.changes.turn == turn \
            else "turn"
        self._run_restore(lambda force=False: self._controller.undo.undo_turn(turn, force=force),
                          undone_by_kind(kind))

    def restore_before(self, message_id: str, branch: bool) -> None:
        """Restore files to before ``message_id`` (from the Files changed panel), once asked."""
        self._ask_then_restore(message_id, branch, lambda force=False: (
            self._controller.undo.restore_before(message_id, branch=branch, force=force)))

    def restore_from_message(self, message_id: str, branch: bool) -> None:
        """A message's "Restore files…": files back to before it, maybe the conversation too.

        Going back as well (``branch``) drops the message from the view, as a new
        branch will replace it: its text goes into an empty composer, ready to
        be edited and sent again. A conflict is asked about on the files bar, as
        for Undo.
        """
        text = self._transcript.item_text(message_id)
        undo = self._controller.undo
        composer = self._composer

        async def restore(force: bool = False) -> RestoreOutcome:
            outcome = await undo.restore_before(message_id, branch=branch, force=force)
            if branch and outcome.carried_out and text and not composer.toPlainText().strip():
                composer.setPlainText(text)
            return outcome

        self._ask_then_restore(message_id, branch, restore)

    def _ask_then_restore(self, message_id: str, branch: bool,
                          restore: Callable[..., Awaitable[RestoreOutcome]]) -> None:
        """Say which files a restore would change, with their names, and restore on Yes.

        Nothing to put back is not asked about (going back, if asked for, still happens).
        """
        undo = self._controller.undo

        async def ask() -> None:
            planned = await undo.restore_plan(message_id)
            if planned.problem:
                self._files_bar.show_result(planned.problem)
            elif not planned.changes:
                self._run_restore(restore, AFTER_MESSAGE)
            else:
                self._show_restore_question(restore_question(planned.changes, branch=branch),
                                            lambda: self._run_restore(restore, AFTER_MESSAGE))

        undo.start(ask())

    def _show_restore_question(self, question: RestoreQuestion,
                               restore: Callable[[], None]) -> None:
        if self.restore_question is not None:
            self.restore_question.close()
        box = QMessageBox(QMessageBox.Icon.Question, "Restore files", question.text,
                          QMessageBox.StandardButton.Cancel, self._page)
        box.setInformativeText(question.details)
        yes = box.addButton(question.button, QMessageBox.ButtonRole.AcceptRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)  # Enter does not overwrite
        yes.clicked.connect(restore)

        def closed() -> None:
            if self.restore_question is box:
                self.restore_question = None
            box.deleteLater()

        box.finished.connect(closed)
        self.restore_question = box
        box.open()

    def _overwrite(self) -> None:
        if self._retry_forced is not None:
            forced = self._retry_forced
            self._run_restore(lambda force=True: forced(), self._undone)

    def _run_restore(self, action: Callable[..., Awaitable[RestoreOutcome]],
                     undone: Undone = EARLIER_CHANGES) -> None:
        if self._undo_task is not None and not self._undo_task.done():
            return
        self._undone = undone  # the bar names whose changes it took back
        self._files_bar.set_running(True)

        async def run() -> None:
            try:
                outcome = await action()
            finally:
                self._files_bar.set_running(self._controller.busy)
            if outcome.conflicts:
                self._retry_forced = lambda: action(force=True)
                self._files_bar.show_conflict(outcome.sentence)
            else:
                self._retry_forced = None
                if not outcome.done:  # done: the restore's own change took the bar
                    self._files_bar.show_result(outcome.sentence)

        self._undo_task = self._controller.undo.start(run())

    def show_files_changed(self) -> None:
        """Open (or refresh) the Files changed window."""
        if self.files_panel is None:
            from desktop_agent.gui.conversation.files_changed_panel import FilesChangedPanel

            self.files_panel = FilesChangedPanel(self._controller.title, self._page)
            self.files_panel.undo_requested.connect(self.undo_turn)
            self.files_panel.restore_requested.connect(self.restore_before)
            self.files_panel.turns_wanted.connect(self._load_files_panel)
        panel = self.files_panel
        if panel.isVisible():
            self._load_files_panel()
        else:
            panel.show()  # it asks for its turns (it holds none while hidden)
        panel.raise_()

    def _load_files_panel(self) -> None:
        panel = self.files_panel
        if panel is None:
            return

        async def load() -> None:
            panel.set_turns(await self._controller.undo.turn_files())

        if self._panel_task is not None:
            self._panel_task.cancel()  # a newer list replaces it
        self._panel_task = self._controller.undo.start(load())
