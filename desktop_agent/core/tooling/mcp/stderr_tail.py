"""The last lines a server process wrote to stderr, kept for the window."""

from __future__ import annotations

import contextlib
import io
import os
import threading
from collections import deque
from collections.abc import Iterable


class StderrTail:
    """A pipe for a server's stderr and a thread keeping its last lines.

    A thread rather than an event-loop reader because it works the same on
    every platform and the loop never waits on it. EOF means every writer,
    normally the server process, has gone.
    """

    def __init__(self, lines: int, secrets: Iterable[str]) -> None:
        self._lines: deque[str] = deque(maxlen=lines)
        self._guard = threading.Lock()
        self.closed = threading.Event()
        self._secrets = [s for s in secrets if len(s) >= 3]
        read_fd, write_fd = os.pipe()
        self.writer: io.TextIOWrapper | None = open(  # noqa: SIM115 - handed to the child
            write_fd, "w", encoding="utf-8", errors="replace", closefd=True)
        self._reader = threading.Thread(target=self._read, args=(read_fd,), daemon=True,
                                        name="mcp-stderr")
        self._reader.start()

    def _read(self, fd: int) -> None:
        try:
            with open(fd, encoding="utf-8", errors="replace") as stream:
                for line in stream:
                    for secret in self._secrets:
                        line = line.replace(secret, "[redacted]")
                    with self._guard:
                        self._lines.append(line.rstrip("\r\n"))
        except (OSError, ValueError):  # the pipe went away; nothing more to keep
            pass
        finally:
            self.closed.set()

    def snapshot(self) -> list[str]:
        """The kept lines, oldest first (safe while the reader thread appends)."""
        with self._guard:
            return list(self._lines)

    def close_writer(self) -> None:
        """Drop our copy of the write end, so EOF arrives when the server exits."""
        if self.writer is not None:
            with contextlib.suppress(OSError):
                self.writer.close()
            self.writer = None
