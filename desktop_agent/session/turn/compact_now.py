"""``/compact``: compact a conversation's view now, when the person asks.

One part of :class:`~desktop_agent.session.conversation.ConversationSession`,
used by the window's ``/compact`` and by ``POST /conversations/{id}/compact``.
The core compacts when a request nears the window; a person who is about to
start something long may want the room first. The compaction runs inside the
turn gate (no turn runs meanwhile, here or in another process), with the
conversation's own client and options, and is kept as a turn's compaction is:
in the metadata of the last reply, so the transcript shows its marker and the
next turn (or a session opened later) continues from the same view.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from desktop_agent.session.branch.branch_reading import history_with_ids
from desktop_agent.session.branch.compaction_record import compaction_metadata, stored_compaction
from desktop_agent.session.errors import NothingToAnswerError
from desktop_agent.session.events import CompactionReported, SessionEvent
from desktop_agent.session.store_calls import StoreCalls, in_a_thread

if TYPE_CHECKING:
    from desktop_agent.core.types import CompactionBlock
    from desktop_agent.session.branch.branch_pages import BranchPages
    from desktop_agent.session.settings.settings_record import SettingsRecord
    from desktop_agent.session.turn.conversation_client import ConversationClient
    from desktop_agent.session.turn.turn_runner import TurnRunner
    from desktop_agent.store import Store


class CompactNow:
    """Compacts the conversation's view on request.

    Args:
        store: The conversation store.
        settings: The conversation's record.
        branch: Its active branch.
        runner: Its turn gate (a compaction is refused while a turn runs).
        client: Holds its core client.
        emit: Reports session events.
    """

    def __init__(self, store: Store, settings: SettingsRecord, branch: BranchPages,
                 runner: TurnRunner, client: ConversationClient,
                 emit: Callable[[SessionEvent], None]) -> None:
        self._store = store
        self._settings = settings
        self._branch = branch
        self._runner = runner
        self._client = client
        self._emit = emit

    async def compact(self, call: StoreCalls = in_a_thread) -> CompactionBlock | None:
        """Summarise (or drop) all but the last exchange in what the model sees.

        Returns:
            The compaction, or None when there was nothing to compact (one
            exchange only, or the model's window is not known yet).

        Raises:
            NothingToAnswerError: The conversation has no reply yet.
            SessionError: Compaction is off in the settings.
            TurnRunningError / ConversationBusyError: A turn runs.
            NotConfiguredError: No server or model is chosen.
        """
        from desktop_agent.session.errors import SessionError
        from desktop_agent.session.files.file_checkpoints import TurnMark

        if self._settings.current.get("compaction") == "off":
            raise SessionError("Compaction is off in this conversation's settings; turn it "
                               "on there to compact.")
        async with self._runner.starting(call, whole=True):
            path = self._branch.whole
            last = next((r for r in reversed(path) if r.role == "assistant"), None)
            if last is None:
                raise NothingToAnswerError("There is nothing to compact yet: the model has "
                                           "not answered.")
            base, ids = history_with_ids(path, self._settings.vision())
            async with self._client.local_server() as local:
                client = await self._client.ready(TurnMark(message=None), None, local)
                client.message_history = base
                stored = stored_compaction(path)
                if stored is not None:  # continue the stored view
                    client.context_keeper.restore(stored, base)
                block = await client.compact()
            if block is None:
                return None
            record = await call(partial(
                self._store.update_message_metadata, last.id,
                {"compaction": compaction_metadata(block, ids)},
                conversation_id=self._settings.conversation_id))
            for i, old in enumerate(path):
                if old.id == record.id:
                    path[i] = record
            self._emit(CompactionReported(block))
            return block
