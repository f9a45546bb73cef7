"""The session's refusals of a user action, as types each front end maps to its own words.

The window shows a sentence; the REST server answers 409 with a stable code.
The store's ``ConversationBusyError`` (another process runs a turn) and
``StaleParentError`` (another process appended) pass through unchanged.
"""

from __future__ import annotations


class SessionError(Exception):
    """A user action the conversation cannot take now; the message says why."""


class NotConfiguredError(SessionError):
    """No server or model is chosen."""


class NothingToAnswerError(SessionError):
    """There is no user message (or tool result) waiting for an answer."""


class TurnRunningError(SessionError):
    """A turn is already running in this conversation (in this process)."""


BUSY_ELSEWHERE = "This conversation is busy in another window or server."
"""The sentence both front ends start with when another process runs a turn."""

COMMAND = "command"
"""What a lease taken for a REST command names (see :func:`lease_owner`)."""
RESTORE = "restore"
"""What a lease taken to put files back names (undo, restore)."""


def lease_owner(owner: str, activity: str | None = None) -> str:
    """The turn lease's owner for ``activity`` (None: a turn) of front end ``owner``.

    A command and a restore take the conversation's turn lease as a turn does,
    so none of the three runs beside another (here or in another process); the
    owner says which one holds it, for whoever is refused (:func:`busy_sentence`).
    """
    return owner if activity is None else f"{owner} \u00b7 {activity}"


def busy_sentence(holder: str) -> str:
    """Why an action was refused, from the lease's holder: what runs, and what to do."""
    _owner, _, activity = holder.partition(" \u00b7 ")
    if activity == COMMAND:
        return "A command is running in this conversation; wait for it to end, then try again."
    if activity == RESTORE:
        return ("Files of this conversation are being put back (undo or restore); wait for "
                "that to end, then try again.")
    return f"{BUSY_ELSEWHERE[:-1]}; wait for its turn to end."
