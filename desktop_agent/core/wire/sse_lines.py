"""Lines of a Server-Sent Events body, each bounded in length.

httpx's line iterator keeps appending to a line until a newline comes: a
server that streams one endless line grew the app's memory without limit.
Here a line longer than the cap ends the stream with a typed error.
Lines end with a line feed (CR LF too); lone carriage-return endings, which
no chat server sends, are not split.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from desktop_agent.core import errors

#: Longest SSE line accepted (one chunk's JSON; a huge tool call still fits).
MAX_LINE_BYTES = 16 * 1024 * 1024


async def bounded_lines(data: AsyncIterator[bytes], max_line: int = MAX_LINE_BYTES,
                        base_url: str = "") -> AsyncIterator[str]:
    """Decoded lines (without their ending) from a byte stream.

    Raises:
        MalformedStreamError: A line is longer than ``max_line`` bytes.
    """
    parts: list[bytes] = []
    size = 0
    async for block in data:
        start = 0
        while (end := block.find(b"\n", start)) >= 0:
            piece = block[start:end]
            if parts:
                parts.append(piece)
                piece = b"".join(parts)
                parts.clear()
                size = 0
            yield piece.rstrip(b"\r").decode("utf-8", "replace")
            start = end + 1
        if start < len(block):
            parts.append(block[start:])
            size += len(block) - start
            if size > max_line:
                raise errors.MalformedStreamError(
                    f"The server at {base_url or 'the model server'} sent a line longer than "
                    f"{max_line} bytes; the reply was stopped.", base_url=base_url)
    if parts:
        yield b"".join(parts).rstrip(b"\r").decode("utf-8", "replace")
