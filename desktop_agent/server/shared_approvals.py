"""Tool approvals across ``serve`` replicas on PostgreSQL: ask on one, answer on any.

A turn runs on the replica that took its lease (B); the approve or reject may
come to any replica (A). :class:`SharedApprovals` is B's asker: it keeps the
question's Future as :class:`~.pending_approvals.PendingApprovals` does and
also writes the question to the store's ``approvals`` table
(:mod:`desktop_agent.store.approval_table`), and only then announces it
(``approval_requested``), so whoever reads the event finds the question on
every replica. A's route answers the row (once: the database decides which of
two answers counts) and the commit NOTIFYs; B's listener
(:func:`listen_for_answers`) reads the answer and resolves the Future, and B
writes ``approval_resolved`` just as a single server does. An answer given on B
itself resolves the Future at once, without waiting for its own NOTIFY. A
notification lost while the listener (re)connects costs at most
:data:`CHECK_SECONDS`: a waiting question also reads its row now and then.

Timeouts keep a single server's meaning, with the database as the judge: the
row expires a moment (:data:`CLOSE_MARGIN`) before the broker's own timeout,
when B stops waiting and deletes the row in one statement that also returns an
answer committed just before, so an answer the database accepted always
decides the call, and one that came too late is refused with the 404 a closed
question gets. A replica killed while asking leaves a row no one can answer
once its turn lease lapses (see the table's module).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from desktop_agent.session import (
    ApprovalAnswer,
    ApprovalChoice,
    QuestionWithdrawn,
    ToolCallQuestion,
)
from desktop_agent.store import StoreError

from .pending_approvals import Answered, PendingApproval, PendingApprovals, was_withdrawn

if TYPE_CHECKING:
    from desktop_agent.store import Store

log = logging.getLogger("desktop_agent.server.approvals")

CHECK_SECONDS = 5.0
"""How often a waiting question reads its row, in case a notification was lost."""

CLOSE_MARGIN = 1.0
"""Seconds (at most a tenth of the timeout) between a question's row expiring and the
broker's own timeout: room for closing the row and reading an answer it returns."""


def encode_answer(answer: ApprovalAnswer) -> dict[str, Any]:
    """The answer as the JSON the ``approvals`` table keeps."""
    return {"choice": answer.choice.value, "reason": answer.reason,
            "updated_input": answer.updated_input, "preview": answer.preview}


def decode_answer(data: dict[str, Any]) -> ApprovalAnswer:
    """The answer back from :func:`encode_answer`'s JSON."""
    return ApprovalAnswer(ApprovalChoice(data["choice"]), str(data.get("reason") or ""),
                          data.get("updated_input"), bool(data.get("preview")))


class SharedApprovals(PendingApprovals):
    """One conversation's questions, answerable through any replica on the database.

    Args:
        store: The PostgreSQL store every replica shares.
        conversation_id: The conversation whose turns ask.
        on_open: Told about each question once its row is committed (announce it).
        on_answered: Told when an answer resolves a question here.
    """

    shared = True

    def __init__(self, store: Store, conversation_id: str,
                 on_open: Callable[[PendingApproval], None] = lambda _p: None,
                 on_answered: Answered = lambda _i, _a: None) -> None:
        super().__init__(on_open, on_answered)
        self._store = store
        self._conversation_id = conversation_id
        self._reading: set[asyncio.Task[None]] = set()
        self._closed: set[str] = set()  # rows already closed by an expiry

    async def __call__(self, question: ToolCallQuestion) -> ApprovalAnswer:
        """Record the question for every replica, then wait for an answer from any."""
        call_id = question.context.tool_use_id
        pending = PendingApproval(call_id, question, asyncio.get_running_loop().create_future())
        expires_at = None if question.timeout is None else \
            time.time() + question.timeout - min(CLOSE_MARGIN, question.timeout / 10)
        self._open[call_id] = pending
        try:
            try:
                await asyncio.to_thread(self._store.open_approval, self._conversation_id,
                                        call_id, pending.to_dict(), expires_at)
            except StoreError as exc:
                log.warning("could not record the question about %s in %s: %s",
                            question.tool_name, self._conversation_id, exc)
                return ApprovalAnswer(ApprovalChoice.DENY, (
                    "The question could not be recorded in the shared database, so no one "
                    f"could answer it; the call was not run. {exc}"))
            self._on_open(pending)
            return await self._wait(pending, expires_at)
        except asyncio.CancelledError:
            if was_withdrawn(pending):
                raise QuestionWithdrawn from None
            raise
        finally:
            self._open.pop(call_id, None)
            if call_id in self._closed:
                self._closed.discard(call_id)
            else:
                await self._close(call_id)

    async def _wait(self, pending: PendingApproval, expires_at: float | None) -> ApprovalAnswer:
        while expires_at is None or (remaining := expires_at - time.time()) > 0:
            step = CHECK_SECONDS if expires_at is None else min(CHECK_SECONDS, remaining)
            try:
                return await asyncio.wait_for(asyncio.shield(pending.future), step)
            except TimeoutError:
                if expires_at is not None and time.time() >= expires_at:
                    break  # closing the row below reads an answer that came meanwhile
                # A notification can be lost (the listener connecting or reconnecting):
                # read the row now and then, as event followers poll as a safety net.
                await self._read_answers()
                if pending.future.done():
                    return pending.future.result()
        # The row expired: close it, keeping an answer that committed just before.
        late = await self._close(pending.tool_use_id)
        self._closed.add(pending.tool_use_id)
        if late is None or not self.resolve(pending.tool_use_id, late):
            raise TimeoutError
        return late

    async def _close(self, call_id: str) -> ApprovalAnswer | None:
        try:
            answered = await asyncio.to_thread(self._store.close_approval,
                                               self._conversation_id, call_id)
        except StoreError as exc:  # the row lapses with the lease anyway
            log.warning("could not close the question %s of %s: %s", call_id,
                        self._conversation_id, exc)
            return None
        return None if answered is None else decode_answer(answered)

    async def answer(self, tool_use_id: str, answer: ApprovalAnswer) -> bool:
        """Answer through the database (once, whichever replica asked); False if none is open.

        On the replica running the turn the waiting call is handed the answer at
        once; elsewhere that replica hears it through its listener.
        """
        if not await asyncio.to_thread(self._store.answer_approval, self._conversation_id,
                                       tool_use_id, encode_answer(answer)):
            return False
        self.resolve(tool_use_id, answer)
        return True

    async def listed(self) -> list[dict[str, Any]]:
        """The open questions of this conversation on every replica, oldest first."""
        return await asyncio.to_thread(self._store.open_approvals, self._conversation_id)

    def heard_answer(self) -> None:
        """Another replica answered one of this conversation's questions: read and apply it."""
        if not self.all():
            return  # not asked here, or already answered (e.g. through this replica)
        task = asyncio.get_running_loop().create_task(
            self._read_answers(), name=f"approval-answers-{self._conversation_id}")
        self._reading.add(task)
        task.add_done_callback(self._reading.discard)

    async def _read_answers(self) -> None:
        try:
            answered = await asyncio.to_thread(self._store.answered_approvals,
                                               self._conversation_id)
        except StoreError as exc:  # the question then expires: a missed answer means no
            log.warning("could not read answers of %s: %s", self._conversation_id, exc)
            return
        for tool_use_id, data in answered:
            self.resolve(tool_use_id, decode_answer(data))

    def withdraw_all(self) -> None:
        """Withdraw every open question (each is denied; their rows are closed as they end)."""
        for task in list(self._reading):
            task.cancel()
        super().withdraw_all()


class _Turn(Protocol):
    @property
    def approvals(self) -> PendingApprovals: ...


class _Turns(Protocol):
    """The replica's running conversations (a ``SessionRegistry`` of runners).

    A protocol, not the runner's class: the runner imports this module, and the
    two importing each other is a cycle the layering check refuses.
    """

    def peek(self, conversation_id: str) -> _Turn | None: ...


async def listen_for_answers(
    store: Store, runners: _Turns,
) -> Callable[[], None] | None:
    """Hand answers other replicas give to this replica's waiting turns; a stop function.

    None on SQLite (questions are not shared there).
    """
    loop = asyncio.get_running_loop()

    def answered_here(conversation_id: str) -> None:  # on the loop
        runner = runners.peek(conversation_id)
        if runner is not None and isinstance(runner.approvals, SharedApprovals):
            runner.approvals.heard_answer()

    def on_answer(conversation_id: str) -> None:  # the store's listener thread
        loop.call_soon_threadsafe(answered_here, conversation_id)

    return await asyncio.to_thread(store.watch_approvals, on_answer)
