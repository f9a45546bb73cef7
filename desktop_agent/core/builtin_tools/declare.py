"""A typed way to declare a built-in tool from a documented function."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..tools import Tool, tool

#: ``Tool.source`` of every built-in tool.
BUILTIN_SOURCE = "builtin"


def builtin_tool(
    *, read_only: bool = False, timeout: float | None = None
) -> Callable[[Callable[..., Any]], Tool]:
    """Decorate a function as a built-in :class:`Tool` named after the function.

    The schema and description come from the type hints and Google docstring
    (as with :func:`~desktop_agent.core.tools.tool`); this wrapper only adds the
    static type mypy needs and marks the tool's source as ``builtin``.
    """

    def wrap(func: Callable[..., Any]) -> Tool:
        made = tool(func.__name__, read_only=read_only, timeout=timeout)(func)
        if not isinstance(made, Tool):  # pragma: no cover - tool() always builds one
            raise TypeError("tool() did not return a Tool")
        made.source = BUILTIN_SOURCE
        return made

    return wrap
