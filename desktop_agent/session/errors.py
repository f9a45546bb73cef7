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
