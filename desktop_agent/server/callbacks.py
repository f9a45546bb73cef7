"""HTTP callbacks: POST each matching event to a registered URL, retrying with backoff.

Each callback has its own queue and worker task, so a slow or dead receiver
delays only its own deliveries, never the conversation or other receivers.
Events are posted in order, one at a time, as JSON (the same shape as the list
route), with ``X-Desktop-Agent-Event-Id`` so receivers can drop the duplicate
a retry after a lost response may cause (delivery is at least once).

On one server (SQLite) callbacks live for the server's lifetime only: a
callback URL may carry a token, and nothing here writes it to disk.
Re-register after a restart.

Replicas on one PostgreSQL database share them (:class:`SharedCallbacks`): a
callback is stored there with its URL sealed by the replicas' key, every replica
hears of each one added or removed (LISTEN/NOTIFY) and keeps its own copy, and
each event is posted by the replica that committed it (a turn's events by the
replica running the turn), so each once and in order. Before the first event of
each turn it posts, a replica rereads the conversation's callbacks, so one
registered through another replica just before the turn is not missed while the
notification is on its way. Delivery figures (delivered, failed, pending) count
the posts of the replica asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import httpx

from desktop_agent.core.wire.retry import RetryPolicy
from desktop_agent.store import StoreError

from .event_record import Event
from .shared_callbacks import SharedCallback, SharedCallbacks

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


def _turn_ended(event: Event) -> bool:
    return event.type == "state" and event.data.get("state") == "idle"


class CallbackDispatcher:
    """Registers callbacks and feeds them events from the event log.

    Args:
        policy: Retries per event.
        timeout: Seconds one POST may take.
        shared: The database the replicas share callbacks through; None on one
            server, where they stay in this process's memory.
    """

    def __init__(self, policy: RetryPolicy | None = None,
                 timeout: float = DELIVERY_TIMEOUT,
                 shared: SharedCallbacks | None = None) -> None:
        self.policy = policy or DELIVERY_RETRY
        self.timeout = timeout
        self._by_conversation: dict[str, dict[str, Callback]] = {}
        self._client: httpx.AsyncClient | None = None
        self._shared = shared
        # Shared only: conversations whose callbacks were reread since their last turn
        # ended; events held (in order) while a reread is under way; rereads asked for
        # during one; the tasks doing them; the LISTEN thread's stop function.
        self._fresh: set[str] = set()
        self._held: dict[str, list[Event]] = {}
        self._again: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._stop_watching: Callable[[], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # Moves with every change of the callbacks this process hears of or makes: a
        # read taken before a change must not be applied after it (see took_for_turn).
        self.changes = 0

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout, follow_redirects=False,
                                             trust_env=False)
        return self._client

    def add(self, conversation_id: str, url: str, event_types: Iterable[str] | None) -> Callback:
        """Register a receiver in this process; it gets events appended from now on."""
        return self._start(uuid.uuid4().hex, conversation_id, url,
                           frozenset(event_types) if event_types is not None else None)

    async def register(self, conversation_id: str, url: str,
                       event_types: Iterable[str] | None) -> Callback:
        """Register a receiver; with replicas, stored first so that every replica knows it.

        Raises:
            StoreError: The database could not store it (nothing was registered).
        """
        types = frozenset(event_types) if event_types is not None else None
        callback_id = uuid.uuid4().hex
        self.changes += 1
        if self._shared is not None:
            await asyncio.to_thread(self._shared.insert, callback_id, conversation_id, url,
                                    None if types is None else sorted(types))
        existing = self.get(conversation_id, callback_id)  # the notification may be first
        return existing or self._start(callback_id, conversation_id, url, types)

    def _start(self, callback_id: str, conversation_id: str, url: str,
               event_types: frozenset[str] | None) -> Callback:
        callback = Callback(id=callback_id, conversation_id=conversation_id, url=url,
                            event_types=event_types)
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
        """Stop a callback (undelivered events are dropped); False if unknown.

        With replicas it is removed from the database, so every replica stops it.
        """
        removed = False
        self.changes += 1
        if self._shared is not None:
            removed = await asyncio.to_thread(self._shared.delete, conversation_id, callback_id)
        callback = self._by_conversation.get(conversation_id, {}).pop(callback_id, None)
        if callback is None:
            return removed
        await self._stop(callback)
        return True

    async def remove_conversation(self, conversation_id: str) -> None:
        """Stop every callback of a deleted conversation (on every replica)."""
        if self._shared is not None:
            await asyncio.to_thread(self._shared.delete_conversation, conversation_id)
        for callback in self._by_conversation.pop(conversation_id, {}).values():
            await self._stop(callback)

    async def _stop(self, callback: Callback) -> None:
        if callback.task is not None:
            callback.task.cancel()
            try:
                await callback.task
            except asyncio.CancelledError:
                pass
            except Exception:  # a worker's failure must not stop a deletion or shutdown
                log.warning("callback %s stopped with an error", callback.id, exc_info=True)

    def on_event(self, event: Event) -> None:
        """Event log listener: queue the event for every interested callback.

        Called for the events this process committed only (see the module's
        docstring for how replicas share the posting).
        """
        if self._shared is None:
            self._queue(event)
            return
        cid = event.conversation_id
        held = self._held.get(cid)
        if held is not None:  # a reread is under way: keep the order
            held.append(event)
            return
        if cid not in self._fresh:
            self._held[cid] = [event]
            self._reread(cid)
            return
        self._queue(event)
        if _turn_ended(event):
            self._fresh.discard(cid)

    def _queue(self, event: Event) -> None:
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
            except (httpx.HTTPError, OSError, AttributeError) as exc:
                # AttributeError: httpcore on uvloop, when the receiver resets the
                # connection just after it opened (anyio asks a closed transport for
                # its peer). Seen in CI as a receiver shut down: it is a failed try.
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

    # -- shared between replicas -----------------------------------------------------------
    async def share(self) -> None:
        """Load the replicas' callbacks and hear their changes (no-op on one server).

        A database that cannot be read now is logged; the first event of each
        conversation rereads its callbacks anyway.
        """
        if self._shared is None:
            return
        self._loop = asyncio.get_running_loop()
        await self._reread_all()
        self._stop_watching = await asyncio.to_thread(self._shared.watch, self._heard)

    def _heard(self, conversation_id: str) -> None:
        """A replica changed callbacks (the listener's thread): reread on the loop."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._changed, conversation_id)

    def _changed(self, conversation_id: str) -> None:
        self.changes += 1
        if not conversation_id:  # listening (re)started: a change may have been missed
            self._fresh.clear()
            self._track(asyncio.get_running_loop().create_task(self._reread_all()))
        elif conversation_id in self._held:
            self._again.add(conversation_id)
        else:
            self._held[conversation_id] = []
            self._reread(conversation_id)

    def _track(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def synced(self, conversation_id: str) -> None:
        """Reread the conversation's callbacks now (before listing or counting them).

        Raises:
            StoreError: The database could not be read.
        """
        if self._shared is not None:
            await self._apply(conversation_id,
                              await asyncio.to_thread(self._shared.load, conversation_id))

    def stored_for_turn(self, conversation_id: str) -> Sequence[SharedCallback] | None:
        """The conversation's stored callbacks, read for a turn about to start (blocking).

        None on one server, or when the database cannot be read now (the turn's
        first event rereads them then, as without this read).
        """
        if self._shared is None:
            return None
        try:
            return self._shared.load(conversation_id)
        except StoreError:
            return None

    async def took_for_turn(self, conversation_id: str,
                            stored: Sequence[SharedCallback] | None, mark: int) -> None:
        """Apply callbacks read (with :meth:`stored_for_turn`) just before a turn starts.

        Why: a replica rereads a conversation's callbacks before posting the first
        event of each turn; a task, a worker thread and a database read of their
        own, per turn started. ``POST /run`` reads them in the worker thread that
        reads the conversation anyway, so the turn's events go out without the
        reread. The read counts as the reread only when nothing changed since
        ``mark`` (:attr:`changes` before it was taken) and no reread runs:
        otherwise it may be older than what is known, and the turn's first
        event rereads as before.
        """
        if (stored is None or mark != self.changes or self._tasks
                or conversation_id in self._held):
            return
        await self._apply(conversation_id, stored)
        if mark == self.changes and conversation_id not in self._held:
            self._fresh.add(conversation_id)

    def not_started(self, conversation_id: str) -> None:
        """A turn read for did not start: its first event (if any) rereads after all."""
        self._fresh.discard(conversation_id)

    def _reread(self, conversation_id: str) -> None:
        self._track(asyncio.get_running_loop().create_task(
            self._reread_one(conversation_id), name=f"callbacks-reread-{conversation_id}"))

    async def _reread_one(self, conversation_id: str) -> None:
        """Reread one conversation's callbacks, then post the events held meanwhile."""
        assert self._shared is not None
        try:
            while True:
                self._again.discard(conversation_id)
                try:
                    stored = await asyncio.to_thread(self._shared.load, conversation_id)
                except StoreError as exc:
                    log.warning("could not reread the callbacks of %s (%s); keeping the "
                                "ones known", conversation_id, exc)
                else:
                    await self._apply(conversation_id, stored)
                if conversation_id not in self._again:
                    break
        finally:
            self._fresh.add(conversation_id)
            for event in self._held.pop(conversation_id, []):
                self._queue(event)
                if _turn_ended(event):
                    self._fresh.discard(conversation_id)

    async def _reread_all(self) -> None:
        assert self._shared is not None
        try:
            stored = await asyncio.to_thread(self._shared.load)
        except StoreError as exc:
            log.warning("could not reread the replicas' callbacks (%s)", exc)
            return
        by_conversation: dict[str, list[SharedCallback]] = {}
        for item in stored:
            by_conversation.setdefault(item.conversation_id, []).append(item)
        for cid in set(by_conversation) | set(self._by_conversation):
            await self._apply(cid, by_conversation.get(cid, []))

    async def _apply(self, conversation_id: str, stored: Sequence[SharedCallback]) -> None:
        """Make this process's callbacks of the conversation the stored ones (figures kept).

        The set changes before the first await, so two rereads never interleave in it.
        """
        wanted = {item.id for item in stored}
        mine = self._by_conversation.get(conversation_id, {})
        gone = [mine.pop(i) for i in [i for i in mine if i not in wanted]]
        for item in stored:
            if item.id not in mine:
                self._start(item.id, conversation_id, item.url, item.event_types)
        if not self._by_conversation.get(conversation_id):
            self._by_conversation.pop(conversation_id, None)
        for callback in gone:
            await self._stop(callback)

    async def close(self) -> None:
        """Stop every worker and the HTTP client."""
        if self._stop_watching is not None:
            await asyncio.to_thread(self._stop_watching)
            self._stop_watching = None
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for conversation_id in list(self._by_conversation):
            await self.remove_conversation(conversation_id)
        if self._client is not None:
            await self._client.aclose()
            self._client = None
