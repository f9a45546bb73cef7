"""What a ``/command`` sent from the composer does on one conversation's page.

A built-in runs what the window already does (``/undo`` the Files changed bar's
Undo, ``/plan`` the permission selector's Plan, ``/model`` "Choose server and
model…", ``/clear`` "New conversation" in this folder, ``/compact`` the
session's compaction, ``/help`` a list to read). A command or prompt with named
arguments and none typed asks for them in a form first; then, as for any other
command, the session's expansion replaces the message, to read before sending.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QWidget

from desktop_agent.gui.conversation.command_arguments_form import (
    CommandArgumentsForm,
    Suggest,
)
from desktop_agent.gui.conversation.slash_help_dialog import SlashHelpDialog

if TYPE_CHECKING:
    from desktop_agent.gui.conversation.composer import Composer
    from desktop_agent.gui.conversation.conversation_controller import ConversationController
    from desktop_agent.gui.conversation.slash_menu import SlashMenu
    from desktop_agent.gui.conversation.tab_undo import TabUndo
    from desktop_agent.gui.transcript import TranscriptView


class TabCommands:
    """Runs or expands the ``/command`` a message starts with.

    Args:
        page: The conversation's page (parent of the form and the help).
        controller: Its controller (the session, the permission mode).
        transcript: Where a refusal or a note is said.
        composer: The message box the expansion goes into.
        menu: The ``/`` menu (which commands exist, and their arguments).
        undo: The page's undo (``/undo``).
        choose_server: Opens the server and model picker (``/model``).
        new_conversation: Opens a new conversation in this folder (``/clear``).
        said: Called after something was said in the transcript (the empty hint).
        status: Shows a line in the status line while a built-in works (None clears it).

    Attributes:
        form: The argument form, while open.
        help: The ``/help`` dialog, once shown.
    """

    def __init__(self, page: QWidget, controller: ConversationController,
                 transcript: TranscriptView, composer: Composer, menu: SlashMenu,
                 undo: TabUndo, choose_server: Callable[[], None],
                 new_conversation: Callable[[], None], said: Callable[[], None],
                 status: Callable[[str | None], None]) -> None:
        self._page = page
        self._controller = controller
        self._transcript = transcript
        self._composer = composer
        self._menu = menu
        self._undo = undo
        self._choose_server = choose_server
        self._new_conversation = new_conversation
        self._said = said
        self._status = status
        self._task: asyncio.Future[None] | None = None
        self.form: CommandArgumentsForm | None = None
        self.help: SlashHelpDialog | None = None
        menu.chosen.connect(self._chosen)

    def take(self, text: str) -> bool:
        """Run or expand the command ``text`` starts with; False when it names none."""
        name = self._menu.command_in(text)
        if name is None:
            return False
        entry = self._menu.entry(name)
        if entry.kind == "builtin":
            self._composer.clear()
            self.run_builtin(name)
        elif entry.arguments and not text[1 + len(name):].strip():
            self.ask_arguments(entry)
        else:
            self._task = asyncio.ensure_future(self._expand(text, None))
        return True

    def _chosen(self, name: str) -> None:
        """Chosen in the list: a built-in runs, named arguments are asked for, at once.

        (Other commands wait in the message for what is typed after them.)
        """
        entry = self._menu.entry(name)
        if entry is None:
            return
        if entry.kind == "builtin":
            self._composer.clear()
            self.run_builtin(name)
        elif entry.arguments:
            self.ask_arguments(entry)

    # -- built-ins ----------------------------------------------------------------------
    def run_builtin(self, name: str) -> None:
        """Do what ``/name`` stands for (one of the session's built-in commands)."""
        if name == "undo":
            if self._undo.can_undo():
                self._undo.undo_shown_turn()
            else:
                self._say("/undo: nothing to undo — no turn changed files since this "
                          "conversation was opened.")
        elif name == "plan":
            self._controller.set_permission_mode("plan")
        elif name == "model":
            self._choose_server()
        elif name == "clear":
            self._new_conversation()
        elif name == "compact":
            self._task = asyncio.ensure_future(self._compact())
        elif name == "help":
            self._task = asyncio.ensure_future(self._show_help())

    async def _compact(self) -> None:
        from desktop_agent.core.errors import AgentError
        from desktop_agent.session import SessionError, busy_sentence
        from desktop_agent.store.errors import ConversationBusyError

        self._status("Compacting the conversation…")  # a summary may take a while
        try:
            block = await self._controller.session.compact()
        except ConversationBusyError as exc:  # a turn runs in another process
            self._say(f"/compact: {busy_sentence(exc.holder)}")
            return
        except (SessionError, AgentError) as exc:
            self._say(f"/compact: {exc}")
            return
        finally:
            self._controller.session.release_history()  # as after a turn: read again at the next
            with contextlib.suppress(RuntimeError):  # the page may be gone
                self._status(None)
        if block is None:
            self._say("/compact: nothing to compact — the conversation holds one exchange, "
                      "or the model's context window is not known yet (send a message first).")
        # a compaction shows as its marker (the session's CompactionReported event)

    async def _show_help(self) -> None:
        text = await self._controller.session.slash_help()
        with contextlib.suppress(RuntimeError):  # the page may be gone
            if self.help is None:
                self.help = SlashHelpDialog(text, self._page)
            else:
                self.help.text.setMarkdown(text)
            self.help.show()
            self.help.raise_()

    # -- arguments and expansion ----------------------------------------------------------
    def ask_arguments(self, entry: Any) -> None:
        """Open the form for ``entry``'s arguments; its values expand the command."""
        if self.form is not None:
            self.form.close()
        form = self.form = CommandArgumentsForm(entry, self._suggest_for(entry), self._page)
        form.accepted.connect(lambda: self._arguments_given(form))
        form.finished.connect(lambda _r: self._form_closed(form))
        form.show()
        first = next(iter(form.inputs.values()), None)
        if first is not None:
            first.setFocus()

    def _suggest_for(self, entry: Any) -> Suggest | None:
        if entry.kind != "prompt":
            return None
        server, _, prompt = entry.name.partition(":")
        session = self._controller.session

        async def suggest(argument: str, value: str,
                          others: Mapping[str, str]) -> list[str]:
            found: list[str] = await session.complete_argument(
                server, ("prompt", prompt), argument, value, others or None)
            return found

        return suggest

    def _arguments_given(self, form: CommandArgumentsForm) -> None:
        text = f"/{form.command_name}"
        self._composer.setPlainText(text)
        self._task = asyncio.ensure_future(self._expand(text, form.values()))

    def _form_closed(self, form: CommandArgumentsForm) -> None:
        if self.form is form:
            self.form = None

    async def _expand(self, text: str, values: Mapping[str, str] | None) -> None:
        """Put what the command becomes in the composer, to read before sending."""
        from desktop_agent.core.errors import AgentError
        from desktop_agent.session import NoMcpServers

        try:
            expanded = await self._controller.session.expand_slash(text, values)
        except (NoMcpServers, ValueError, AgentError) as exc:  # UnknownCommand: a ValueError
            self._say(f"{text.split()[0]}: {exc}")
            return
        if self._composer.toPlainText() != text:
            return  # the person typed on meanwhile: their text wins
        self._composer.setPlainText(expanded.message)
        self._composer.moveCursor(QTextCursor.MoveOperation.End)
        for note in expanded.notes:
            self._say(note)
        if expanded.images:
            self._say(f"{text.split()[0]} holds {len(expanded.images)} picture(s); only its "
                      "text is put in the message.")
        self._composer.setFocus()

    def _say(self, text: str) -> None:
        self._transcript.add_error(text, retry=False)
        self._said()

    def close(self) -> None:
        """The page closes: stop what runs and close the form."""
        if self._task is not None:
            self._task.cancel()
        if self.form is not None:
            self.form.close()
