"""The events of a Server-Sent Events body: each one's data, as the blocks of the body arrive.

A push parser rather than an async generator of lines: the chat stream's reader
(:class:`~desktop_agent.core.wire.transport.ChatStream`) hands it each block the
network gave and gets back the data of the events that block completed, so a
streamed piece costs one method call here instead of a generator step per line
(a chunk is two lines, its ``data:`` line and the blank line after it). Lines
stay bytes: the usual event, one ``data:`` line holding a JSON object, goes to
the JSON decoder as it came.

httpx's line iterator kept appending to a line until a newline came: a server
that streamed one endless line grew the app's memory without limit. Here a line
longer than the cap ends the stream with a typed error. Lines end with a line
feed (CR LF too); lone carriage-return endings, which no chat server sends, are
not split. An event's data is handed over at its blank line, except the usual
single ``data:`` line ending in ``}``, handed over at once (a server that never
sends the blank line still streams); ``data: [DONE]`` ends the stream.
"""

from __future__ import annotations

from desktop_agent.core import errors

#: Longest SSE line accepted (one chunk's JSON; a huge tool call still fits).
MAX_LINE_BYTES = 16 * 1024 * 1024


class SseEvents:
    """Splits one Server-Sent Events body into its events' data.

    Attributes:
        done: ``data: [DONE]`` came; nothing after it is read.
    """

    def __init__(self, max_line: int = MAX_LINE_BYTES, base_url: str = "") -> None:
        self._max_line = max_line
        self._base_url = base_url
        self._parts: list[bytes] = []  # the start of a line the next block ends
        self._size = 0
        self._data: list[bytes] = []  # the data lines of an event not ended yet
        self.done = False

    def feed(self, block: bytes) -> list[bytes]:
        """The data of each event ``block`` completes, in order (up to ``[DONE]``).

        Raises:
            MalformedStreamError: A line is longer than the cap.
        """
        if self.done:
            return []
        if block.endswith(b"}\n\n") and block.startswith(b"data:") and not self._parts \
                and not self._data and block.find(b"\n") == len(block) - 2:
            return [block[5:-2].lstrip(b" ")]  # one whole event, as servers send each chunk
        out: list[bytes] = []
        start = 0
        if self._parts:  # a line begun in an earlier block
            end = block.find(b"\n")
            if end < 0:
                self._keep(block, 0)
                return out
            self._parts.append(block[:end])
            line = b"".join(self._parts).rstrip(b"\r")
            self._parts.clear()
            self._size = 0
            if self._line(line, out):
                return out
            start = end + 1
        data = self._data
        find = block.find
        while (end := find(b"\n", start)) >= 0:
            line = block[start:end]
            start = end + 1
            if line.endswith(b"\r"):
                line = line.rstrip(b"\r")
            if not data and line.startswith(b"data:") and line.endswith(b"}"):
                out.append(line[5:].lstrip(b" "))  # the usual event: one JSON object
            elif (line or data) and self._line(line, out):
                return out
        if start < len(block):
            self._keep(block, start)
        return out

    def finish(self) -> list[bytes]:
        """The body ended: the data of a last unended line, when it is a whole JSON event."""
        out: list[bytes] = []
        if self._parts and not self.done:
            line = b"".join(self._parts).rstrip(b"\r")
            self._parts.clear()
            self._line(line, out)
        return out

    def _line(self, line: bytes, out: list[bytes]) -> bool:
        """Take one whole line (without its line ending or carriage return); True: ``[DONE]``."""
        data = self._data
        if line.startswith(b"data:"):
            data.append(line[5:].lstrip(b" "))
            if len(data) == 1 and line.endswith(b"}"):
                out.append(data.pop())  # decoded now, without waiting for the blank line
            return False
        if line or not data:
            return False  # event:, id:, retry: fields and ': comments'
        payload = b"\n".join(data)
        data.clear()
        if payload.decode("utf-8", "replace").strip() == "[DONE]":
            self.done = True
            return True
        out.append(payload)
        return False

    def _keep(self, block: bytes, start: int) -> None:
        """Hold the start of a line the next block ends, within the cap."""
        self._parts.append(block[start:])
        self._size += len(block) - start
        if self._size > self._max_line:
            raise errors.MalformedStreamError(
                f"The server at {self._base_url or 'the model server'} sent a line longer "
                f"than {self._max_line} bytes; the reply was stopped.", base_url=self._base_url)
