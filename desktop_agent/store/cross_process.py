"""Knowing what other processes did: the change token and the turn lease.

The window and ``desktop-agent serve`` (or two servers, or an import) share
one SQLite file. The change token lets an open window notice another
process's writes for the price of one PRAGMA; the turn lease lets exactly one
of them run a turn on a conversation at a time (see
:mod:`~desktop_agent.store.turn_lease`).
"""

from __future__ import annotations

import functools

from desktop_agent.store.engine import Engine
from desktop_agent.store.records import ChangeToken
from desktop_agent.store.turn_lease import DEFAULT_LEASE_SECONDS, TurnLease, lease_holder


class CrossProcess:
    """The cross-process part of :class:`~desktop_agent.store.store.Store`.

    It works on the store's one engine (connection, lock, transactions).
    """

    def __init__(self, db: Engine) -> None:
        self._db = db

    def change_token(self) -> ChangeToken:
        """A cheap fingerprint of the database's state (one PRAGMA or one row, no table read).

        An open window polls it (say every second) and re-reads a conversation
        or the sidebar only when :meth:`ChangeToken.changed_elsewhere` says
        another process (the REST server, ``desktop-agent import``) committed.
        """
        with self._db.reading() as conn:
            version = self._db.external_version(conn)
        return ChangeToken(version, self._db.local_writes)

    def turn_lease(
        self, conversation_id: str, owner: str, *, seconds: float = DEFAULT_LEASE_SECONDS
    ) -> TurnLease:
        """The conversation's turn lease, to hold while a turn runs (``with`` or ``async with``).

        Entering raises :class:`~desktop_agent.store.errors.ConversationBusyError`
        when another live process (or another holder in this one) has it; a
        lease of a process that is gone, or past its expiry, is taken over.
        """
        # The lease's rules (one holder; cut-off replies marked) are the conversation's
        # own, so its writes need only that conversation to themselves.
        return TurnLease(functools.partial(self._db.writing_beside, (conversation_id,)),
                         conversation_id, owner, seconds,
                         alone=self._db.reading if self._db.dialect.statements_commit_alone
                         else None)

    def turn_lease_holder(self, conversation_id: str) -> str | None:
        """Who runs a turn on the conversation right now (the lease's owner), or None."""
        with self._db.reading() as conn:
            return lease_holder(conn, conversation_id)
