"""How a session's store calls run: on the spot, or in a worker thread.

Why both. The window's store is a SQLite file on the same disk: a call takes
a fraction of a millisecond, so the session calls it directly and a user
action is done when the method returns. ``serve`` on PostgreSQL waits for a
network database, and under load for the database's locks and CPU: starting
one turn made about twenty round trips, each blocking the replica's event
loop while every other conversation's stream waited behind it (measured with
150 turns starting at once: the loop spent a third of its busy time waiting
for PostgreSQL, and events streamed meanwhile waited 50-300 ms).

So each session step that calls the store (starting a turn, renaming, a
settings patch, catching up with other processes) is written once, as a
coroutine that takes a :class:`StoreCalls` first and hands it each store call.
With :func:`in_a_thread` or :class:`ExecutorCalls` each call runs in a worker
thread while the loop serves other conversations (``serve`` awaits the step).
With :func:`on_the_spot` the coroutine never suspends and :func:`finish_now`
returns its result synchronously: :class:`AtOnce` is that one adapter, which
gives the window a plain method that is done when it returns, with no twin of
the step written beside it. At the top of the package, beside the events and
the errors, because the steps of every part take one (the turn's, the
settings', the branch's, the files').
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor
from typing import (
    Any,
    Concatenate,
    Generic,
    ParamSpec,
    Protocol,
    TypeVar,
    overload,
    runtime_checkable,
)

T = TypeVar("T")
P = ParamSpec("P")
Part = TypeVar("Part")


class StoreCalls(Protocol):
    """Runs one store call (a function of no arguments) and gives its result."""

    async def __call__(self, call: Callable[[], T], /) -> T:
        """The result of ``call()``, run where this runner runs store calls."""
        ...


@runtime_checkable
class PacedStoreCalls(StoreCalls, Protocol):
    """Store calls that hold a turn's start back while other turns start (``serve``'s).

    A turn's steps once its request is sent are its reply's (the reply's first
    and last writes, its tool calls): held back like a start, the reply piles up
    unread until the held step drains it whole, so they run through
    :attr:`for_reply` instead.
    """

    @property
    def for_reply(self) -> StoreCalls:
        """The same calls, unpaced: for the steps of a turn whose request is sent."""
        ...


def reply_calls(calls: StoreCalls) -> StoreCalls:
    """The calls a turn uses once its request is sent: ``calls`` unless they are paced."""
    return calls.for_reply if isinstance(calls, PacedStoreCalls) else calls


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


class AtOnce(Generic[Part, P, T]):
    """A part's step as a plain method, run :func:`on_the_spot`: done when it returns.

    Declared on the session as ``rename = AtOnce("_settings", SettingsRecord.rename)``,
    as :class:`~desktop_agent.store.part_method.PartMethod` declares the store's
    methods: the step's signature, less its leading :class:`StoreCalls`, is the
    method's, and lives once, in the part. The bound method is kept in the
    instance's ``__dict__`` on first use, so only for parts set once in
    ``__init__``.

    Attributes:
        part: The instance attribute holding the part.
        step: The part's coroutine step (unbound), taking the store calls first.
    """

    def __init__(self, part: str,
                 step: Callable[Concatenate[Part, StoreCalls, P], Coroutine[Any, Any, T]]) -> None:
        self.part = part
        self.step = step
        self.name = step.__name__
        self.__doc__ = step.__doc__

    def __call__(self, instance: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Called on the class (``Session.rename(session, title)``), as a plain method would be."""
        return finish_now(self.step(getattr(instance, self.part), on_the_spot, *args, **kwargs))

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> AtOnce[Part, P, T]: ...

    @overload
    def __get__(self, instance: object, owner: type) -> Callable[P, T]: ...

    def __get__(self, instance: object | None, owner: type) -> Any:
        if instance is None:
            return self
        part, step = getattr(instance, self.part), self.step

        def at_once(*args: P.args, **kwargs: P.kwargs) -> T:
            return finish_now(step(part, on_the_spot, *args, **kwargs))

        at_once.__name__ = at_once.__qualname__ = self.name
        at_once.__doc__ = self.__doc__
        instance.__dict__[self.name] = at_once
        return at_once
