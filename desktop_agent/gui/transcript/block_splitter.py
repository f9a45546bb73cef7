"""Incremental markdown block boundaries for a reply that arrives in pieces.

Why: rendering markdown is the expensive part of showing a streamed reply.
The transcript renders a block (paragraph, list, table, heading, fenced code)
once, when it closes, and shows only the trailing open block cheaply. This
module finds those boundaries in O(size of the new text) per feed, without Qt,
by looking at whole lines only: a blank line or an ATX heading closes prose, a
fence line opens or closes code. It is a line scanner, not a markdown parser:
constructs that span blank lines (loose lists, indented code with blank lines)
render as consecutive blocks, which looks the same in practice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$")
_HEADING = re.compile(r"^ {0,3}#{1,6}(\s|$)")
_FENCE_PREFIX = re.compile(r"^ {0,3}[`~]*$")

#: An open prose block longer than this is closed at the next line end, so the
#: per-frame cost of showing the trailing block stays bounded even when a reply
#: never has a blank line.
FORCE_CLOSE_CHARS = 1500


@dataclass(frozen=True)
class ProseClosed:
    """A finished run of markdown that can be rendered once and kept."""

    text: str


@dataclass(frozen=True)
class CodeOpened:
    """A fenced code block started; ``language`` is its info word (may be empty)."""

    language: str


@dataclass(frozen=True)
class CodeText:
    """More text of the open code block (may be part of a line)."""

    text: str


@dataclass(frozen=True)
class CodeClosed:
    """The open code block's closing fence arrived (or the reply ended)."""


BlockEvent = ProseClosed | CodeOpened | CodeText | CodeClosed


class StreamingBlockSplitter:
    """Turns text deltas into block events plus the current open prose tail.

    Feed it deltas with :meth:`feed`; it returns the events for blocks that
    closed or code that arrived. :meth:`prose_tail` is the text of the open
    prose block (shown provisionally). :meth:`finish` closes whatever is open.
    """

    def __init__(self) -> None:
        self._partial: list[str] = []  # pieces of the line being received
        self._prose_lines: list[str] = []
        self._prose_chars = 0
        self._fence: str | None = None  # the opening fence while inside code
        self._code_line_sent = 0  # chars of the partial line already sent as code

    @property
    def in_code(self) -> bool:
        """True while inside a fenced code block."""
        return self._fence is not None

    def feed(self, text: str) -> list[BlockEvent]:
        """Add a delta and return the events it completes."""
        events: list[BlockEvent] = []
        start = 0
        while True:
            newline = text.find("\n", start)
            if newline < 0:
                break
            self._partial.append(text[start:newline])
            line = "".join(self._partial)
            self._partial.clear()
            self._take_line(line, events)
            start = newline + 1
        if start < len(text):
            self._partial.append(text[start:])
            if self._fence is not None:
                self._send_partial_code(events)
        return events

    def prose_tail(self) -> str:
        """The open prose block as received so far (empty inside code)."""
        if self._fence is not None:
            return ""
        partial = "".join(self._partial)
        if not self._prose_lines:
            return partial
        return "\n".join([*self._prose_lines, partial]) if partial else "\n".join(
            self._prose_lines
        )

    def finish(self) -> list[BlockEvent]:
        """Close every open block (end of the reply or of this text run)."""
        events: list[BlockEvent] = []
        partial = "".join(self._partial)
        self._partial.clear()
        if self._fence is not None:
            if not _is_closing_fence(partial, self._fence):
                rest = partial[self._code_line_sent :]
                if rest:
                    events.append(CodeText(rest))
            self._fence = None
            self._code_line_sent = 0
            events.append(CodeClosed())
            return events
        if partial:
            self._prose_lines.append(partial)
        self._close_prose(events)
        return events

    # -- line handling -------------------------------------------------------

    def _take_line(self, line: str, events: list[BlockEvent]) -> None:
        if self._fence is not None:
            if _is_closing_fence(line, self._fence):
                self._fence = None
                self._code_line_sent = 0
                events.append(CodeClosed())
            else:
                events.append(CodeText(line[self._code_line_sent :] + "\n"))
                self._code_line_sent = 0
            return
        if not line.strip():
            self._close_prose(events)
            return
        opening = _FENCE_OPEN.match(line)
        if opening:
            self._close_prose(events)
            self._fence = opening.group(1)
            events.append(CodeOpened(opening.group(2)))
            return
        if _HEADING.match(line):
            self._close_prose(events)
            self._prose_lines.append(line)
            self._close_prose(events)
            return
        self._prose_lines.append(line)
        self._prose_chars += len(line) + 1
        if self._prose_chars >= FORCE_CLOSE_CHARS:
            self._close_prose(events)

    def _close_prose(self, events: list[BlockEvent]) -> None:
        if self._prose_lines:
            events.append(ProseClosed("\n".join(self._prose_lines)))
            self._prose_lines.clear()
        self._prose_chars = 0

    def _send_partial_code(self, events: list[BlockEvent]) -> None:
        """Show a partial code line unless it may still become the closing fence."""
        partial = "".join(self._partial)
        if _FENCE_PREFIX.match(partial):
            return
        rest = partial[self._code_line_sent :]
        if rest:
            events.append(CodeText(rest))
            self._code_line_sent = len(partial)


def _is_closing_fence(line: str, fence: str) -> bool:
    stripped = line.strip()
    if len(line) - len(line.lstrip(" ")) > 3 or not stripped:
        return False
    return set(stripped) == {fence[0]} and len(stripped) >= len(fence)
