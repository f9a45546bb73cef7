"""Turn OpenAI-style streamed chunks into blocks: every provider quirk lives here.

Real servers disagree on how they stream. This module absorbs the differences:

* text arrives as deltas from most servers, but some resend the whole text so
  far each time (cumulative); the mode is decided once per stream from clear
  evidence, or forced per server;
* one delta may carry text and tool-call fragments at once;
* tool-call fragments are keyed by ``index``; ``id`` and ``function.name`` may
  come in any fragment, late, or repeated; calls may interleave;
* ``finish_reason`` may be ``tool_calls``, ``stop`` (even with calls),
  ``length`` (arguments cut off) or missing;
* usage may come in a final chunk with ``choices: []``; llama.cpp adds a
  non-standard ``timings`` object;
* reasoning arrives as ``delta.reasoning_content``, ``delta.reasoning`` or
  inline ``<think>...</think>`` at the start of the text.

Chunks are plain dicts (decoded JSON), which keeps the per-chunk cost low.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from desktop_agent.core.types import (
    Block,
    PromptProgressBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    ToolUseError,
)
from desktop_agent.core.wire.call_lists import Said
from desktop_agent.core.wire.constrained_reply import ConstrainedReplyParser
from desktop_agent.core.wire.text_tool_calls import (
    TextCall,
    TextToolCallParser,
    name_hint,
    parse_arguments,
)
from desktop_agent.core.wire.wire_settings import TextDeltaMode, TextToolCalls

_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"
# States of the inline <think> parser.
_THINK_UNDECIDED, _THINK_INSIDE, _THINK_DONE = 0, 1, 2


@dataclass
class _PendingCall:
    index: int
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


def new_tool_call_id() -> str:
    """An id for a tool call whose server sent none."""
    return "call_" + uuid.uuid4().hex[:24]


class StreamAggregator:
    """Accumulates one streamed completion and emits blocks as they become known.

    ``feed(chunk)`` returns the blocks that chunk produced (text and thinking
    deltas at once; tool calls when finalized); ``finish()`` flushes what is
    left at the end of the stream. The full text, thinking, finish reason,
    usage and timings stay available as attributes afterwards.
    """

    def __init__(self, text_delta_mode: TextDeltaMode = "auto",
                 text_tool_calls: TextToolCalls = "auto", *,
                 constrained: bool = False, string_cap: int | None = None,
                 said: Said | None = None) -> None:
        self.mode: TextDeltaMode = text_delta_mode
        self.constrained = constrained
        # Under constraints, a string argument that reached the grammar's length cap
        # may have been cut by it (see tooling/constrained_calls.string_cap).
        self._string_cap = string_cap
        #: A constrained reply was cut by the token limit in the middle of a call.
        self.cut_call = False
        # Calls the model wrote as text (see text_tool_calls.py), or the reply of a
        # constrained request (constrained_reply.py); None when off.
        self._text_calls: TextToolCallParser | ConstrainedReplyParser | None = (
            ConstrainedReplyParser(said) if constrained
            else TextToolCallParser() if text_tool_calls == "auto" else None)
        # Pieces are joined when read, not per chunk: ``self.text += piece`` on an
        # attribute copies the whole reply each time (quadratic on long replies).
        self._text_parts: list[str] = []
        self._thinking_parts: list[str] = []
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.timings: dict[str, Any] | None = None
        self.model: str | None = None
        self.content_chunks = 0
        self.tool_blocks: list[ToolUseBlock] = []
        self.tool_errors: list[ToolUseError] = []
        self._raw_text = ""  # text as received (cumulative streams are compared against it)
        self._think_state = _THINK_UNDECIDED
        self._held = ""  # text held back while deciding whether a <think> tag starts
        self._calls: dict[int, _PendingCall] = {}
        self._finalized = False
        #: Tool-call ids already used (in history or this reply); a repeat gets a new id.
        self.taken_ids: set[str] = set()

    @property
    def placeholder_call(self) -> bool:
        """The constrained reply was a call that held nothing the person gave, not kept."""
        return isinstance(self._text_calls, ConstrainedReplyParser) and \
            self._text_calls.placeholder_call

    @property
    def text(self) -> str:
        """The visible answer so far."""
        return _joined(self._text_parts)

    @property
    def thinking(self) -> str:
        """The reasoning so far."""
        return _joined(self._thinking_parts)

    # -- feeding -----------------------------------------------------------------
    def feed(self, chunk: dict[str, Any]) -> list[Block]:
        """Take one decoded chunk; return the blocks it produced."""
        out: list[Block] = []
        usage = chunk.get("usage")
        if usage:
            self.usage = usage
        timings = chunk.get("timings")
        if timings:
            self.timings = timings
        progress = chunk.get("prompt_progress")
        if isinstance(progress, dict):
            out.append(_progress_block(progress))
        if self.model is None and chunk.get("model"):
            self.model = chunk["model"]
        choices = chunk.get("choices")
        if not choices:
            return out
        choice = choices[0]
        delta = choice.get("delta") or choice.get("message") or {}
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning:
            self.content_chunks += 1
            self._thinking_parts.append(reasoning)
            out.append(ThinkingBlock(reasoning))
        content = delta.get("content")
        if content:
            self.content_chunks += 1
            if self._think_state == _THINK_DONE and self.mode == "incremental":
                self._emit_text(content, out)  # the usual piece, without the checks below
            else:
                self._take_text(content, out)
        calls = delta.get("tool_calls")
        if calls:
            self.content_chunks += 1
            self._take_tool_fragments(calls)
        reason = choice.get("finish_reason")
        if reason:
            self.finish_reason = reason
            if reason == "tool_calls":
                out.extend(self._finalize_calls())
        return out

    def finish(self) -> list[Block]:
        """End of stream: flush held text and finalize remaining tool calls."""
        out: list[Block] = []
        if self._held:
            held, self._held = self._held, ""
            self._think_state = _THINK_DONE
            self._emit_text(held, out)
        if self._text_calls is not None:
            self._emit_visible(self._text_calls.finish(), out)
        out.extend(self._finalize_calls())
        out.extend(self._text_call_blocks())
        return out

    def _text_call_blocks(self) -> list[Block]:
        """Calls written as text, used only when the server sent no native calls."""
        if self._text_calls is None or not self._text_calls.calls:
            return []
        found, self._text_calls.calls = self._text_calls.calls, []
        if self.tool_blocks or self.tool_errors:
            return []
        # A constrained reply cut by the token limit was closed by the JSON repair:
        # its calls (the last one at least) are not what the model meant to send.
        cut = self.finish_reason == "length" and isinstance(
            self._text_calls, ConstrainedReplyParser) and not self._text_calls.complete
        self.cut_call = cut
        out: list[Block] = []
        for call in found:
            call_id = new_tool_call_id()
            problem = self._text_call_problem(call, cut)
            if problem is not None:
                error = ToolUseError(problem, raw_data=call.raw, tool_use_id=call_id,
                                     name=call.name or name_hint(call.raw))
                self.tool_errors.append(error)
                out.append(error)
            else:
                assert call.name is not None and call.arguments is not None
                block = ToolUseBlock(call_id, call.name, call.arguments)
                self.tool_blocks.append(block)
                out.append(block)
        return out

    def _text_call_problem(self, call: TextCall, cut: bool) -> str | None:
        """Why a call found in the text cannot run, or None."""
        if cut or (self.finish_reason == "length" and (call.error is not None
                                                       or call.name is None)):
            return ("The reply was cut off by the token limit (finish_reason 'length') in the "
                    "middle of a tool call, so the call is incomplete.")
        if call.error is not None or call.arguments is None or call.name is None:
            return f"The model wrote a tool call as text that could not be read: {call.error}"
        cap = self._string_cap
        if cap is not None and self.constrained:
            for key, value in call.arguments.items():
                if isinstance(value, str) and len(value) >= cap:
                    return (f"The argument {key!r} of {call.name} reached the {cap}-character "
                            "limit of constrained calls and may be cut off; not run.")
        return None

    # -- text ----------------------------------------------------------------------
    def _take_text(self, content: str, out: list[Block]) -> None:
        mode = self.mode
        if mode == "incremental":
            piece = content
        elif mode == "cumulative":
            piece = self._cumulative_piece(content)
        else:
            piece = self._auto_piece(content)
        if piece:
            self._route_text(piece, out)

    def _cumulative_piece(self, content: str) -> str:
        previous = self._raw_text
        if content.startswith(previous):
            piece = content[len(previous):]
        else:  # the server rewrote its text; keep what we have and add the difference
            common = 0
            for a, b in zip(previous, content, strict=False):
                if a != b:
                    break
                common += 1
            piece = content[common:] if common == len(previous) else ""
            if not piece and len(content) > len(previous):
                piece = content[len(previous):]
        self._raw_text = content if len(content) >= len(previous) else previous
        return piece

    def _auto_piece(self, content: str) -> str:
        previous = self._raw_text
        if previous:
            if len(previous) >= 2 and len(content) > len(previous) and content.startswith(previous):
                self.mode = "cumulative"
                self._raw_text = content
                return content[len(previous):]
            if not content.startswith(previous):
                self.mode = "incremental"
                self._raw_text = ""
                return content
        self._raw_text = previous + content
        return content

    def _route_text(self, piece: str, out: list[Block]) -> None:
        state = self._think_state
        if state == _THINK_DONE:
            self._emit_text(piece, out)
            return
        if state == _THINK_UNDECIDED:
            buffered = self._held + piece
            stripped = buffered.lstrip()
            if stripped.startswith(_THINK_OPEN):
                self._held = ""
                self._think_state = _THINK_INSIDE
                piece = stripped[len(_THINK_OPEN):]
                if not piece:
                    return
            elif _THINK_OPEN.startswith(stripped):
                self._held = buffered  # could still become "<think>"
                return
            else:
                self._held = ""
                self._think_state = _THINK_DONE
                self._emit_text(buffered, out)
                return
        # inside <think>: look for the closing tag, which may be split across pieces
        buffered = self._held + piece
        end = buffered.find(_THINK_CLOSE)
        if end >= 0:
            self._held = ""
            self._think_state = _THINK_DONE
            self._emit_thinking(buffered[:end], out)
            rest = buffered[end + len(_THINK_CLOSE):].lstrip("\n")
            if rest:
                self._emit_text(rest, out)
            return
        keep = _partial_suffix(buffered, _THINK_CLOSE)
        self._held = buffered[len(buffered) - keep:] if keep else ""
        self._emit_thinking(buffered[: len(buffered) - keep], out)

    def _emit_text(self, piece: str, out: list[Block]) -> None:
        if self._text_calls is not None:
            piece = self._text_calls.feed(piece)
        self._emit_visible(piece, out)

    def _emit_visible(self, piece: str, out: list[Block]) -> None:
        if piece:
            self._text_parts.append(piece)
            out.append(TextBlock(piece))

    def _emit_thinking(self, piece: str, out: list[Block]) -> None:
        if piece:
            self._thinking_parts.append(piece)
            out.append(ThinkingBlock(piece))

    # -- tool calls ----------------------------------------------------------------
    def _take_tool_fragments(self, fragments: list[dict[str, Any]]) -> None:
        if self._finalized:
            self._finalized = False  # late fragments after a finish: collect them too
        for position, frag in enumerate(fragments):
            index = frag.get("index")
            if not isinstance(index, int):
                index = self._index_for(frag.get("id"), position)
            call = self._calls.get(index)
            if call is None:
                call = self._calls[index] = _PendingCall(index)
            if frag.get("id") and not call.id:
                call.id = frag["id"]
            function = frag.get("function") or {}
            name = function.get("name")
            if name and name != call.name:
                call.name = name if not call.name else call.name + name
            arguments = function.get("arguments")
            if arguments:
                if isinstance(arguments, dict):  # some servers send an object
                    arguments = json.dumps(arguments)
                call.arguments.append(arguments)

    def _index_for(self, call_id: str | None, position: int) -> int:
        if call_id:
            for index, call in self._calls.items():
                if call.id == call_id:
                    return index
            return len(self._calls)
        return position if position in self._calls or not self._calls else max(self._calls)

    def _finalize_calls(self) -> list[Block]:
        out: list[Block] = []
        for index in sorted(self._calls):
            call = self._calls.pop(index)
            out.append(self._finalize(call))
        self._finalized = True
        return out

    def _finalize(self, call: _PendingCall) -> ToolUseBlock | ToolUseError:
        raw = "".join(call.arguments)
        call_id = call.id or new_tool_call_id()
        if call_id in self.taken_ids:  # a server that reuses ids would mix up results
            call_id = new_tool_call_id()
        self.taken_ids.add(call_id)
        if not call.name:
            error = ToolUseError(
                f"The model sent a tool call without a tool name (arguments: {raw[:200]!r}).",
                raw_data=raw, tool_use_id=call_id, name=None)
            self.tool_errors.append(error)
            return error
        text = raw.strip()
        if not text:
            block = ToolUseBlock(call_id, call.name, {})
            self.tool_blocks.append(block)
            return block
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            if self.finish_reason == "length":  # closing its brackets would run a cut call
                error = ToolUseError(
                    f"The arguments for {call.name} were cut off by the token limit "
                    f"(finish_reason 'length') and are incomplete JSON.",
                    raw_data=raw, tool_use_id=call_id, name=call.name)
                self.tool_errors.append(error)
                return error
            # The same repair as for calls written as text (a trailing comma, single
            # quotes): small models make these slips on both paths.
            value, problem = parse_arguments(text)
            if problem is not None:
                message = problem.replace("The arguments", f"The arguments for {call.name}", 1)
                error = ToolUseError(message, raw_data=raw, tool_use_id=call_id, name=call.name)
                self.tool_errors.append(error)
                return error
        if not isinstance(value, dict):
            error = ToolUseError(
                f"The arguments for {call.name} must be a JSON object, "
                f"got {type(value).__name__}.", raw_data=raw, tool_use_id=call_id, name=call.name)
            self.tool_errors.append(error)
            return error
        block = ToolUseBlock(call_id, call.name, value)
        self.tool_blocks.append(block)
        return block


def _progress_block(progress: dict[str, Any]) -> PromptProgressBlock:
    """llama.cpp's ``{"total", "cache", "processed", "time_ms"}`` as a block."""
    def number(key: str) -> int:
        value = progress.get(key)
        return value if isinstance(value, int) and value >= 0 else 0
    return PromptProgressBlock(number("processed"), number("total"), number("cache"))


def _joined(parts: list[str]) -> str:
    """Join ``parts`` and keep the result as the only part, so the next join is cheap."""
    if len(parts) != 1:
        parts[:] = ["".join(parts)]
    return parts[0]


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0
