"""Tool calls that a model wrote as text instead of native ``tool_calls``.

Many GGUF chat templates make a model write its call into the answer, and a
server whose parser misses it passes the markup through as plain text. This
module recognises the common forms while the text streams and turns them into
calls, removing the markup from the visible text:

* Hermes/Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
* Mistral v0.3/Nemo: ``[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]``, and
  Mistral Small 3.x/Devstral/Magistral (tokenizer v11+):
  ``[TOOL_CALLS]name[ARGS]{...}`` (``[CALL_ID]id`` before ``[ARGS]`` in some
  versions, ``[ARGS]`` missing when a server drops special tokens), one
  ``[TOOL_CALLS]`` per call
* Llama 3.x: ``<|python_tag|>{"name": ..., "parameters": {...}}`` and a bare
  ``{"name": ..., "parameters": {...}}`` answer
* ``<function=name>{...}</function>``
* Python-style ``[get_weather(city="Paris"), ...]`` (what BFCL-trained models
  write), read with :mod:`ast` (literals only, never evaluated)
* a bare JSON list of calls at the reply's start, ``[{"name": ..., "arguments":
  {...}}]``: Mistral's form when the server drops the ``[TOOL_CALLS]`` control
  token from the text

Only a possible markup prefix is held back, so ordinary text streams on at
once. Broken JSON is repaired where the fix is unambiguous (trailing commas,
single-quoted strings, braces left open at the end of the stream); anything
else becomes a :class:`ToolUseError` the model can be told about.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

_HERMES, _MISTRAL, _PYTHON_TAG, _FUNCTION, _BARE = (
    "<tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "<function=", "{")
_PYTHON_TAG_ENDS = ("<|eom_id|>", "<|eot_id|>")
# The end-of-message tokens are dropped wherever they appear: they are never text.
_OPENERS = (_HERMES, _MISTRAL, _PYTHON_TAG, _FUNCTION, *_PYTHON_TAG_ENDS)
_CLOSERS = {_HERMES: "</tool_call>", _FUNCTION: "</function>"}
_PYTHON_LIST = "[f("  # a kind of its own: held to the end of the reply, then read by ast
_BARE_LIST = "[{"  # a kind of its own: a JSON list of calls at the reply's start
_BARE_LIST_START = re.compile(r"\[\s*\{")
# Mistral v11+: ``name`` then an optional ``[CALL_ID]id`` then ``[ARGS]`` before the JSON.
_MISTRAL_NAMED = re.compile(
    r"\s*(?P<name>[A-Za-z_][\w.\-]*)\s*(?:\[CALL_ID\]\s*[\w\-]*\s*)?(?:\[ARGS\])?\s*")
_MISTRAL_NAME_WAIT = 200  # characters a name (and its call id) may take before "{" comes
_PYTHON_CALL_START = re.compile(r"\[\s*[A-Za-z_][\w.]*\s*\(")
_PYTHON_CALL_MAYBE = re.compile(r"\[\s*(?:[A-Za-z_][\w.]*\s*)?$")


@dataclass(slots=True)
class TextCall:
    """A call found in text: a name and arguments, or why it could not be read."""

    name: str | None
    arguments: dict[str, Any] | None
    raw: str
    error: str | None = None


@dataclass
class TextToolCallParser:
    """Splits streamed text into visible text and calls written as text.

    ``feed(piece)`` returns the text that is safe to show now; ``finish()``
    returns what was held back when the stream ends. Calls found so far are
    in ``calls``.
    """

    calls: list[TextCall] = field(default_factory=list)
    _buffer: str = ""
    _kind: str | None = None  # the opener of the markup we are inside
    _shown_any: bool = False

    def feed(self, piece: str) -> str:
        """Take a text piece; return the part that can be shown now."""
        if self._shown_any and self._kind is None and not self._buffer \
                and _OPENER_FIRST.search(piece) is None:
            return piece  # prose past the reply's start, nothing held: no markup can begin
        self._buffer += piece
        shown: list[str] = []
        while self._step(shown, final=False):
            pass
        text = "".join(shown)
        if text.strip():
            self._shown_any = True
        return text

    def finish(self) -> str:
        """End of stream: settle open markup; return text still held back."""
        shown: list[str] = []
        while self._step(shown, final=True):
            pass
        if self._kind is not None:
            body, self._buffer, kind = self._buffer, "", self._kind
            self._kind = None
            if kind in (_BARE, _BARE_LIST):
                shown.append(body)
            else:
                self._close(kind, body, final=True)
        elif self._buffer:
            shown.append(self._buffer)
            self._buffer = ""
        return "".join(shown)

    # -- the state machine ---------------------------------------------------------
    def _step(self, shown: list[str], final: bool) -> bool:
        """One move; True when another may follow."""
        buffer = self._buffer
        if self._kind is None:
            return self._outside(shown, final)
        kind = self._kind
        if kind == _PYTHON_LIST:
            if final:
                self._settle_python_list(shown)
            return False
        closer = _CLOSERS.get(kind)
        if closer is not None:
            end = buffer.find(closer)
            if end < 0:
                return False
            self._kind, self._buffer = None, buffer[end + len(closer):]
            self._close(kind, buffer[:end], final)
            return True
        if kind == _PYTHON_TAG:
            for tag in _PYTHON_TAG_ENDS:
                end = buffer.find(tag)
                if end >= 0:
                    self._kind, self._buffer = None, buffer[end + len(tag):]
                    self._close(kind, buffer[:end], final)
                    return True
        if kind == _MISTRAL and not buffer.lstrip().startswith(("[", "{")):
            return self._mistral_named(final)
        # Mistral, python tag, bare JSON and bare lists end where their JSON value ends.
        json_end = _json_end(buffer)
        if json_end is None:
            return False
        body, rest = buffer[:json_end], buffer[json_end:]
        if kind in (_BARE, _BARE_LIST) and not _looks_like_calls(body, kind):
            self._kind, self._buffer = None, rest
            self._shown_any = True
            shown.append(body)
            return True
        self._kind, self._buffer = None, rest
        self._close(kind, body, final)
        return True

    def _outside(self, shown: list[str], final: bool) -> bool:
        """Outside markup: show text up to the next opener (or a call at the start)."""
        buffer = self._buffer
        at_start = not self._shown_any and not "".join(shown).strip()
        if at_start:
            started = self._start(shown, final)
            if started is not None:
                return started
        found = [(buffer.find(o), o) for o in _OPENERS if o in buffer]
        if found:
            at, opener = min(found)
            shown.append(buffer[:at])
            self._buffer = buffer[at + len(opener):]
            if opener not in _PYTHON_TAG_ENDS:
                self._kind = opener
            return True
        if at_start and not buffer.strip():
            return False  # only blank so far: a bare JSON call may still start
        keep = 0 if final else _held_suffix(buffer)
        shown.append(buffer[: len(buffer) - keep])
        self._buffer = buffer[len(buffer) - keep:]
        return False

    def _start(self, shown: list[str], final: bool) -> bool | None:
        """At the reply's start: a bare JSON or Python-style call (None: neither)."""
        buffer = self._buffer
        stripped = buffer.lstrip()
        kind = (_PYTHON_LIST if _PYTHON_CALL_START.match(stripped)
                else _BARE_LIST if _BARE_LIST_START.match(stripped)
                else _BARE if stripped.startswith("{") else None)
        if kind is not None:
            self._kind = kind
            self._buffer = stripped
            shown.append(buffer[: len(buffer) - len(stripped)])
            return True
        if not final and stripped and _PYTHON_CALL_MAYBE.match(stripped):
            return False  # "[get_wea": may still become a Python-style call
        return None

    def _mistral_named(self, final: bool) -> bool:
        """Inside ``[TOOL_CALLS]name[ARGS]{...}``: wait for the JSON, then close the call."""
        buffer = self._buffer
        brace = buffer.find("{")
        if brace < 0:
            if not final and len(buffer) < _MISTRAL_NAME_WAIT:
                return False
            head = _MISTRAL_NAMED.fullmatch(buffer)
            self._kind, self._buffer = None, ""
            if head is not None and buffer.rstrip().endswith("[ARGS]"):
                self.calls.append(TextCall(head["name"], {}, buffer))  # a call with no arguments
            else:
                self.calls.append(TextCall(None, None, buffer, "The [TOOL_CALLS] call has no "
                                           "tool name followed by JSON arguments."))
            return True
        head = _MISTRAL_NAMED.fullmatch(buffer[:brace])
        if head is None:
            self._kind, self._buffer = None, buffer[brace:]
            self.calls.append(TextCall(None, None, buffer[:brace], "The [TOOL_CALLS] call has "
                                       "no tool name before its arguments."))
            return True
        end = _json_end(buffer[brace:])
        if end is None:
            if not final:
                return False
            end = len(buffer) - brace
        arguments = buffer[brace:brace + end]
        self._kind, self._buffer = None, buffer[brace + end:]
        self._close(_FUNCTION, f"{head['name']}>{arguments}", final)
        return True

    def _settle_python_list(self, shown: list[str]) -> None:
        """The reply ended inside ``[f(...)``: calls, or plain text after all."""
        buffer, self._kind, self._buffer = self._buffer, None, ""
        found = python_calls(buffer)
        if found is None:
            shown.append(buffer)
            self._shown_any = True
            return
        calls, rest = found
        self.calls += calls
        shown.append(rest)

    def _close(self, kind: str, body: str, final: bool) -> None:
        if kind == _FUNCTION:
            name, sep, arguments = body.partition(">")
            if not sep:
                self.calls.append(TextCall(None, None, body, "The <function=...> call has no '>'."))
                return
            value, error = parse_arguments(arguments)
            if error or not isinstance(value, dict):
                self.calls.append(TextCall(name.strip(), None, arguments,
                                           error or "The arguments must be a JSON object."))
            else:
                self.calls.append(TextCall(name.strip(), value, arguments))
            return
        value, error = parse_arguments(body)
        if error is not None:
            self.calls.append(TextCall(name_hint(body), None, body, error))
            return
        items = value if isinstance(value, list) else [value]
        for item in items:
            self.calls.append(call_from(item, body))


def python_calls(text: str) -> tuple[list[TextCall], str] | None:
    """Calls written as a Python list, ``[f(a=1), g(b="x")]``, and the text after it.

    Read with :mod:`ast`: only keyword arguments with literal values count
    (``ast.literal_eval`` of each; nothing is evaluated). None when the text
    does not start with such a list.
    """
    for end in (i + 1 for i, char in enumerate(text) if char == "]"):
        try:
            tree = ast.parse(text[:end].strip(), mode="eval")
        except SyntaxError:
            continue
        if not isinstance(tree.body, ast.List) or not tree.body.elts:
            return None
        calls = [_python_call(node, text[:end]) for node in tree.body.elts]
        return (None if any(c is None for c in calls) else
                ([c for c in calls if c is not None], text[end:]))
    return None


def _python_call(node: ast.expr, raw: str) -> TextCall | None:
    if not isinstance(node, ast.Call):
        return None
    name = _dotted(node.func)
    if name is None:
        return None
    if node.args or any(k.arg is None for k in node.keywords):
        return TextCall(name, None, raw, "Write the arguments as name=value pairs.")
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        try:
            arguments[str(keyword.arg)] = ast.literal_eval(keyword.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return TextCall(name, None, raw,
                            f"The argument {keyword.arg!r} is not a literal value.")
    return TextCall(name, arguments, raw)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def call_from(item: Any, raw: str) -> TextCall:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        return TextCall(None, None, raw, "The call written as text has no tool name.")
    arguments = item.get("arguments", item.get("parameters", {}))
    if isinstance(arguments, str):
        arguments, error = parse_arguments(arguments) if arguments.strip() else ({}, None)
        if error:
            return TextCall(item["name"], None, raw, error)
    if not isinstance(arguments, dict):
        return TextCall(item["name"], None, raw,
                        f"The arguments must be a JSON object, got {type(arguments).__name__}.")
    return TextCall(item["name"], arguments, raw)


def _looks_like_calls(body: str, kind: str) -> bool:
    """Whether a bare JSON value is a call (``{...}``) or a list of calls (``[{...}]``)."""
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        return False
    items = value if kind == _BARE_LIST and isinstance(value, list) and value else [value]
    if kind == _BARE_LIST and not isinstance(value, list):
        return False
    return all(isinstance(item, dict) and isinstance(item.get("name"), str)
               and ("parameters" in item or "arguments" in item) and len(item) <= 3
               for item in items)


def name_hint(body: str) -> str | None:
    """The ``"name"`` a call's JSON gives, read even when the JSON is cut or broken."""
    marker = body.find('"name"')
    if marker < 0:
        return None
    rest = body[marker + 6:].lstrip(" :")
    if rest.startswith('"') and '"' in rest[1:]:
        return rest[1: rest.index('"', 1)]
    return None


_OPENER_FIRSTS = "".join(sorted({opener[0] for opener in _OPENERS}))
_OPENER_FIRST = re.compile(f"[{re.escape(_OPENER_FIRSTS)}]")
_LONGEST_HELD = max(len(opener) for opener in _OPENERS) - 1


def _held_suffix(text: str) -> int:
    """Length of the longest suffix of ``text`` that could begin an opener.

    Runs on every streamed text piece, so the usual case (no ``<`` or ``[``
    near the end) returns after two substring scans of a dozen characters.
    """
    tail = text[-_LONGEST_HELD:]
    if not any(first in tail for first in _OPENER_FIRSTS):
        return 0
    for start, char in enumerate(tail):  # earliest start = longest suffix
        if char in _OPENER_FIRSTS:
            candidate = tail[start:]
            if any(len(candidate) < len(opener) and opener.startswith(candidate)
                   for opener in _OPENERS):
                return len(candidate)
    return 0


def _json_end(text: str) -> int | None:
    """Index just after the first complete JSON object/array in ``text``, if any."""
    start = len(text) - len(text.lstrip())
    if start >= len(text) or text[start] not in "[{":
        return None if start >= len(text) else start  # not JSON: nothing to wait for
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def parse_arguments(text: str) -> tuple[Any, str | None]:
    """Parse JSON, repairing it where the fix is unambiguous.

    Returns:
        The value and None, or None and a sentence saying why it is unreadable.
    """
    text = text.strip()
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        first_error = exc.msg
    repaired = repair_json(text)
    if repaired is not None:
        try:
            return json.loads(repaired), None
        except json.JSONDecodeError:
            pass
    return None, f"The arguments are not valid JSON ({first_error}) and could not be repaired."


def repair_json(text: str) -> str | None:
    """Fix trailing commas, single-quoted strings and unclosed brackets.

    Returns None when the text has an open string at its end or brackets
    that do not match, where any fix would be a guess.
    """
    out: list[str] = []
    stack: list[str] = []
    quote: str | None = None
    escaped = False
    for ch in text:
        if quote is not None:
            if escaped:
                escaped = False
                out.append("\\" + ch if quote == "'" and ch != "'" else ch)
                continue
            if ch == "\\":
                escaped = True
                if quote == "'":
                    continue  # re-added with the next character
                out.append(ch)
                continue
            if ch == quote:
                quote = None
                out.append('"')
                continue
            out.append('\\"' if quote == "'" and ch == '"' else ch)
            continue
        if ch in "\"'":
            quote = ch
            out.append('"')
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
            out.append(ch)
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
            _drop_trailing_comma(out)
            out.append(ch)
        else:
            out.append(ch)
    if quote is not None:
        return None
    while stack:
        _drop_trailing_comma(out)
        out.append(stack.pop())
    return "".join(out)


def _drop_trailing_comma(out: list[str]) -> None:
    i = len(out) - 1
    while i >= 0 and out[i].isspace():
        i -= 1
    if i >= 0 and out[i] == ",":
        del out[i]
