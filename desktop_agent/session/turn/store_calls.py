"""How a session's store calls run: on the spot, or in a worker thread.

Why both. The window's store is a SQLite file on the same disk: a call takes
a fraction of a millisecond, so the session calls it directly and a user
action is done when the method returns. ``serve`` on PostgreSQL waits for a
network database, and under load for the database's locks and CPU: starting
one turn made about twenty round trips, each blocking the replica's event
loop while every other conversation's stream waited behind it (measured with
150 turns starting at once: the loop spent a third of its busy time waiting
for PostgreSQL, and events streamed meanwhile waited 50-300 ms).

So the steps that start a turn are written once, as coroutines that hand each
store call to a :class:`StoreCalls`. With :func:`on_the_spot` the coroutine
never suspends and :func:`finish_now` returns its result synchronously (the
window's path, unchanged); with :func:`in_a_thread` or :class:`ExecutorCalls`
each call runs in a worker thread while the loop serves other conversations.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class StoreCalls(Protocol):
    """Runs one store call (a function of no arguments) and gives its result."""

    async def __call__(self, call: Callable[[], T], /) -> T:
        """The result of ``call()``, run where this runner runs store calls."""
        ...


async def on_the_spot(call: Callable[[], T], /) -> T:
    """Run ``call`` now, on this thread, without suspending."""
    return call()


async def in_a_thread(call: Callable[[], T], /) -> T:
    """Run ``call`` in a worker thread; the event loop goes on meanwhile."""
    return await asyncio.to_thread(call)


class ExecutorCalls:
    """Store calls in an executor of the caller's (``serve`` keeps a small one for turns).

    Args:
        executor: Where the calls run.
    """

    def __init__(self, executor: Executor) -> None:
        self._executor = executor

    async def __call__(self, call: Callable[[], T], /) -> T:
        """The result of ``call()``, run in the executor."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    def close(self) -> None:
        """Stop taking calls; those running finish on their own."""
        self._executor.shutdown(wait=False)


def finish_now(steps: Coroutine[Any, Any, T]) -> T:
    """The result of ``steps``, which hand their store calls to :func:`on_the_spot`.

    Raises:
        RuntimeError: ``steps`` suspended (awaited something real): a bug,
            since the synchronous path must not wait for the loop it runs on.
    """
    try:
        steps.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    steps.close()
    raise RuntimeError("a session step meant to run at once waited for something")
