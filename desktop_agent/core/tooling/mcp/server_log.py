"""A server's log messages (``notifications/message``): kept for the person, never for the model.

Each server's last messages are kept in a bounded buffer with their level,
so the window's MCP servers panel (and the REST server's log, through the
``desktop_agent.mcp.server`` logger) can show them; the level a person
chooses is sent with ``logging/setLevel``.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

#: The eight syslog levels MCP uses, least severe first.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
#: Messages kept per server (the oldest go first).
LOG_LINES = 500
#: Characters of one message kept.
MESSAGE_CHARS = 2000

_PYTHON_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO,
                  "warning": logging.WARNING, "error": logging.ERROR,
                  "critical": logging.CRITICAL, "alert": logging.CRITICAL,
                  "emergency": logging.CRITICAL}

server_log = logging.getLogger("desktop_agent.mcp.server")


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One log message of a server.

    Attributes:
        time: When it arrived (``time.time()``).
        level: One of :data:`LOG_LEVELS`.
        logger: The server's logger name, if it gave one.
        text: The message (data as text, secrets blanked, cut at :data:`MESSAGE_CHARS`).
    """

    time: float
    level: str
    logger: str | None
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"time": self.time, "level": self.level, "logger": self.logger,
                "text": self.text}


def _as_text(data: Any) -> str:
    if isinstance(data, str):
        return data
    try:
        return json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(data)


class ServerLog:
    """The last :data:`LOG_LINES` messages of one server.

    Attributes:
        level: The level last asked of the server (None: the server's own default).
    """

    def __init__(self, server: str, lines: int = LOG_LINES) -> None:
        self._server = server
        self._entries: deque[LogEntry] = deque(maxlen=lines)
        self.level: str | None = None

    def add(self, level: str, data: Any, logger: str | None, redact: Any = None) -> LogEntry:
        """Keep one message (and pass it to the app's log, never to a model)."""
        text = _as_text(data)[:MESSAGE_CHARS]
        if redact is not None:
            text = redact(text)
        level = level if level in LOG_LEVELS else "info"
        entry = LogEntry(time.time(), level, logger, text)
        self._entries.append(entry)
        server_log.log(_PYTHON_LEVELS[level], "MCP server %s%s: %s", self._server,
                       f" ({logger})" if logger else "", text)
        return entry

    def entries(self, at_least: str | None = None) -> list[LogEntry]:
        """The kept messages, oldest first; only those at ``at_least`` or above when given."""
        if at_least is None or at_least not in LOG_LEVELS:
            return list(self._entries)
        floor = LOG_LEVELS.index(at_least)
        return [e for e in self._entries if LOG_LEVELS.index(e.level) >= floor]
