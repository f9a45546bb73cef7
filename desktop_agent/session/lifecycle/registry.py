"""One session per conversation, closed when idle.

A long-running server drives many conversations; each session keeps a
client (and so a connection pool to its model server) and its approval
state. The registry hands out one session per conversation and closes the
ones that have been idle longest once more than ``max_idle`` are open, so
a server that touched thousands of conversations holds a bounded number of
connections and memory (issue 12: every turn failed after 240 conversations
under a 256-file limit).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

log = logging.getLogger("desktop_agent.session.registry")

DEFAULT_MAX_IDLE = 32
"""Idle sessions kept open (their clients' connections warm) before the oldest closes."""


class Evictable(Protocol):
    """What the registry needs of what it holds."""

    @property
    def busy(self) -> bool:
        """Whether a turn runs (never evicted then)."""

    @property
    def last_used(self) -> float:
        """``time.monotonic()`` of the last action."""

    def can_evict(self) -> bool:
        """Whether nothing but the store holds its state (no approval waits, no turn)."""

    async def close(self) -> None:
        """Release its client and tasks."""


T = TypeVar("T", bound=Evictable)


class SessionRegistry(Generic[T]):
    """Holds one ``T`` (a session, or a front end's wrapper of one) per conversation.

    Args:
        factory: Makes the holder for a conversation id.
        max_idle: Idle holders kept open; older idle ones are closed.
    """

    def __init__(self, factory: Callable[[str], T], max_idle: int = DEFAULT_MAX_IDLE) -> None:
        self._factory = factory
        self._max_idle = max_idle
        self._held: dict[str, T] = {}
        self._closing: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._held)

    def peek(self, conversation_id: str) -> T | None:
        """The holder if one is open."""
        return self._held.get(conversation_id)

    def get(self, conversation_id: str, make: Callable[[], T] | None = None) -> T:
        """The conversation's holder, made on first use; may close the oldest idle ones.

        ``make`` makes it instead of the factory (from what the caller already read).
        """
        held = self._held.get(conversation_id)
        if held is None:
            held = make() if make is not None else self._factory(conversation_id)
            self._held[conversation_id] = held
            self._evict_idle(keep=conversation_id)
        return held

    def _evict_idle(self, keep: str) -> None:
        if len(self._held) - 1 <= self._max_idle:  # not even every other one idle is too many
            return
        idle = sorted(((cid, h) for cid, h in self._held.items()
                       if cid != keep and h.can_evict()), key=lambda item: item[1].last_used)
        for conversation_id, held in idle[:max(0, len(idle) - self._max_idle)]:
            del self._held[conversation_id]
            task = asyncio.get_running_loop().create_task(held.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
            log.debug("closed idle session %s", conversation_id)

    async def evict_idle(self, idle_seconds: float) -> int:
        """Close holders unused for ``idle_seconds`` (no turn, no question); how many.

        The store is the source of truth: the next use makes a new holder.
        """
        cutoff = time.monotonic() - idle_seconds
        idle = [cid for cid, held in self._held.items()
                if held.can_evict() and held.last_used < cutoff]
        for conversation_id in idle:
            await self.discard(conversation_id)
        return len(idle)

    async def discard(self, conversation_id: str) -> None:
        """Close and forget one holder (its conversation is being deleted)."""
        held = self._held.pop(conversation_id, None)
        if held is not None:
            await held.close()

    async def close(self) -> None:
        """Close every holder."""
        for conversation_id in list(self._held):
            await self.discard(conversation_id)
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
