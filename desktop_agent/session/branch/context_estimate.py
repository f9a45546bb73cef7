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

__all__ = ["context_after_reply", "context_when_opened", "estimated_context", "reported_context"]

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
    if last is None or last.role != "assistant":
        return None
    usage: Any = (last.metadata or {}).get("usage") or {}
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

    The last reply's stored server count costs nothing. Otherwise the branch
    is counted with the quick guess (:mod:`desktop_agent.core.context.quick_count`):
    loading the tokenizer for a figure that is only shown kept an idle window
    with five reopened tabs about 45 MB heavier. Reading the branch still takes
    the store, so it runs in a worker thread. The first reply's figures (the
    server's, or the tokenizer's) replace the guess.
    """
    last = session.last_message()
    if last is None:
        return None
    counted = reported_context([last])
    if counted is not None:
        return counted
    return await asyncio.to_thread(estimated_context, session, own_copy=True, quick=True)
