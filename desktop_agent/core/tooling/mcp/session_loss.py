"""Telling a forgotten HTTP session from other failures.

An MCP server on streamable HTTP keeps sessions in memory; restarted while the
app was idle, it no longer knows the session id the client sends, and every
call fails although the connection looks fine. These are the signs of that,
so :class:`~.server_connection.McpServerConnection` can open a new session once
instead of failing every call.
"""

from __future__ import annotations

# How the SDK's streamable-HTTP client reports an HTTP-level refusal of a request:
# 404 with a session is "Session terminated" (the spec's answer); any other status
# >= 400 without a JSON-RPC body is "Server returned an error response" (server-
# everything answers 400 "No valid session ID provided"). A tool's own failure comes
# back as a 200, so these mean the session is gone.
_SESSION_GONE_WORDS = ("session not found", "session terminated", "no valid session",
                       "server returned an error response")


class SessionGone(Exception):
    """The HTTP server no longer knows this session (it restarted)."""


def session_gone(exc: BaseException) -> bool:
    """Whether an error means the server forgot the session (404/400 on a session id)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    status = getattr(getattr(exc, "response", None), "status_code", None)
    text = str(exc).lower()
    return status in (400, 404) or any(words in text for words in _SESSION_GONE_WORDS)
