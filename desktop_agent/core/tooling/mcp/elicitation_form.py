"""An elicitation's ``requestedSchema`` as form fields, and the answer checked against it.

MCP allows a flat object of primitive fields: strings (with length limits and
the formats email, uri, date, date-time), numbers and integers (with a
minimum and maximum), booleans, and enums (one choice, or several within
``minItems``/``maxItems``; plain values, or values with titles through
``oneOf``/``anyOf``/``enumNames``). Anything else (a nested object, an array
of free values) cannot be shown as a form: :func:`form_fields` raises
:class:`UnsupportedForm` naming the field, and the request is refused with
that sentence rather than shown half.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

FieldKind = Literal["string", "number", "integer", "boolean", "choice", "choices"]

_FORMATS = ("email", "uri", "date", "date-time")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")


class UnsupportedForm(ValueError):
    """The schema has a field a form cannot show; the message names it and why."""


@dataclass(frozen=True, slots=True)
class FormField:
    """One field of an elicitation form.

    Attributes:
        name: The property name (the key of the answer).
        kind: ``string``, ``number``, ``integer``, ``boolean``, ``choice`` (one
            of :attr:`options`) or ``choices`` (several of them).
        title: The label to show (the name when the schema gives none).
        description: Help text, if any.
        required: Whether an accepted answer must have it.
        default: The schema's default, if any.
        minimum: Smallest number allowed, if any.
        maximum: Largest number allowed, if any.
        min_length: Shortest string allowed, if any.
        max_length: Longest string allowed, if any.
        format: ``email``, ``uri``, ``date`` or ``date-time`` for a string, if any.
        options: ``(value, label)`` pairs of a ``choice``/``choices`` field.
        min_items: Fewest choices of a ``choices`` field, if any.
        max_items: Most choices of a ``choices`` field, if any.
    """

    name: str
    kind: FieldKind
    title: str
    description: str | None = None
    required: bool = False
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    format: str | None = None
    options: tuple[tuple[str, str], ...] = ()
    min_items: int | None = None
    max_items: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The field as JSON (REST events and routes)."""
        return {"name": self.name, "kind": self.kind, "title": self.title,
                "description": self.description, "required": self.required,
                "default": self.default, "minimum": self.minimum, "maximum": self.maximum,
                "min_length": self.min_length, "max_length": self.max_length,
                "format": self.format, "options": [list(o) for o in self.options],
                "min_items": self.min_items, "max_items": self.max_items}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _titled(items: Any) -> tuple[tuple[str, str], ...] | None:
    """``[{"const": v, "title": t}, ...]`` as pairs, or None when it is not that shape."""
    if not isinstance(items, list) or not items:
        return None
    pairs: list[tuple[str, str]] = []
    for item in items:
        if not isinstance(item, Mapping) or not isinstance(item.get("const"), str):
            return None
        pairs.append((item["const"], str(item.get("title") or item["const"])))
    return tuple(pairs)


def _plain(values: Any, names: Any = None) -> tuple[tuple[str, str], ...] | None:
    if not isinstance(values, list) or not values or \
            not all(isinstance(v, str) for v in values):
        return None
    labels = names if isinstance(names, list) and len(names) == len(values) else values
    return tuple((v, str(label)) for v, label in zip(values, labels, strict=True))


def _field(name: str, spec: Any, required: bool) -> FormField:
    if not isinstance(spec, Mapping):
        raise UnsupportedForm(f"the field {name!r} has no schema a form can show")
    kind = spec.get("type")
    common: dict[str, Any] = {"title": str(spec.get("title") or name),
                              "description": spec.get("description") or None,
                              "required": required, "default": spec.get("default")}
    if kind == "string":
        options = _titled(spec.get("oneOf")) or _plain(spec.get("enum"), spec.get("enumNames"))
        if options is not None:
            return FormField(name, "choice", options=options, **common)
        fmt = spec.get("format")
        if fmt is not None and fmt not in _FORMATS:
            raise UnsupportedForm(f"the field {name!r} has the string format {fmt!r}, which "
                                  f"a form cannot check (it knows {', '.join(_FORMATS)})")
        return FormField(name, "string", min_length=_count(spec.get("minLength")),
                         max_length=_count(spec.get("maxLength")), format=fmt, **common)
    if kind in ("number", "integer"):
        return FormField(name, kind, minimum=_number(spec.get("minimum")),
                         maximum=_number(spec.get("maximum")), **common)
    if kind == "boolean":
        return FormField(name, "boolean", **common)
    if kind == "array":
        items = spec.get("items")
        options = None
        if isinstance(items, Mapping):
            options = _titled(items.get("anyOf")) or _titled(items.get("oneOf")) or \
                _plain(items.get("enum"))
        if options is None:
            raise UnsupportedForm(f"the field {name!r} is a list of free values; a form can "
                                  "only offer a list of fixed choices")
        return FormField(name, "choices", options=options,
                         min_items=_count(spec.get("minItems")),
                         max_items=_count(spec.get("maxItems")), **common)
    raise UnsupportedForm(f"the field {name!r} has the type {kind!r}; a form can show only "
                          "strings, numbers, integers, booleans and choices")


def form_fields(schema: Any) -> tuple[FormField, ...]:
    """The fields of a ``requestedSchema``, in its order.

    Raises:
        UnsupportedForm: The schema is not a flat object of primitive fields.
    """
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        raise UnsupportedForm("the requested schema is not an object of fields")
    properties = schema.get("properties") or {}
    if not isinstance(properties, Mapping):
        raise UnsupportedForm("the requested schema's properties are not a mapping")
    required = schema.get("required") or []
    required = set(required) if isinstance(required, list) else set()
    return tuple(_field(str(name), spec, name in required) for name, spec in properties.items())


def _check_string(field: FormField, value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{field.title} must be text")
    if field.min_length is not None and len(value) < field.min_length:
        raise ValueError(f"{field.title} must be at least {field.min_length} characters long")
    if field.max_length is not None and len(value) > field.max_length:
        raise ValueError(f"{field.title} must be at most {field.max_length} characters long")
    checks = {"email": lambda v: bool(_EMAIL.match(v)), "uri": lambda v: bool(_URI.match(v)),
              "date": _is_date, "date-time": _is_datetime}
    if field.format in checks and not checks[field.format](value):
        raise ValueError(f"{field.title} must be a valid {field.format}")
    return value


def _is_date(value: str) -> bool:
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _is_datetime(value: str) -> bool:
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _check_number(field: FormField, value: Any) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{field.title} must be a number")
    number: float | int = value
    if field.kind == "integer":
        if float(number) != int(number):
            raise ValueError(f"{field.title} must be a whole number")
        number = int(number)
    if field.minimum is not None and number < field.minimum:
        raise ValueError(f"{field.title} must be at least {field.minimum:g}")
    if field.maximum is not None and number > field.maximum:
        raise ValueError(f"{field.title} must be at most {field.maximum:g}")
    return number


def _check_choices(field: FormField, value: Any) -> list[str]:
    allowed = {v for v, _ in field.options}
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{field.title} must be a list of choices")
    if any(v not in allowed for v in value):
        raise ValueError(f"{field.title} offers only {', '.join(sorted(allowed))}")
    if field.min_items is not None and len(value) < field.min_items:
        raise ValueError(f"choose at least {field.min_items} for {field.title}")
    if field.max_items is not None and len(value) > field.max_items:
        raise ValueError(f"choose at most {field.max_items} for {field.title}")
    return list(value)


def check_answer(fields: tuple[FormField, ...], content: Mapping[str, Any]) -> dict[str, Any]:
    """The accepted values checked against the form: the answer to send.

    Raises:
        ValueError: A value breaks its field's limits, a required one is missing,
            or a value names no field; the message is a sentence for the person.
    """
    by_name = {f.name: f for f in fields}
    unknown = [k for k in content if k not in by_name]
    if unknown:
        raise ValueError(f"the form has no field {unknown[0]!r}")
    answer: dict[str, Any] = {}
    for field in fields:
        value = content.get(field.name)
        if value is None or value == "":
            if field.required:
                raise ValueError(f"{field.title} is required")
            continue
        if field.kind == "string":
            answer[field.name] = _check_string(field, value)
        elif field.kind in ("number", "integer"):
            answer[field.name] = _check_number(field, value)
        elif field.kind == "boolean":
            if not isinstance(value, bool):
                raise ValueError(f"{field.title} must be yes or no")
            answer[field.name] = value
        elif field.kind == "choice":
            if value not in {v for v, _ in field.options}:
                raise ValueError(f"{field.title} must be one of the choices offered")
            answer[field.name] = value
        else:
            answer[field.name] = _check_choices(field, value)
    return answer
