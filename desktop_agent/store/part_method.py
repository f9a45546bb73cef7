"""A :class:`~desktop_agent.store.store.Store` method that is one of its parts' methods.

The store's public API is its parts' methods (see the store module for why
callers do not reach the parts). Written out by hand, each would repeat its
part's signature and docstring in ``Store`` and drift from it; declared as
``add_message = PartMethod("_writes", MessageWrites.add_message)``, the
signature lives once, in the part, and mypy, ``inspect.signature`` and
``help()`` all read it from there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

P = ParamSpec("P")
R = TypeVar("R")
Part = TypeVar("Part")


class PartMethod(Generic[Part, P, R]):
    """Reads as the bound method ``owner.<part>.<method>`` on each instance.

    The bound method is kept in the instance's ``__dict__`` on first use (this
    is a non-data descriptor, like :func:`functools.cached_property`), so
    later calls cost one attribute lookup, not a forwarding call. Only for
    parts that are set once in ``__init__`` and never replaced.

    Attributes:
        part: The instance attribute holding the part.
        method: The part's method (unbound), whose signature callers see.
    """

    def __init__(self, part: str, method: Callable[Concatenate[Part, P], R]) -> None:
        self.part = part
        self.method = method
        self.name = method.__name__
        self.__doc__ = method.__doc__
        self.__wrapped__ = method  # inspect.signature and help() follow it

    def __call__(self, instance: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Called on the class (``Store.add_message(store, ...)``), as a plain method would be."""
        result: R = self.method(getattr(instance, self.part), *args, **kwargs)
        return result

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> PartMethod[Part, P, R]: ...

    @overload
    def __get__(self, instance: object, owner: type) -> Callable[P, R]: ...

    def __get__(self, instance: object | None, owner: type) -> Any:
        if instance is None:
            return self
        part = getattr(instance, self.part)
        bound = self.method.__get__(part, type(part))
        instance.__dict__[self.name] = bound
        return bound
