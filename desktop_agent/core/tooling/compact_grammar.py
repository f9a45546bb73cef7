"""A constrained reply's JSON schema as a GBNF grammar that allows no whitespace.

llama.cpp compiles ``response_format`` schemas itself, but its grammar lets a
model put a newline and up to 20 spaces between any two JSON tokens, and a
small model under it spends tokens (and time) indenting. llama.cpp also takes
a GBNF ``grammar`` field, so for llama.cpp the same schema is sent as a
grammar of compact JSON: the same replies, without the whitespace.

Covers what :func:`~.constrained_calls.reply_schema` and tool schemas use:
``const``, ``enum``, ``anyOf``/``oneOf``, type lists, objects with
``properties`` and ``required`` (properties in the schema's order, the
optional ones each optional), arrays with ``items``, ``minItems`` and
``maxItems``, strings with ``minLength``/``maxLength``, integers, numbers,
booleans and null; anything else allows any JSON value there. A schema this
cannot express faithfully (``allOf``, ``$ref``) gives None, and the request
uses ``response_format`` as before.
"""

from __future__ import annotations

import json
from typing import Any

_BASE = r'''
char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
string ::= "\"" char* "\""
integer ::= "-"? ([0-9] | [1-9] [0-9]{0,15})
number ::= integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,16})?
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
object ::= "{" (string ":" value ("," string ":" value)*)? "}"
array ::= "[" (value ("," value)*)? "]"
'''.strip()


class _Unsupported(Exception):
    """The schema uses something this grammar cannot express faithfully."""


def _literal(value: Any) -> str:
    """A GBNF literal matching ``value`` written as compact JSON."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Builder:
    def __init__(self) -> None:
        self.rules: list[str] = []

    def rule(self, body: str) -> str:
        name = f"r{len(self.rules)}"
        self.rules.append(f"{name} ::= {body}")
        return name

    def of(self, schema: Any) -> str:
        if schema is True or schema == {}:
            return "value"
        if not isinstance(schema, dict):
            raise _Unsupported(repr(schema))
        if any(k in schema for k in ("allOf", "$ref", "not", "if")):
            raise _Unsupported("allOf/$ref/not/if")
        if "const" in schema:
            return self.rule(_literal(schema["const"]))
        if "enum" in schema:
            return self.rule(" | ".join(_literal(v) for v in schema["enum"]))
        for combiner in ("anyOf", "oneOf"):
            if combiner in schema:
                return self.rule(" | ".join(self.of(part) for part in schema[combiner]))
        kind = schema.get("type")
        if isinstance(kind, list):
            return self.rule(" | ".join(self.of({**schema, "type": k}) for k in kind))
        if kind == "object":
            return self._object(schema)
        if kind == "array":
            return self._array(schema)
        if kind == "string":
            return self._string(schema)
        if kind in ("integer", "number", "boolean", "null"):
            return str(kind)
        if kind is None:
            return "value"
        raise _Unsupported(f"type {kind!r}")

    def _object(self, schema: dict[str, Any]) -> str:
        properties = schema.get("properties")
        if not isinstance(properties, dict) or not properties:
            return "object"
        required = set(schema.get("required") or [])
        pairs = [(name in required, self.rule(f"{_literal(name)} \":\" {self.of(sub)}"))
                 for name, sub in properties.items()]
        needed = [rule for is_required, rule in pairs if is_required]
        optional = [rule for is_required, rule in pairs if not is_required]
        if needed:
            body = " \",\" ".join(needed) + "".join(f' ("," {r})?' for r in optional)
            return self.rule(f'"{{" {body} "}}"')
        if not optional:
            return self.rule('"{" "}"')
        # none required: whichever optional property comes first takes no comma
        starts = [" ".join([optional[i], *(f'("," {r})?' for r in optional[i + 1:])])
                  for i in range(len(optional))]
        return self.rule('"{" (' + " | ".join(starts) + ')? "}"')

    def _array(self, schema: dict[str, Any]) -> str:
        item = self.of(schema.get("items", True))
        low = int(schema.get("minItems") or 0)
        high = schema.get("maxItems")
        if high is not None and int(high) == 0:
            return self.rule('"[" "]"')
        first_more = max(low - 1, 0)
        more = (f"{{{first_more},{int(high) - 1}}}" if high is not None
                else f"{{{first_more},}}" if first_more else "*")
        body = f'{item} ("," {item}){more}'
        return self.rule(f'"[" {body} "]"' if low else f'"[" ({body})? "]"')

    def _string(self, schema: dict[str, Any]) -> str:
        low = schema.get("minLength")
        high = schema.get("maxLength")
        if low is None and high is None:
            return "string"
        low_n = int(low or 0)
        span = f"{{{low_n},{int(high)}}}" if high is not None else f"{{{low_n},}}"
        return self.rule(f'"\\"" char{span} "\\""')


def compact_grammar(schema: dict[str, Any]) -> str | None:
    """The GBNF grammar of ``schema`` as compact JSON, or None when it cannot be expressed."""
    builder = _Builder()
    try:
        top = builder.of(schema)
    except (_Unsupported, TypeError, ValueError):
        return None
    return "\n".join([f"root ::= {top}", *builder.rules, _BASE])
