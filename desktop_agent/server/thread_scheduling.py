"""The server's helper threads wait for the event loop instead of preempting it (Linux).

The event loop hands work to threads all the time: events to the writer
thread, store reads and keyring lookups through ``asyncio.to_thread``. An
ordinary thread woken on a busy CPU tends to preempt the loop at once, only
to find the GIL held and sleep again: context switches that delay every
stream the loop serves. With 50 turns starting at once on a 2-core VM, py-spy
put about half of the loop's samples in those hand-offs. ``SCHED_BATCH``
(sched(7)) keeps the thread's fair share of the CPU but disfavours it on
wake-up, so it mostly runs when the loop waits for the network (and so
releases the GIL and the CPU). Measured with ``bench/server_load.py
--pin-server``, six interleaved runs each on a 2-core AMD VM: p99 added
latency per event, median of runs, 13.3 ms as ordinary threads, 9.1 ms as
``SCHED_BATCH``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor


def defer_to_event_loop() -> None:
    """Make the calling thread ``SCHED_BATCH`` (where the system has it; else nothing)."""
    policy = getattr(os, "SCHED_BATCH", None)
    if policy is None:
        return
    with contextlib.suppress(OSError):  # not allowed here: ordinary scheduling is fine
        os.sched_setscheduler(threading.get_native_id(), policy, os.sched_param(0))


def let_woken_thread_run() -> None:
    """Give the CPU to a thread the loop just woke, before the loop's next step (Linux).

    For the event-log writer: deferring to the loop, it otherwise starts its
    commit only when the loop next waits for the network, after the whole
    burst of steps the loop is working through (50 replies' pieces tend to
    arrive together), and the events wait with it; followers are written to
    from the commit (:mod:`desktop_agent.server.live_stream`), so a commit
    made early in a burst reaches the clients early too. ``sched_yield``
    releases the GIL while it yields, so the writer can take its batch; where
    the writer has a CPU of its own it returns at once (unless another
    process waits for this CPU, which then runs first for a moment). Measured
    with ``bench/server_load.py --pin-server`` (docs/performance.md).
    """
    yield_cpu = getattr(os, "sched_yield", None)
    if yield_cpu is not None:
        yield_cpu()


def deferring_executor() -> ThreadPoolExecutor:
    """An executor for the loop's ``to_thread`` calls whose threads defer to the loop."""
    return ThreadPoolExecutor(thread_name_prefix="server-io", initializer=defer_to_event_loop)


TURN_STORE_THREADS = 2
"""Threads for the store calls that start and end turns (see :func:`turn_store_executor`)."""


def turn_store_executor() -> ThreadPoolExecutor:
    """A small executor, apart from ``to_thread``'s, for the store calls of turns.

    Why apart and why small: the store calls that start and end a turn (the
    conversation, the lease, the prompt, the reply's first and last writes)
    run off the event loop (:mod:`desktop_agent.session.store_calls`). With
    150 turns starting at once on three replicas, ``to_thread``'s six threads
    per replica ran them all together and took the GIL and the CPU from the
    event-log writer, whose commits then waited 50-500 ms, and every stream
    with them. Two threads queue the starts instead. Measured with
    ``bench/server_load.py --database ... --replicas 3 --conversations 50``,
    alternating runs: p99 added latency per event over the whole run 50-91 ms
    with one or two threads, 160-163 ms with the default executor; the 150
    starts took about as long (3.8-4.1 s). Two rather than one, so that one
    call waiting for a lock does not hold up every other start.
    """
    return ThreadPoolExecutor(TURN_STORE_THREADS, thread_name_prefix="turn-store",
                              initializer=defer_to_event_loop)
