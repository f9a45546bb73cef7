"""A typed way to declare a built-in tool from a documented function."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from desktop_agent.core.tooling.tools import Tool, tool

#: ``Tool.source`` of every built-in tool.
BUILTIN_SOURCE = "builtin"

_MADE: dict[tuple[Any, ...], tuple[Any, Tool]] = {}
"""Built-in tools already declared, without their handler: by what makes their schema.

The built-in tools are closures made for every turn of every conversation;
deriving, compacting and checking the same schemas each time was a third of a
millisecond of each turn's start, on the event loop. Keyed like
:func:`~desktop_agent.core.tooling.tools.schema_from_function` (code, docstring,
defaults) plus the decorator's arguments; checked against the module namespace."""


def builtin_tool(
    *, read_only: bool = False, timeout: float | None = None, brief: str | None = None,
    params: Mapping[str, str] | None = None, hide: tuple[str, ...] = (),
    edits_files: bool = False,
) -> Callable[[Callable[..., Any]], Tool]:
    """Decorate a function as a built-in :class:`Tool` named after the function.

    The schema comes from the type hints and Google docstring (as with
    :func:`~desktop_agent.core.tooling.tools.tool`). Every request carries these
    schemas, and on a 2,048-token model each token counts: with ``brief``,
    the model sees that short description instead of the docstring's, and
    only the parameter descriptions in ``params`` (the others' names say
    enough); defaults are left out of the schema (they apply all the same),
    and so are the rarely needed parameters in ``hide`` (a call may still pass them).
    The docstring stays the developer's documentation.
    """

    def wrap(func: Callable[..., Any]) -> Tool:
        key = _made_key(func, (read_only, timeout, brief, tuple(sorted((params or {}).items())),
                               hide, edits_files))
        known = _MADE.get(key) if key is not None else None
        if known is not None and known[0] is func.__globals__:
            return known[1].with_handler(func)
        made = tool(func.__name__, read_only=read_only, timeout=timeout,
                    edits_files=edits_files)(func)
        if not isinstance(made, Tool):  # pragma: no cover - tool() always builds one
            raise TypeError("tool() did not return a Tool")
        made.source = BUILTIN_SOURCE
        if brief is not None:
            made.description = brief
            _compact_schema(made.input_schema, params or {}, hide)
        if key is not None:
            if len(_MADE) >= 256:  # only the built-in tools' few call sites come here
                _MADE.clear()
            _MADE[key] = (func.__globals__, made.with_handler(_unbound))
        return made

    return wrap


def _made_key(func: Callable[..., Any], arguments: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """What determines a declared tool but its handler (None: cannot be told apart)."""
    code = getattr(func, "__code__", None)
    if code is None or getattr(func, "__globals__", None) is None:
        return None
    key = (code, func.__doc__, repr(getattr(func, "__defaults__", None)),
           repr(getattr(func, "__kwdefaults__", None)), arguments)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _unbound(*_args: Any, **_kwargs: Any) -> Any:
    """The handler of a kept declaration: never called (each tool gets its own)."""
    raise RuntimeError("a kept built-in tool declaration was called")


def _compact_schema(schema: dict[str, Any], params: Mapping[str, str],
                    hide: tuple[str, ...]) -> None:
    """Drop what the model does not need from a schema (in place; validation is unchanged)."""
    properties = schema.get("properties", {})
    for name in hide:
        properties.pop(name, None)
    for name, prop in properties.items():
        prop.pop("default", None)
        if name in params:
            prop["description"] = params[name]
        else:
            prop.pop("description", None)
    if not schema.get("required"):
        schema.pop("required", None)
