"""Constrained tool calls: the server may only produce a valid call or an answer.

Small local models often write a call with a wrong tool name, a missing
argument or broken JSON. Servers with constrained decoding (llama.cpp, LM
Studio, vLLM, Ollama: OpenAI's ``response_format`` with a JSON schema, which
they compile to a grammar) can rule that out: with
``AgentOptions(constrained_tool_calls=True)`` every reply must be either

    {"answer": "text for the person"}
    {"tool_calls": [{"name": "<one of the tools>", "arguments": {<its schema>}}, ...]}

The answer's text still streams (:class:`ConstrainedReplyParser` decodes the
JSON string as it arrives); calls become the same
:class:`~desktop_agent.core.types.ToolUseBlock` s as native ones, and the
history keeps native ``tool_calls``. A reply that is not JSON after all (a
server that ignores ``response_format``) is read as ordinary text, calls
written as text included; a server that refuses the field is asked again
without it, and remembered (:func:`refused`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from desktop_agent.core.wire.text_tool_calls import (
    TextCall,
    TextToolCallParser,
    call_from,
    parse_arguments,
)

if TYPE_CHECKING:
    from desktop_agent.core.errors import APIError
    from desktop_agent.core.options import AgentOptions

#: Base URLs whose server refused ``response_format``; remembered for the process.
_REFUSED: set[str] = set()

ANSWER_KEY = "answer"
CALLS_KEY = "tool_calls"


def applies(options: AgentOptions) -> bool:
    """Whether requests with these options constrain the reply."""
    return (options.constrained_tool_calls and bool(options.tools)
            and options.output_type is None and options.base_url not in _REFUSED)


def reply_schema(tools: list[Any]) -> dict[str, Any]:
    """The JSON schema of a reply: an answer, or a call of one of these tools.

    One call per reply: measured on SmolLM2-135M under llama.cpp's grammar, a
    small model given an open list repeats the same call until ``max_tokens``.
    """
    calls = [{"type": "object",
              "properties": {"name": {"const": t.name}, "arguments": t.input_schema},
              "required": ["name", "arguments"], "additionalProperties": False}
             for t in tools]
    return {"anyOf": [
        {"type": "object", "properties": {ANSWER_KEY: {"type": "string"}},
         "required": [ANSWER_KEY], "additionalProperties": False},
        {"type": "object",
         "properties": {CALLS_KEY: {"type": "array", "minItems": 1, "maxItems": 1,
                                    "items": {"anyOf": calls}}},
         "required": [CALLS_KEY], "additionalProperties": False},
    ]}


def response_format(tools: list[Any]) -> dict[str, Any]:
    """The request's ``response_format`` field for :func:`reply_schema`."""
    return {"type": "json_schema",
            "json_schema": {"name": "reply", "strict": True, "schema": reply_schema(tools)}}


def instructions(tools: Any) -> str:
    """The system prompt's part that says how to reply and what each tool does.

    With constrained decoding the model never sees the schema, only the
    grammar's effect, so it is told the two shapes and the tools in words.
    """
    lines = ["Tools you can call:"]
    for tool in tools:
        params = json.dumps(tool.input_schema.get("properties", {}), ensure_ascii=False,
                            separators=(",", ":"))
        lines.append(f"- {tool.name}: {tool.description} Arguments: {params}")
    lines.append('To call a tool reply {"tool_calls": [{"name": ..., "arguments": {...}}]}; '
                 'otherwise reply {"answer": "..."}.')
    return "\n".join(lines)


def refused(exc: APIError, options: AgentOptions, content_arrived: bool) -> bool:
    """The server refused the field: remember it and say to ask again without it."""
    from desktop_agent.core.errors import (
        AuthenticationError,
        ContextTooLongError,
        ModelNotFoundError,
        RateLimitError,
    )

    if content_arrived or not applies(options) or isinstance(
            exc, AuthenticationError | ContextTooLongError | ModelNotFoundError |
            RateLimitError):
        return False
    status = getattr(exc, "status", None)
    if not isinstance(status, int) or not 400 <= status < 600:
        return False
    _REFUSED.add(options.base_url)
    return True


_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
            "t": "\t"}


class ConstrainedReplyParser:
    """Reads a constrained reply as it streams: the answer's text, or the calls at the end.

    The same interface as :class:`~desktop_agent.core.wire.text_tool_calls.TextToolCallParser`
    (``feed``, ``finish``, ``calls``), so the stream aggregator uses either.
    """

    def __init__(self) -> None:
        self.calls: list[TextCall] = []
        self._buffer = ""
        self._state = "start"  # start, key, string, after, held, plain
        self._at = 0  # where reading continues in the buffer
        self._fallback: TextToolCallParser | None = None

    def feed(self, piece: str) -> str:
        """Take a piece of the reply; return the answer text that can be shown now."""
        if self._fallback is not None:
            return self._fallback.feed(piece)
        self._buffer += piece
        return self._advance()

    def finish(self) -> str:
        """The stream ended: settle the calls; return text still held back."""
        if self._fallback is not None:
            shown = self._fallback.finish()
            self.calls = self._fallback.calls
            return shown
        if self._state in ("string", "after"):
            return ""  # the answer was shown as it came (an unclosed one is kept as is)
        value, error = parse_arguments(self._buffer)
        if error is not None or not isinstance(value, dict):
            if self._buffer.strip():
                self.calls.append(TextCall(None, None, self._buffer,
                                           error or "The reply is not a JSON object."))
            return ""
        answer = value.get(ANSWER_KEY)
        items = value.get(CALLS_KEY)
        if isinstance(items, list) and items:
            self.calls += [call_from(item, json.dumps(item)) for item in items]
        return answer if isinstance(answer, str) else ""

    def _advance(self) -> str:
        shown: list[str] = []
        buffer = self._buffer
        while self._at < len(buffer):
            if self._state == "start":
                stripped = buffer[self._at:].lstrip()
                if not stripped:
                    return ""
                if not stripped.startswith("{"):  # not constrained after all: plain text
                    self._fallback = TextToolCallParser()
                    return self._fallback.feed(buffer)
                self._at = len(buffer) - len(stripped) + 1
                self._state = "key"
            elif self._state == "key":
                rest = buffer[self._at:]
                colon = rest.find(":")
                if colon < 0:
                    return ""
                key = rest[:colon].strip().strip('"')
                if key != ANSWER_KEY:
                    self._state = "held"  # calls: parsed whole at the end
                    return ""
                value = rest[colon + 1:].lstrip()
                if not value:
                    return ""
                if not value.startswith('"'):
                    self._state = "held"
                    return ""
                self._at = len(buffer) - len(value) + 1
                self._state = "string"
            elif self._state == "string":
                text, done = self._string_part(buffer)
                shown.append(text)
                if not done:
                    break
                self._state = "after"
            else:  # after the answer, or held for the end
                break
        return "".join(shown)

    def _string_part(self, buffer: str) -> tuple[str, bool]:
        """Decode the answer string from ``self._at``; (text, whether it closed)."""
        out: list[str] = []
        at = self._at
        while at < len(buffer):
            char = buffer[at]
            if char == '"':
                self._at = at + 1
                return "".join(out), True
            if char != "\\":
                out.append(char)
                at += 1
                continue
            if at + 1 >= len(buffer):
                break  # an escape split across pieces: wait for the rest
            code = buffer[at + 1]
            if code == "u":
                if at + 6 > len(buffer):
                    break
                out.append(_unicode(buffer, at))
                at += 6
                if 0xD800 <= ord(out[-1]) < 0xDC00:  # a surrogate pair: join its halves
                    if at + 6 > len(buffer):
                        out.pop()
                        at -= 6
                        break
                    if buffer.startswith("\\u", at):
                        out[-1] = (out[-1] + _unicode(buffer, at)).encode(
                            "utf-16", "surrogatepass").decode("utf-16")
                        at += 6
            else:
                out.append(_ESCAPES.get(code, code))
                at += 2
        self._at = at
        return "".join(out), False


def _unicode(buffer: str, at: int) -> str:
    try:
        return chr(int(buffer[at + 2:at + 6], 16))
    except ValueError:
        return buffer[at:at + 6]
