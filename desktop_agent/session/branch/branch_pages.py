"""The active branch as the session holds it: a page for the transcript, whole for a turn.

One part of :class:`~desktop_agent.session.conversation.ConversationSession`.
Opening a long conversation reads just the page the window shows; the whole
branch is read only when something needs it (a turn, a refresh that found the
page moved), and then kept: the running turn appends what it stores to it. A
front end that holds many conversations (``serve``) lets it go between turns
(:meth:`BranchPages.release`): every turn reads it again at its start anyway.
Catching up with other processes' writes compares what was read before with
what the store holds now, and tells listeners (:class:`PathReset`) only when
it moved.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from desktop_agent.session.events import PathReset, SessionEvent
from desktop_agent.session.tools.plan import Plan, plan_of

if TYPE_CHECKING:
    from desktop_agent.session.settings.settings_record import SettingsRecord
    from desktop_agent.session.store_calls import StoreCalls
    from desktop_agent.store import ConversationRecord, MessageRecord, Store


class BranchPages:
    """Reads the active branch a page at a time, or whole, and catches up with the store.

    Args:
        store: The conversation store.
        settings: The conversation's record (its id; re-read with the branch).
        emit: Reports session events.
    """

    def __init__(self, store: Store, settings: SettingsRecord,
                 emit: Callable[[SessionEvent], None]) -> None:
        self._store = store
        self._settings = settings
        self._emit = emit
        self._loaded: list[MessageRecord] | None = None
        self._shown_page: tuple[int, list[tuple[str, str]]] | None = None  # (limit, ids)

    @property
    def whole(self) -> list[MessageRecord]:
        """The active branch as held, root first; read whole on first use.

        The list itself, not a copy: the running turn appends what it stores.
        """
        if self._loaded is None:
            self._loaded = self._store.active_path(self._settings.conversation_id)
        return self._loaded

    @whole.setter
    def whole(self, path: list[MessageRecord]) -> None:
        self._loaded = path

    def release(self) -> None:
        """Let the whole branch go; the next use reads it from the store again.

        Why: a conversation's history grows with every turn, and a server keeps
        the sessions of conversations in use between their turns; holding each
        one's whole branch there made its memory grow with every turn of every
        conversation it served.

        A window that shows a page of the branch keeps that page's ids as the
        last page of what it let go: its listeners heard of every message the
        turn stored, so the next catch-up compares against that page and says
        the branch moved only when another process changed it meanwhile.
        """
        loaded, shown = self._loaded, self._shown_page
        if loaded is not None and shown is not None:
            limit = shown[0]
            self._shown_page = (limit, [(r.id, r.status)
                                        for r in _from_turn_start(loaded[-limit:], limit)])
        self._loaded = None

    @property
    def path(self) -> list[MessageRecord]:
        """The active branch as last read (root first); read whole on first use."""
        return list(self.whole)

    def latest_page(self, limit: int) -> list[MessageRecord]:
        """The newest messages of the active branch, starting at a user message.

        Why: a transcript shows a long conversation a page at a time, so it
        needs neither the whole branch read nor grouped. The page starts at a
        user message (when it holds one) so a turn is never cut from its tool
        results; the ones before come with :meth:`page_before`.
        """
        if self._loaded is not None:
            page = self._loaded[-limit:]
        else:
            page = self._store.active_path(self._settings.conversation_id, limit)
        page = _from_turn_start(page, limit)
        self._shown_page = (limit, [(r.id, r.status) for r in page])
        return page

    def last_message(self) -> MessageRecord | None:
        """The newest message of the active branch (one row read, not the branch)."""
        if self._loaded is not None:
            return self._loaded[-1] if self._loaded else None
        page = self._store.active_path(self._settings.conversation_id, 1)
        return page[-1] if page else None

    def read_branch(self) -> list[MessageRecord]:
        """The whole active branch without keeping it (safe from a worker thread)."""
        loaded = self._loaded
        return list(loaded) if loaded is not None else \
            self._store.active_path(self._settings.conversation_id)

    def page_before(self, message_id: str, limit: int) -> list[MessageRecord]:
        """Up to ``limit`` messages before ``message_id`` on its branch, root first."""
        if self._loaded is not None:
            index = next((i for i, r in enumerate(self._loaded) if r.id == message_id), 0)
            page = self._loaded[max(0, index - limit):index]
        else:
            page = self._store.active_path(self._settings.conversation_id, limit,
                                           before=message_id)
        return _from_turn_start(page, limit)

    def plan(self) -> Plan | None:
        """The model's checklist now: its last ``update_plan`` on the active branch.

        Reads the whole branch when it was not read yet (a worker thread may call it).
        """
        return plan_of(self.read_branch())

    async def read_whole(self, call: StoreCalls) -> list[MessageRecord]:
        """The whole branch, read through ``call`` when only a page was read (a turn's start)."""
        if self._loaded is None:
            self._loaded = await call(partial(self._store.active_path,
                                              self._settings.conversation_id))
        return self._loaded

    def moved_to(self, path: list[MessageRecord]) -> None:
        """Hold ``path`` as the active branch (just written) and tell the listeners."""
        self._loaded = path
        self._emit(PathReset(tuple(path)))

    async def move_leaf(self, call: StoreCalls, leaf_id: str | None,
                        path: list[MessageRecord]) -> None:
        """Make ``leaf_id`` the active leaf in the store; ``path`` is the branch up to it."""
        await call(partial(self._store.set_active_leaf, self._settings.conversation_id, leaf_id))
        self.moved_to(path)

    async def catch_up(self, call: StoreCalls, read: ConversationRecord | None = None,
                       path: list[MessageRecord] | None = None) -> bool:
        """Re-read the record and the branch; True when the branch changed.

        Args:
            call: Runs each store call.
            read: The conversation as the caller read it just now (not read again).
            path: Its active branch, read by the caller with ``read`` (not read again).
        """
        await self._settings.reload(call, read)
        conversation_id = self._settings.conversation_id
        if path is not None and read is not None and read.id == conversation_id:
            return self._took_path(path)
        if self._loaded is None:
            if self._shown_page is None:
                return False  # nothing was read yet: the next read is fresh anyway
            # Only a page was read: compare the same page, read the whole branch if it moved.
            limit, shown = self._shown_page
            page = _from_turn_start(
                await call(partial(self._store.active_path, conversation_id, limit)), limit)
            if [(r.id, r.status) for r in page] == shown:
                return False
        path = await call(partial(self._store.active_path, conversation_id))
        loaded = self._loaded
        if loaded is not None and (
                [(r.id, r.status) for r in path] == [(r.id, r.status) for r in loaded]):
            return False
        self.moved_to(path)
        return True

    def _took_path(self, path: list[MessageRecord]) -> bool:
        """Keep ``path``, read by the caller with the record; True when it moved.

        The same answer as reading it here: the listeners hear of a branch
        that differs from the one read before, or from the page they show.
        """
        loaded, shown = self._loaded, self._shown_page
        self._loaded = path
        if loaded is not None:
            moved = [(r.id, r.status) for r in path] != [(r.id, r.status) for r in loaded]
        elif shown is not None:
            limit, ids = shown
            moved = [(r.id, r.status) for r in _from_turn_start(path[-limit:], limit)] != ids
        else:
            return False  # nothing was read before
        if moved:
            self._emit(PathReset(tuple(path)))
        return moved


def _from_turn_start(page: list[MessageRecord], limit: int) -> list[MessageRecord]:
    """A full page without its leading non-user messages (they belong to the page before)."""
    if len(page) < limit:
        return page  # it reaches the root
    start = next((i for i, r in enumerate(page) if r.role == "user"), 0)
    return page[start:]
