"""A turn's question in the shared database, answered through another connection.

The session's real :class:`ApprovalBroker` asks through :class:`SharedApprovals` on a
real PostgreSQL store that holds the conversation's turn lease (the replica running
the turn); a second store on the same database plays the replica the answer comes
to. What a single server promises holds: an answer decides the call (edited input
kept), only once; no answer in time means no, and a late answer is refused; an
answer the database accepted just before the expiry still decides the call even
when its notification never arrives.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from desktop_agent.core.tooling.permissions import (
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
)
from desktop_agent.server.shared_approvals import SharedApprovals, encode_answer
from desktop_agent.session import ApprovalAnswer, ApprovalChoice
from desktop_agent.session.approvals.approval_broker import ApprovalBroker
from desktop_agent.store import Store

WAIT = 30.0
WRITE = {"path": "a.txt", "content": "from the model"}


@pytest.fixture
def stores(postgres_url: str) -> Iterator[tuple[Store, Store, str]]:
    """The running replica's store (holding the turn lease), another's, and the conversation."""
    running, other = Store.open(postgres_url), Store.open(postgres_url)
    cid = running.create_conversation("shared").id
    try:
        with running.turn_lease(cid, "server:test"):
            yield running, other, cid
    finally:
        running.close()
        other.close()


@pytest.fixture
async def listening(stores: tuple[Store, Store, str]) -> AsyncIterator[
        Callable[[SharedApprovals], None]]:
    """Start hearing answers (the replica's LISTEN thread) for one SharedApprovals."""
    running = stores[0]
    loop = asyncio.get_running_loop()
    stops: list[Callable[[], None]] = []

    def listen(shared: SharedApprovals) -> None:
        stop = running.watch_approvals(
            lambda _cid: loop.call_soon_threadsafe(shared.heard_answer))
        assert stop is not None
        stops.append(stop)

    yield listen
    for stop in stops:
        await asyncio.to_thread(stop)


def _broker(shared: SharedApprovals, cid: str, timeout: float) -> ApprovalBroker:
    return ApprovalBroker(cid, shared, settings=lambda: {"confirm_tools": True},
                          timeout=timeout)


async def _asked(store: Store, cid: str) -> list[dict[str, Any]]:
    deadline = asyncio.get_running_loop().time() + WAIT
    while not (listed := await asyncio.to_thread(store.open_approvals, cid)):
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.02)
    return listed


async def test_an_answer_through_another_replica_decides_the_call_once(
    stores: tuple[Store, Store, str], listening: Callable[[SharedApprovals], None],
) -> None:
    running, other, cid = stores
    answered: list[tuple[str, ApprovalAnswer]] = []
    shared = SharedApprovals(running, cid, on_answered=lambda i, a: answered.append((i, a)))
    listening(shared)
    call = asyncio.create_task(_broker(shared, cid, 60.0)(
        "write_file", dict(WRITE), ToolPermissionContext("call-1")))
    listed = await _asked(other, cid)
    assert [(q["tool_use_id"], q["input"]) for q in listed] == [("call-1", WRITE)]

    edited = ApprovalAnswer(ApprovalChoice.ALLOW_ONCE, updated_input={"path": "b.txt"})
    assert other.answer_approval(cid, "call-1", encode_answer(edited))
    assert not other.answer_approval(cid, "call-1", encode_answer(
        ApprovalAnswer(ApprovalChoice.DENY, "too late")))  # answered once
    result: PermissionResult = await asyncio.wait_for(call, WAIT)
    assert isinstance(result, PermissionResultAllow)
    assert result.updated_input == {"path": "b.txt"}
    assert answered == [("call-1", edited)]
    assert await asyncio.to_thread(other.open_approvals, cid) == []
    assert not other.answer_approval(cid, "call-1", encode_answer(edited))  # closed


async def test_no_answer_in_time_is_no_and_a_late_answer_is_refused(
    stores: tuple[Store, Store, str], listening: Callable[[SharedApprovals], None],
) -> None:
    running, other, cid = stores
    shared = SharedApprovals(running, cid)
    listening(shared)
    result = await asyncio.wait_for(_broker(shared, cid, 1.0)(
        "write_file", dict(WRITE), ToolPermissionContext("call-2")), WAIT)
    assert isinstance(result, PermissionResultDeny)
    assert "No approval came within 1 s" in result.message
    assert await asyncio.to_thread(other.open_approvals, cid) == []
    assert not other.answer_approval(cid, "call-2", encode_answer(
        ApprovalAnswer(ApprovalChoice.ALLOW_ONCE)))


async def test_an_answer_accepted_before_the_expiry_counts_even_if_its_notice_is_lost(
    stores: tuple[Store, Store, str],
) -> None:
    running, other, cid = stores
    shared = SharedApprovals(running, cid)  # not listening: the NOTIFY never arrives
    call = asyncio.create_task(_broker(shared, cid, 2.0)(
        "write_file", dict(WRITE), ToolPermissionContext("call-3")))
    await _asked(other, cid)
    assert other.answer_approval(cid, "call-3", encode_answer(
        ApprovalAnswer(ApprovalChoice.ALLOW_ONCE)))
    result = await asyncio.wait_for(call, WAIT)
    assert isinstance(result, PermissionResultAllow)  # read back when the row closed


async def test_a_question_is_listed_only_while_its_turn_holds_the_lease(
    postgres_url: str,
) -> None:
    with Store.open(postgres_url) as store:
        cid = store.create_conversation("no lease").id
        store.open_approval(cid, "call-4", {"tool_use_id": "call-4"}, None)
        assert store.open_approvals(cid) == []  # nobody runs a turn to answer it
        assert not store.answer_approval(cid, "call-4", encode_answer(
            ApprovalAnswer(ApprovalChoice.ALLOW_ONCE)))
        with store.turn_lease(cid, "server:test"):
            assert [q["tool_use_id"] for q in store.open_approvals(cid)] == ["call-4"]
