"""HTTP callbacks: POST each matching event to a registered URL, retrying with backoff.

Each callback has its own queue and worker task, so a slow or dead receiver
delays only its own deliveries, never the conversation or other receivers.
Events are posted in order, one at a time, as JSON (the same shape as the list
route), with ``X-Desktop-Agent-Event-Id`` so receivers can drop the duplicate
a retry after a lost response may cause (delivery is at least once).

Callbacks live for the server's lifetime only: a callback URL may carry a
token, and nothing here writes it to disk. Re-register after a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

import httpx

from desktop_agent.core.wire.retry import RetryPolicy

from .event_log import Event

log = logging.getLogger("desktop_agent.server.callbacks")


DELIVERY_RETRY = RetryPolicy(max_retries=5, initial_delay=0.5, max_delay=30.0, jitter=False)
"""Six tries per event, waiting 0.5, 1, 2, 4 and 8 s between them (about 15 s in all).

Without jitter: each receiver has its own worker, so there is no crowd of
clients to spread out, and a receiver's operator can read the spacing off
its log."""

DELIVERY_TIMEOUT = 10.0
"""Seconds one POST to a receiver may take before it counts as failed."""


@dataclass
class Callback:
    """One registered receiver and its delivery figures."""

    id: str
    conversation_id: str
    url: str
    event_types: frozenset[str] | None
    delivered: int = 0
    failed: int = 0
    last_error: str | None = None
    queue: asyncio.Queue[Event] = field(default_factory=lambda: asyncio.Queue(maxsize=10_000))
    task: asyncio.Task[None] | None = None

    def wants(self, event: Event) -> bool:
        """Whether this callback's filter lets ``event`` through."""
        return self.event_types is None or event.type in self.event_types


class CallbackDispatcher:
    """Registers callbacks and feeds them events from the event log."""

    def __init__(self, policy: RetryPolicy | None = None,
                 timeout: float = DELIVERY_TIMEOUT) -> None:
        self.policy = policy or DELIVERY_RETRY
        self.timeout = timeout
        self._by_conversation: dict[str, dict[str, Callback]] = {}
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout, follow_redirects=False,
                                             trust_env=False)
        return self._client

    def add(self, conversation_id: str, url: str, event_types: Iterable[str] | None) -> Callback:
        """Register a receiver; it gets events appended from now on."""
        callback = Callback(
            id=uuid.uuid4().hex,
            conversation_id=conversation_id,
            url=url,
            event_types=frozenset(event_types) if event_types is not None else None,
        )
        callback.task = asyncio.get_running_loop().create_task(
            self._deliver_forever(callback), name=f"callback-{callback.id}"
        )
        self._by_conversation.setdefault(conversation_id, {})[callback.id] = callback
        return callback

    def list(self, conversation_id: str) -> list[Callback]:
        """The conversation's callbacks, oldest first."""
        return list(self._by_conversation.get(conversation_id, {}).values())

    def get(self, conversation_id: str, callback_id: str) -> Callback | None:
        """One callback, or None."""
        return self._by_conversation.get(conversation_id, {}).get(callback_id)

    async def remove(self, conversation_id: str, callback_id: str) -> bool:
        """Stop a callback (undelivered events are dropped); False if unknown."""
        callback = self._by_conversation.get(conversation_id, {}).pop(callback_id, None)
        if callback is None:
            return False
        await self._stop(callback)
        return True

    async def remove_conversation(self, conversation_id: str) -> None:
        """Stop every callback of a deleted conversation."""
        for callback in self._by_conversation.pop(conversation_id, {}).values():
            await self._stop(callback)

    async def _stop(self, callback: Callback) -> None:
        if callback.task is not None:
            callback.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await callback.task

    def on_event(self, event: Event) -> None:
        """Event log listener: queue the event for every interested callback."""
        for callback in self._by_conversation.get(event.conversation_id, {}).values():
            if not callback.wants(event):
                continue
            try:
                callback.queue.put_nowait(event)
            except asyncio.QueueFull:
                callback.failed += 1
                callback.last_error = "receiver too slow: queue full, event dropped"

    async def _deliver_forever(self, callback: Callback) -> None:
        while True:
            event = await callback.queue.get()
            await self._deliver(callback, event)

    async def _deliver(self, callback: Callback, event: Event) -> None:
        headers = {"Content-Type": "application/json",
                   "X-Desktop-Agent-Event-Id": str(event.id),
                   "X-Desktop-Agent-Callback-Id": callback.id}
        body = event.to_json().encode()
        retries = self.policy.begin()
        while True:
            started = time.monotonic()
            try:
                response = await self._http().post(callback.url, content=body,
                                                   headers=headers)
                if response.status_code < 300:
                    callback.delivered += 1
                    return
                problem = f"receiver answered HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                problem = f"could not reach receiver: {type(exc).__name__}"
            callback.last_error = problem
            log.info("callback %s event %d attempt %d failed after %.2fs: %s",
                     callback.id, event.id, retries.retries + 1, time.monotonic() - started,
                     problem)
            wait = retries.next_delay()
            if wait is None:
                break
            await asyncio.sleep(wait)
        callback.failed += 1
        log.warning("callback %s gave up on event %d after %d attempts",
                    callback.id, event.id, self.policy.attempts)

    async def close(self) -> None:
        """Stop every worker and the HTTP client."""
        for conversation_id in list(self._by_conversation):
            await self.remove_conversation(conversation_id)
        if self._client is not None:
            await self._client.aclose()
            self._client = None
