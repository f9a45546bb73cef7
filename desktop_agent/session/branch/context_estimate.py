"""How much of the model's context a conversation takes: the server's count, else an estimate.

The window shows "context used" beside the context length; a REST client or a
script may want the same figure. The rule lives here so every front end
shows one number for one conversation: the server's own count of the last
reply (prompt plus reply tokens) when it reported one, otherwise an estimate
of the branch as the model is sent it, tool definitions included (they are
part of every request, as in the server's own count).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from desktop_agent.session.branch.branch_reading import model_history

if TYPE_CHECKING:
    from desktop_agent.core.client import Client
    from desktop_agent.core.types import Usage
    from desktop_agent.store import MessageRecord

__all__ = ["context_after_reply", "context_when_opened", "estimated_context",
           "newest_reported_context", "reported_context"]

log = logging.getLogger("desktop_agent.session.context_estimate")


class CountedSession(Protocol):
    """What the count reads of a conversation's session (a ``ConversationSession``)."""

    @property
    def path(self) -> list[MessageRecord]:
        """The active branch as the session holds it."""

    @property
    def client(self) -> Client | None:
        """The client, whose options hold the tools every request sends."""

    def read_branch(self) -> list[MessageRecord]:
        """The whole branch, read without keeping it (from a worker thread)."""

    def last_message(self) -> MessageRecord | None:
        """The newest message of the branch."""


def reported_context(path: Sequence[MessageRecord]) -> int | None:
    """Prompt plus reply tokens the server reported for the branch's last reply, if it did."""
    last = path[-1] if path else None
    return _reported(last) if last is not None else None


def newest_reported_context(path: Sequence[MessageRecord]) -> int | None:
    """The server's count of the newest reply on the branch that has one.

    What the window showed live: its figure changes only when a server reports
    one. After a turn stopped between requests, or during a command, the branch
    ends with tool results and the last count is on an earlier reply.
    """
    for record in reversed(path):
        counted = _reported(record)
        if counted is not None:
            return counted
    return None


def _reported(record: MessageRecord) -> int | None:
    if record.role != "assistant":
        return None
    usage: Any = (record.metadata or {}).get("usage") or {}
    prompt, reply = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if isinstance(prompt, int) and isinstance(reply, int):
        return prompt + reply
    return None


def estimated_context(session: CountedSession, *, own_copy: bool = False,
                      quick: bool = False) -> int | None:
    """Count the tokens of the branch as the model is sent it; None when counting fails.

    Args:
        session: The conversation.
        own_copy: Read the branch from the store instead of the session's
            list, which belongs to the turn: set it in a worker thread.
        quick: Guess the count without loading the tokenizer (about 40 MB):
            for a figure only shown, such as a reopened conversation's.
    """
    try:
        path = session.read_branch() if own_copy else session.path
        client = session.client
        history = model_history(path)
        tools = list(client.options.tools) if client else None
        if quick:
            from desktop_agent.core.context.quick_count import quick_estimate_tokens

            return quick_estimate_tokens(history, tools=tools)
        from desktop_agent.core.context.tokens import estimate_tokens  # loads the tokenizer

        return int(estimate_tokens(history, tools=tools))
    except Exception as exc:  # noqa: BLE001 - an estimate must never break a turn
        log.debug("token estimate failed: %s", exc)
        return None


def context_after_reply(session: CountedSession, usage: Usage) -> int | None:
    """Context used once a reply ended: the server's figures, else an estimate."""
    total = usage.total_tokens
    return total if total is not None else estimated_context(session)


async def context_when_opened(session: CountedSession) -> int | None:
    """Context used by a conversation opened from the store (None when empty or unknown).

    The same figure the window showed before it closed: the server's count of
    the newest reply that has one (the last reply's costs nothing; an earlier
    one takes reading the branch, in a worker thread). Only a branch no server
    ever counted is estimated, with the quick guess
    (:mod:`desktop_agent.core.context.quick_count`): loading the tokenizer for
    a figure that is only shown kept an idle window with five reopened tabs
    about 45 MB heavier. The guess knows neither the tool definitions nor the
    server's template, so a server's count is always preferred to it; the first
    reply's figures replace it.
    """
    last = session.last_message()
    if last is None:
        return None
    counted = reported_context([last])
    if counted is not None:
        return counted

    def count() -> int | None:
        found = newest_reported_context(session.read_branch())
        return found if found is not None else estimated_context(session, own_copy=True,
                                                                 quick=True)

    return await asyncio.to_thread(count)
