"""The start pacer: turns that start together take turns, and leave the loop to the rest.

These run the pacer on a real event loop. What a person would notice is the
REST tier's (every turn a test starts passes through it) and
``bench/server_load.py``'s latency per event while 150 turns start.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

from desktop_agent.server.start_pacer import PacedCalls, StartPacer
from desktop_agent.session import ExecutorCalls
from desktop_agent.session.store_calls import on_the_spot, reply_calls


def _spin(seconds: float) -> None:
    """Hold the loop (and a CPU) for ``seconds``, as a start step's Python work does."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


class _IterationCounter:
    """Counts the loop's iterations: a callback that schedules itself again each time."""

    def __init__(self) -> None:
        self.count = 0
        self._handle: asyncio.Handle | None = None

    def start(self) -> None:
        self._handle = asyncio.get_running_loop().call_soon(self._tick)

    def _tick(self) -> None:
        self.count += 1
        self._handle = asyncio.get_running_loop().call_soon(self._tick)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()


def _started(pacer: StartPacer, ran: list[str], *names: str) -> list[asyncio.Task[None]]:
    """A task per name, in order, each noting its name in ``ran`` once its step may run."""

    async def start(name: str) -> None:
        await pacer.step()
        ran.append(name)

    return [asyncio.create_task(start(name)) for name in names]


async def test_steps_asked_for_together_run_one_per_iteration_in_order() -> None:
    pacer = StartPacer(stream_share=0)
    counter = _IterationCounter()
    counter.start()
    ran: list[tuple[int, int]] = []

    async def start(number: int) -> None:
        await pacer.step()
        ran.append((number, counter.count))

    await asyncio.gather(*(start(n) for n in range(6)))
    counter.stop()

    assert [number for number, _ in ran] == list(range(6))
    iterations = [iteration for _, iteration in ran]
    assert all(later > earlier for earlier, later in pairwise(iterations))
    assert pacer.waiting == 0


async def test_a_lone_turns_steps_never_wait() -> None:
    pacer = StartPacer(stream_share=10_000)  # any wait at all would be 20 s or more

    for _ in range(5):
        before = asyncio.get_running_loop().time()
        await pacer.step()
        assert pacer.waiting == 0
        _spin(0.002)
        await asyncio.sleep(0.01)  # its store call: the step before is long over
        # A wait would have been 10,000 x 2 ms; the pause itself is 10 ms.
        assert asyncio.get_running_loop().time() - before < 10.0


async def test_queued_steps_leave_the_loop_to_other_work_share_times_as_long() -> None:
    share = 4.0
    pacer = StartPacer(stream_share=share)
    spans: list[tuple[float, float]] = []
    other_work: list[float] = []

    async def start() -> None:
        await pacer.step()
        began = time.monotonic()
        _spin(0.005)
        spans.append((began, time.monotonic()))

    async def stream() -> None:  # a reply streaming meanwhile: a piece every 1 ms
        while len(spans) < 5:
            other_work.append(time.monotonic())
            await asyncio.sleep(0.001)

    await asyncio.gather(stream(), *(start() for _ in range(5)))

    for (began, ended), (next_began, _) in pairwise(spans):
        assert next_began - ended >= share * (ended - began) * 0.99
        # ... and the loop served the stream in between.
        assert any(ended < moment < next_began for moment in other_work)


async def test_a_step_cancelled_while_waiting_does_not_hold_up_the_others() -> None:
    pacer = StartPacer(stream_share=0)
    ran: list[str] = []

    first, second, third = _started(pacer, ran, "first", "second", "third")
    await asyncio.sleep(0)  # first runs its step; second and third wait
    second.cancel()
    await asyncio.gather(first, third, return_exceptions=False)
    assert ran == ["first", "third"]
    assert second.cancelled()


async def test_a_step_cancelled_as_its_turn_came_hands_the_turn_on() -> None:
    pacer = StartPacer(stream_share=0)
    ran: list[str] = []

    holder, chosen, after = _started(pacer, ran, "holder", "chosen", "after")
    await asyncio.sleep(0)  # holder ran; chosen and after wait
    await holder
    # The pacer picks "chosen" (its wait ends) and, before it runs, it is cancelled.
    while pacer.waiting == 2:
        await asyncio.sleep(0)
    chosen.cancel()
    await asyncio.wait_for(after, timeout=60)  # generous: only a hang fails this
    assert ran == ["holder", "after"]


async def test_a_streaming_replys_store_calls_do_not_wait_behind_queued_starts() -> None:
    # Any paced wait would be 10,000 times a step of 2 ms: the reply's call must pass them.
    pacer = StartPacer(stream_share=10_000)
    executor = ThreadPoolExecutor(1)
    calls = PacedCalls(ExecutorCalls(executor), pacer)
    ran: list[str] = []

    async def start(name: str) -> None:
        await pacer.step()
        ran.append(name)
        _spin(0.002)  # the start step's own work

    starts = [asyncio.create_task(start(f"start {n}")) for n in range(3)]
    await asyncio.sleep(0)  # the first start runs its step; the other two wait behind it
    assert pacer.waiting == 2

    # A turn whose request is sent writes its reply's first message meanwhile.
    ran.append(await reply_calls(calls)(lambda: "the reply's first write"))

    assert ran == ["start 0", "the reply's first write"]
    assert pacer.waiting == 2  # the starts still wait their turn
    for task in starts:
        task.cancel()
    await asyncio.gather(*starts, return_exceptions=True)
    executor.shutdown()


def test_calls_that_pace_nothing_are_their_own_reply_calls() -> None:
    assert reply_calls(on_the_spot) is on_the_spot
