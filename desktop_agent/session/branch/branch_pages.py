"""The active branch as the session holds it: a page for the transcript, a tail for a turn.

One part of :class:`~desktop_agent.session.conversation.ConversationSession`.
Opening a long conversation reads just the page the window shows; a turn reads
what its request needs (:meth:`BranchPages.read_for_turn`): the branch after
its newest compaction (:mod:`~desktop_agent.session.branch.turn_tail`), or the
whole branch when it has none; the running turn appends what it stores to it
(:attr:`BranchPages.turn_path`). Front ends let it go between turns
(:meth:`BranchPages.release`): every turn reads it again at its start anyway.
Catching up with other processes' writes compares what was read before with
what the store holds now, and tells listeners (:class:`PathReset`) only when
it moved.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from desktop_agent.session.branch.turn_tail import tail_enough
from desktop_agent.session.events import PathReset, SessionEvent
from desktop_agent.session.tools.plan import Plan, plan_of

if TYPE_CHECKING:
    from desktop_agent.session.settings.settings_record import SettingsRecord
    from desktop_agent.session.store_calls import StoreCalls
    from desktop_agent.store import ConversationRecord, MessageRecord, Store

Row = tuple[str, str, str]
"""A message as a page of the branch is compared: id, status, role."""


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
        self._tail: list[MessageRecord] | None = None  # the newest part, read for a turn
        # the newest ``limit`` messages when a page was last shown, as rows
        self._shown_page: tuple[int, list[Row]] | None = None

    @property
    def whole(self) -> list[MessageRecord]:
        """The active branch, root first; read whole on first use.

        Held and kept (the list itself: the running turn appends what it stores)
        unless a turn holds only the branch's tail: then read anew each time.
        """
        if self._loaded is None:
            path = self._store.active_path(self._settings.conversation_id)
            if self._tail is not None:
                return path
            self._loaded = path
        return self._loaded

    @property
    def turn_path(self) -> list[MessageRecord]:
        """What the running turn holds of the branch: whole, or its tail.

        The list itself: the turn's recorder appends what it stores to it.
        """
        held = self._held
        return held if held is not None else self.whole

    @property
    def _held(self) -> list[MessageRecord] | None:
        """The branch as read and kept: whole, or a turn's tail; None when let go."""
        return self._loaded if self._loaded is not None else self._tail

    async def read_for_turn(self, call: StoreCalls, whole: bool = False) -> None:
        """Read what a turn needs of the branch, unless it is held: its tail, or ``whole``.

        The tail reaches back to the newest compaction's end (a page at a time,
        :func:`~desktop_agent.session.branch.turn_tail.tail_enough`); a branch
        with none is read whole.
        """
        if self._loaded is not None or (self._tail is not None and not whole):
            return
        conversation_id = self._settings.conversation_id
        if whole:
            self._loaded, self._tail = await call(partial(self._store.active_path,
                                                          conversation_id)), None
            return
        self._hold(await call(partial(self._store.active_path, conversation_id,
                                      enough=tail_enough)))

    def replace_record(self, record: MessageRecord) -> None:
        """Hold ``record`` (updated in the store) in place of its older self."""
        held = self._held
        if held is None:
            return
        for i, old in enumerate(held):
            if old.id == record.id:
                held[i] = record
                return

    def _hold(self, records: list[MessageRecord]) -> None:
        """Keep ``records`` read from the leaf back: the whole branch, or its tail."""
        if not records or records[0].parent_id is None:
            self._loaded, self._tail = records, None
        else:
            self._loaded, self._tail = None, records

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
        loaded, tail, shown = self._loaded, self._tail, self._shown_page
        if loaded is not None and shown is not None:
            limit = shown[0]
            self._shown_page = (limit, _rows(loaded[-limit:]))
        elif tail is not None and shown is not None:
            self._shown_page = _extended(shown, tail)
        self._loaded = self._tail = None

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
        self._shown_page = (limit, _rows(page))
        return _from_turn_start(page, limit)

    def last_message(self) -> MessageRecord | None:
        """The newest message of the active branch (one row read, not the branch)."""
        held = self._held
        if held is not None:
            return held[-1] if held else None
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

    def moved_to(self, path: list[MessageRecord]) -> None:
        """Hold ``path`` as the active branch (just written) and tell the listeners."""
        self._loaded, self._tail = path, None
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
            if not path or path[0].parent_id is None or not self._moved(path):
                return self._took_path(path)
            path = None  # a tail that moved: the listeners get the whole branch
        self._tail = None  # a turn reads its tail afresh
        if self._loaded is None:
            if self._shown_page is None:
                return False  # nothing was read yet: the next read is fresh anyway
            # Only a page was read: compare the same page, read the whole branch if it moved.
            limit, shown = self._shown_page
            if await call(partial(self._store.newest_rows, conversation_id, limit)) == shown:
                return False
        path = await call(partial(self._store.active_path, conversation_id))
        loaded = self._loaded
        if loaded is not None and _rows(path) == _rows(loaded):
            return False
        self.moved_to(path)
        return True

    def _moved(self, newest: list[MessageRecord]) -> bool:
        """Whether the branch's newest messages differ from what was held or shown."""
        loaded, shown = self._loaded, self._shown_page
        if loaded is not None:
            return _rows(newest) != _rows(loaded[-len(newest):])
        if shown is not None:
            limit, rows = shown
            if len(newest) >= limit:
                return _rows(newest[-limit:]) != rows
            return _rows(newest) != rows[-len(newest):]
        return False

    def _took_path(self, path: list[MessageRecord]) -> bool:
        """Keep ``path``, read by the caller with the record; True when it moved.

        The same answer as reading it here: the listeners hear of a branch
        that differs from the one read before, or from the page they show.
        """
        loaded, shown = self._loaded, self._shown_page
        if path and path[0].parent_id is not None:  # a tail, not moved (see catch_up)
            if loaded is None:
                self._tail = path
            return False
        self._loaded, self._tail = path, None
        if loaded is not None:
            moved = _rows(path) != _rows(loaded)
        elif shown is not None:
            limit, rows = shown
            moved = _rows(path[-limit:]) != rows
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


def _rows(records: list[MessageRecord]) -> list[Row]:
    """``records`` as a page of the branch is compared."""
    return [(r.id, r.status, r.role) for r in records]


def _extended(shown: tuple[int, list[Row]],
              tail: list[MessageRecord]) -> tuple[int, list[Row]] | None:
    """The newest page after a turn that held ``tail``: the shown rows, then the tail's.

    None when the tail does not join the shown page (it cannot: a turn's tail
    reaches back at least to the leaf it started from), so the next catch-up
    finds nothing to compare with rather than a wrong page.
    """
    limit, rows = shown
    if len(tail) >= limit:
        return limit, _rows(tail[-limit:])
    position = {row[0]: i for i, row in enumerate(rows)}
    joins = tail[0].id in position or (tail[0].parent_id in position
                                       and position[tail[0].parent_id] == len(rows) - 1)
    if not joins:
        return None
    start = position.get(tail[0].id, len(rows))
    return limit, (rows[:start] + _rows(tail))[-limit:]
