"""What each user action answers: send, run, regenerate, edit; and a prompt stored unanswered.

One part of :class:`~desktop_agent.session.conversation.ConversationSession`.
Each action is one step, written once as a coroutine that takes the
:class:`~desktop_agent.session.store_calls.StoreCalls` running its store
calls first: the window runs it at once
(:class:`~desktop_agent.session.store_calls.AtOnce`), ``serve`` awaits it
with a runner that keeps the calls off its event loop. Inside the runner's
gate (:meth:`~desktop_agent.session.turn.turn_runner.TurnRunner.starting`)
each decides what the turn answers and with which history, writes what must
be written first (the prompt, a new branch) and hands the turn to the runner.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from desktop_agent.core.context.content_parts import prompt_text
from desktop_agent.session.branch.branch_reading import (
    DEFAULT_TITLE,
    last_user_index,
    title_from,
)
from desktop_agent.session.branch.turn_tail import TurnHistory, turn_history, whole_history
from desktop_agent.session.errors import NothingToAnswerError
from desktop_agent.session.events import SessionEvent, UserMessageAdded
from desktop_agent.session.store_calls import StoreCalls, in_a_thread, on_the_spot
from desktop_agent.session.turn.options import SessionEnvironment, read_for_options
from desktop_agent.session.turn.turn_runner import Content, TurnRequest, Vet

if TYPE_CHECKING:
    from desktop_agent.session.branch.branch_pages import BranchPages
    from desktop_agent.session.settings.settings_record import SettingsRecord
    from desktop_agent.session.turn.conversation_client import OptionsReadFor
    from desktop_agent.session.turn.turn_runner import TurnRunner
    from desktop_agent.store import ConversationRecord, MessageRecord, Store, TurnLease


class TurnStarts:
    """Starts the turns a person (or a REST client) asks for.

    Args:
        store: The conversation store.
        env: What all conversations share (read for a turn's options).
        settings: The conversation's record.
        branch: Its active branch.
        runner: Runs the turns.
        emit: Reports session events.
    """

    def __init__(self, store: Store, env: SessionEnvironment, settings: SettingsRecord,
                 branch: BranchPages, runner: TurnRunner,
                 emit: Callable[[SessionEvent], None]) -> None:
        self._store = store
        self._env = env
        self._settings = settings
        self._branch = branch
        self._runner = runner
        self._emit = emit

    async def add_user_message(self, call: StoreCalls, content: Content) -> MessageRecord:
        """Store a user message (text, or content parts with pictures) without answering it.

        Raises:
            StaleParentError: Another process appended meanwhile (refresh, retry).
        """
        return await self._stored_prompt(call, content)

    async def send(self, call: StoreCalls, content: Content, vet: Vet | None = None,
                   read: ConversationRecord | None = None,
                   path: list[MessageRecord] | None = None) -> MessageRecord:
        """Store a user message and answer it in the background.

        ``vet`` checks the settings just read, before anything is stored;
        ``read`` is the conversation as the caller read it just now (``serve``
        does, to answer 404), so it is not read again, and ``path`` its active
        branch, read with it (one store call, not two).

        Raises:
            SessionError: Closed, a turn runs, or no server/model.
            ConversationBusyError: Another process runs a turn here.
            StaleParentError: Another process appended meanwhile.
        """
        # The lease is taken in the prompt's transaction: one write per start, not two.
        async with self._runner.starting(call, vet, read, path, with_first_write=True) as lease:
            history = await self._history(call, 0)
            options: list[OptionsReadFor] = []
            record = await self._stored_prompt(call, content, lease, options)
            self._runner.start(TurnRequest(content, history, len(history.base),
                                           options[0] if options else None))
            return record

    async def run(self, call: StoreCalls = in_a_thread, read: ConversationRecord | None = None,
                  path: list[MessageRecord] | None = None) -> None:
        """Answer the waiting user message (or tool results) in the background.

        ``read`` and ``path`` as in :meth:`send`.

        Raises:
            NothingToAnswerError: The branch ends with an answer already.
        """
        async with self._runner.starting(call, read=read, path=path):
            branch = self._branch.turn_path
            if not branch or branch[-1].role not in ("user", "tool"):
                raise NothingToAnswerError(
                    "The conversation has no new user message to answer; send one first.")
            last = branch[-1]
            if last.role == "user":
                history = await self._history(call, 1)
                self._runner.start(TurnRequest(last.message.get("content") or "", history,
                                               len(history.base)))
            else:
                history = await self._history(call, 0)
                self._runner.start(TurnRequest("", history, len(history.base) - 1))

    async def regenerate(self, call: StoreCalls) -> None:
        """Answer the last user message again; the old answer stays as a sibling branch."""
        async with self._runner.starting(call, whole=True):
            path = self._branch.whole
            index = last_user_index(path)
            if index is None:
                raise NothingToAnswerError("There is no user message to answer again.")
            user = path[index]
            await self._branch.move_leaf(call, user.id, path[:index + 1])
            history = whole_history(path[:index], self._settings.vision())
            self._runner.start(TurnRequest(user.message.get("content") or "", history,
                                           len(history.base)))

    async def edit(self, call: StoreCalls, message_id: str, text: str) -> None:
        """Replace a user message with ``text`` (a sibling branch) and answer it."""
        async with self._runner.starting(call, whole=True):
            path = self._branch.whole
            index = next((i for i, r in enumerate(path) if r.id == message_id), None)
            if index is None or path[index].role != "user":
                raise NothingToAnswerError("That message is not a user message on this branch.")
            old = path[index]
            prefix = path[:index]
            record = await call(partial(
                self._store.add_message, self._settings.conversation_id,
                {"role": "user", "content": text},
                parent_id=old.parent_id, new_root=old.parent_id is None))
            self._branch.moved_to([*prefix, record])
            history = whole_history(prefix, self._settings.vision())
            self._runner.start(TurnRequest(text, history, len(history.base)))

    async def _stored_prompt(self, call: StoreCalls, content: Content,
                             lease: TurnLease | None = None,
                             options: list[OptionsReadFor] | None = None) -> MessageRecord:
        """Store the prompt; with ``options``, read the turn's options in the same call.

        ``options`` receives what
        :func:`~desktop_agent.session.turn.options.read_for_options` read or raised,
        read in the worker thread that stores the prompt (``serve``): one hand-over
        to a thread per turn started instead of two. Only off the loop: on the spot
        (the window) the keyring and the folder must not block the loop.
        """
        path = self._branch.turn_path
        leaf = path[-1].id if path else None
        conversation_id = self._settings.conversation_id
        store_prompt = partial(
            self._store.add_message, conversation_id, {"role": "user", "content": content},
            parent_id=leaf, expected_parent=leaf, lease=lease)
        if options is None or call is on_the_spot:
            record = await call(store_prompt)
        else:
            settings, env = self._settings.current, self._env

            def stored_and_read() -> tuple[MessageRecord, OptionsReadFor]:
                stored = store_prompt()
                try:
                    return stored, (settings, read_for_options(conversation_id, settings, env))
                except Exception as exc:  # noqa: BLE001 - the turn reports it, as when read there
                    return stored, (settings, exc)

            record, read = await call(stored_and_read)
            options.append(read)
        path.append(record)
        self._emit(UserMessageAdded(record))
        if self._settings.record.title == DEFAULT_TITLE:
            await self._settings.rename(call, title_from(prompt_text(content) or "Attachment"))
        return record

    async def _history(self, call: StoreCalls, answered: int) -> TurnHistory:
        """The history of the branch held for the turn, but its last ``answered`` messages.

        Built from the tail the start read; where the tail cannot serve (its
        compaction's end is not among what was read) the branch is read whole.
        """
        vision = self._settings.vision()
        path = self._branch.turn_path
        history = turn_history(path, len(path) - answered, vision)
        if history is None:
            await self._branch.read_for_turn(call, whole=True)
            path = self._branch.turn_path
            history = whole_history(path[:len(path) - answered], vision)
        return history
