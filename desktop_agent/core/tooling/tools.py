"""Tools the model can call: definition, schema conversion and validation.

A :class:`Tool` carries an OpenAI function schema and a handler. Handlers may
be async or plain functions; plain functions run on the bounded tool pool
(:mod:`desktop_agent.core.tooling.pool`, apart from the threads the store and servers use) so that a
slow tool never blocks the event loop that also drives the window.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import re
import types as pytypes
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Union, get_args, get_origin

from desktop_agent.core.errors import ConfigurationError, ToolInputError
from desktop_agent.core.tooling.pool import tool_pool

Handler = Callable[[dict[str, Any]], Any] | Callable[[dict[str, Any]], Awaitable[Any]]

_PY_TO_JSON: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}

_JSON_SCHEMA_KEYS = {"type", "properties", "$schema", "anyOf", "oneOf", "allOf", "$ref"}


def _type_to_schema(py_type: Any) -> dict[str, Any]:
    """Convert a Python annotation to a JSON Schema fragment."""
    if py_type in _PY_TO_JSON:
        return {"type": _PY_TO_JSON[py_type]}
    if isinstance(py_type, str) and py_type in {"string", "integer", "number", "boolean",
                                                "array", "object"}:
        return {"type": py_type}
    origin = get_origin(py_type)
    args = get_args(py_type)
    if origin in (list, tuple, set, frozenset):
        schema: dict[str, Any] = {"type": "array"}
        if args and args[0] is not Ellipsis:
            schema["items"] = _type_to_schema(args[0])
        return schema
    if origin is dict:
        return {"type": "object"}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (Union, pytypes.UnionType):
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) == 1:
            return _type_to_schema(non_none[0])
        return {"anyOf": [_type_to_schema(a) for a in non_none]}
    if py_type is Any or py_type is inspect.Parameter.empty:
        return {}
    raise ConfigurationError(f"cannot convert type {py_type!r} to a JSON Schema")


def _is_optional_annotation(py_type: Any) -> bool:
    return get_origin(py_type) in (Union, pytypes.UnionType) and type(None) in get_args(py_type)


_CHECKED_SCHEMAS: dict[str, Any] = {}
"""Validator classes of schemas already checked against their meta-schema, by JSON text.

Checking a schema walks the whole JSON Schema meta-schema (a few ms each); the
built-in tools are built for every turn and every conversation with the same
seven schemas, so each distinct schema is checked once per process."""


def _checked_validator_class(name: str, schema: dict[str, Any]) -> Any:
    """The validator class for ``schema``, checked once; raises ConfigurationError if invalid."""
    try:
        key = json.dumps(schema, sort_keys=True, default=repr)
    except (TypeError, ValueError):  # not JSON at all: let the check below say why
        key = None
    known = _CHECKED_SCHEMAS.get(key) if key is not None else None
    if known is not None:
        return known
    import jsonschema  # here, not at the top: the window paints before any tool is made

    try:
        validator_cls = jsonschema.validators.validator_for(schema)
        validator_cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ConfigurationError(f"tool {name!r} has an invalid schema: {exc.message}") from exc
    if key is not None:
        if len(_CHECKED_SCHEMAS) >= 4096:  # MCP servers come and go: stay bounded
            _CHECKED_SCHEMAS.clear()
        _CHECKED_SCHEMAS[key] = validator_cls
    return validator_cls


def convert_schema(input_schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Turn a tool's ``input_schema`` shorthand into a JSON Schema object.

    Accepts a full JSON Schema (returned unchanged), or a mapping of parameter
    name to a Python type, a JSON type name, or a dict with ``type`` and
    optionally ``description``, ``default``, ``"required": False`` or
    ``"optional": True``. Parameters are required unless marked optional or
    given a default.
    """
    if not input_schema:
        return {"type": "object", "properties": {}, "required": []}
    if input_schema.get("type") == "object" or (_JSON_SCHEMA_KEYS & {
        k for k in input_schema if k != "type"
    } and "properties" in input_schema):
        return dict(input_schema)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, spec in input_schema.items():
        optional = False
        if isinstance(spec, Mapping):
            prop = dict(spec)
            if "type" in prop and not isinstance(prop["type"], str | list):
                prop.update(_type_to_schema(prop.pop("type")))
            if prop.pop("required", True) is False:
                optional = True
            if prop.pop("optional", False) is True:
                optional = True
            if "default" in prop:
                optional = True
        else:
            prop = _type_to_schema(spec)
            if _is_optional_annotation(spec):
                optional = True
        properties[name] = prop
        if not optional:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}


_ARG_LINE = re.compile(r"^(\s*)(\w+)\s*(?:\([^)]*\))?:\s*(.*)$")


@functools.lru_cache(maxsize=512)
def _docstring_parts(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into a summary and per-argument text.

    Cached: the built-in tools are declared anew for every turn (they close
    over the conversation's folder), with the same few docstrings. Callers
    copy the returned dict before changing it.
    """
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    summary: list[str] = []
    args: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    arg_indent: int | None = None
    for line in lines:
        stripped = line.strip()
        if re.fullmatch(r"(Args|Arguments|Parameters):", stripped):
            section = "args"
            continue
        if re.fullmatch(r"(Returns|Raises|Yields|Examples?|Notes?|Attributes):", stripped):
            section = "other"
            continue
        if section == "summary":
            if not stripped and summary:
                section = "description"
            elif stripped:
                summary.append(stripped)
        elif section == "args" and stripped:
            match = _ARG_LINE.match(line)
            indent = len(line) - len(line.lstrip())
            if match and (arg_indent is None or indent <= arg_indent):
                arg_indent = indent
                current = match.group(2)
                args[current] = match.group(3).strip()
            elif current:
                args[current] = (args[current] + " " + stripped).strip()
    return " ".join(summary), args


_HINTS: dict[Any, tuple[Any, dict[str, Any]]] = {}


def _type_hints(func: Callable[..., Any]) -> dict[str, Any]:
    """``typing.get_type_hints(func)``, evaluated once per code object and module.

    Evaluating string annotations is the slow part of declaring a tool, and a
    closure declared for every turn has the same code (so the same annotations)
    each time.
    """
    code = getattr(func, "__code__", None)
    namespace = getattr(func, "__globals__", None)
    if code is None or namespace is None:
        return typing.get_type_hints(func)
    known = _HINTS.get(code)
    if known is not None and known[0] is namespace:
        return known[1]
    hints = typing.get_type_hints(func)
    if len(_HINTS) >= 4096:
        _HINTS.clear()
    _HINTS[code] = (namespace, hints)
    return hints


_SCHEMAS: dict[tuple[Any, ...], tuple[Any, str, dict[str, Any]]] = {}
"""Schemas derived from functions, by what determines them (see schema_from_function)."""


def schema_from_function(func: Callable[..., Any]) -> tuple[str, dict[str, Any]]:
    """Derive (description, JSON Schema) from a function's hints and docstring.

    The built-in tools are closures made anew for every turn of every
    conversation from the same code; reading their signatures and docstrings
    each time was most of a turn's set-up (about 0.6 of 0.9 ms per turn, timed
    with 50 conversations). So the result is kept per code object, defaults,
    docstring and module namespace (what it depends on), and a copy is returned:
    callers may edit their schema.
    """
    code = getattr(func, "__code__", None)
    namespace = getattr(func, "__globals__", None)
    key = None
    if code is not None and namespace is not None:
        try:
            key = (code, func.__doc__, repr(getattr(func, "__defaults__", None)),
                   repr(getattr(func, "__kwdefaults__", None)))
            hash(key)
        except TypeError:
            key = None
    known = _SCHEMAS.get(key) if key is not None else None
    if known is not None and known[0] is namespace:
        return known[1], _copied(known[2])
    description, schema = _derive_schema(func)
    if key is not None:
        if len(_SCHEMAS) >= 4096:
            _SCHEMAS.clear()
        _SCHEMAS[key] = (namespace, description, _copied(schema))
    return description, schema


def _copied(value: Any) -> Any:
    """A copy of a JSON-like value: new dicts and lists, the same leaves.

    About 3x faster than ``copy.deepcopy`` on a built-in tool's schema.
    """
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


def _derive_schema(func: Callable[..., Any]) -> tuple[str, dict[str, Any]]:
    signature = inspect.signature(func)
    hints = _type_hints(func)
    description, arg_docs = _docstring_parts(func.__doc__ or "")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(name, Any)
        prop = _type_to_schema(annotation)
        if name in arg_docs:
            prop["description"] = arg_docs[name]
        if param.default is not inspect.Parameter.empty:
            prop["default"] = param.default
        elif not _is_optional_annotation(annotation):
            required.append(name)
        properties[name] = prop
    return description, {"type": "object", "properties": properties, "required": required}


def _takes_kwargs(func: Callable[..., Any], schema: Mapping[str, Any]) -> bool:
    """True when ``func`` wants the arguments as keywords rather than one dict.

    The seed style is ``handler(args)``; a function whose single parameter is
    itself one of the schema's properties (``def f(city)``), or that has
    several parameters, is called with keywords.
    """
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return False
    if len(params) != 1:
        return len(params) > 1
    properties = schema.get("properties", {})
    return params[0].name in properties and params[0].name not in {"args", "arguments"}


@dataclass
class Tool:
    """A function the model may call.

    Attributes:
        name: The name the model uses (letters, digits, ``_`` and ``-``).
        description: What the tool does, for the model.
        input_schema: The JSON Schema of the arguments object.
        handler: ``handler(args)`` (sync or async), or a function taking the
            arguments as keywords when ``kwargs_handler`` is true.
        read_only: True when the tool changes nothing; rules may auto-allow it.
        source: Where the tool comes from (``"builtin"``, an MCP server name...).
        timeout: Seconds one execution may take; None uses the agent default.
        unsandboxed: True when the tool runs commands with the account's full
            rights (no OS sandbox here): approvers warn the person, and rules
            and remembered approvals never let it run unasked.
        edits_files: True when the tool only creates or changes files in the
            working folder (the built-in ``write_file`` and ``edit_file``): the
            ``acceptEdits`` permission mode runs it without asking.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[..., Any]
    read_only: bool = False
    source: str | None = None
    timeout: float | None = None
    kwargs_handler: bool = False
    unsandboxed: bool = False
    edits_files: bool = False
    _validator: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name or not all(c.isalnum() or c in "_-" for c in self.name):
            raise ConfigurationError(
                f"tool name {self.name!r} must be non-empty and use only letters, digits, _ or -"
            )
        self.input_schema = convert_schema(self.input_schema)
        # The schema is checked now; the validator is made when a call is first
        # checked (a turn builds every tool it offers, the model calls few).
        self._validator = _checked_validator_class(self.name, self.input_schema)

    def with_handler(self, handler: Callable[..., Any]) -> Tool:
        """This tool calling ``handler`` instead, its schema shared and not checked again.

        The built-in tools are made anew for each turn from the same code (closures
        over the conversation's folder): only the handler differs, so the schema,
        its meta-schema check and its validator are reused. The schema is shared
        with this tool: treat it as read-only (as MCP tools' schemas already are).
        """
        made = copy.copy(self)
        made.handler = handler
        return made

    def to_openai_format(self) -> dict[str, Any]:
        """The tool as an entry of the Chat Completions ``tools`` list."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema,
            },
        }

    def validate(self, args: Any) -> dict[str, Any]:
        """Check arguments against the schema; raise :class:`ToolInputError` if they fail."""
        if not isinstance(args, dict):
            raise ToolInputError(f"arguments for {self.name} must be a JSON object, "
                                 f"got {type(args).__name__}")
        if isinstance(self._validator, type):
            self._validator = self._validator(self.input_schema)
        errors = sorted(self._validator.iter_errors(args), key=lambda e: list(e.path))
        if errors:
            details = "; ".join(
                (f"{'/'.join(str(p) for p in e.path)}: " if e.path else "") + e.message
                for e in errors[:5]
            )
            raise ToolInputError(f"invalid arguments for {self.name}: {details}")
        return args

    async def execute(self, args: dict[str, Any]) -> Any:
        """Validate ``args`` and run the handler, on the tool pool if it is sync."""
        args = self.validate(args)
        handler = self.handler
        if self.kwargs_handler:
            if inspect.iscoroutinefunction(handler):
                return await handler(**args)
            return await tool_pool().run(handler, **args)
        if inspect.iscoroutinefunction(handler):
            return await handler(args)
        result = await tool_pool().run(handler, args)
        if inspect.isawaitable(result):
            return await result
        return result


def tool(
    name: str | Callable[..., Any] | None = None,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
    *,
    read_only: bool = False,
    timeout: float | None = None,
    edits_files: bool = False,
) -> Any:
    """Decorate a function as a :class:`Tool`.

    ``@tool("get_weather", "Weather for a city", {"city": str})`` wraps a
    handler taking one arguments dict. Without a schema
    (``@tool`` or ``@tool("name")``), the schema and description come from the
    function's type hints and Google-style docstring, and the handler is called
    with keyword arguments.
    """

    def wrap(func: Callable[..., Any]) -> Tool:
        tool_name = name if isinstance(name, str) and name else func.__name__
        if input_schema is None:
            derived_description, schema = schema_from_function(func)
            return Tool(
                name=tool_name,
                description=description or derived_description or tool_name,
                input_schema=schema,
                handler=func,
                read_only=read_only,
                timeout=timeout,
                kwargs_handler=True,
                edits_files=edits_files,
            )
        schema = convert_schema(input_schema)
        return Tool(
            name=tool_name,
            description=description or inspect.getdoc(func) or tool_name,
            input_schema=schema,
            handler=func,
            read_only=read_only,
            timeout=timeout,
            kwargs_handler=_takes_kwargs(func, schema),
            edits_files=edits_files,
        )

    if callable(name):
        func, name = name, None
        return wrap(func)
    return wrap


def tool_named(tools: Iterable[Tool], name: str) -> Tool | None:
    """The tool called ``name`` among ``tools``, if there is one."""
    return next((t for t in tools if t.name == name), None)


def tool_result_text(result: Any) -> str:
    """Render a handler's return value as the text sent back to the model."""
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    if isinstance(result, bytes):
        return result.decode("utf-8", errors="replace")
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)


def one_a_name(tools: Iterable[Tool]) -> list[Tool]:
    """``tools`` in their order, each name once (the first tool of a name is offered)."""
    named: dict[str, Tool] = {}
    for each in tools:
        named.setdefault(each.name, each)
    return list(named.values())
