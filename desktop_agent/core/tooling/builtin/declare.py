"""A typed way to declare a built-in tool from a documented function."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from desktop_agent.core.tooling.tools import Tool, tool

#: ``Tool.source`` of every built-in tool.
BUILTIN_SOURCE = "builtin"


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
        made = tool(func.__name__, read_only=read_only, timeout=timeout,
                    edits_files=edits_files)(func)
        if not isinstance(made, Tool):  # pragma: no cover - tool() always builds one
            raise TypeError("tool() did not return a Tool")
        made.source = BUILTIN_SOURCE
        if brief is not None:
            made.description = brief
            _compact_schema(made.input_schema, params or {}, hide)
        return made

    return wrap


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
