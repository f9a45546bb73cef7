"""HTTP connections to model servers, shared by many Clients: one pool per base URL.

A :class:`~desktop_agent.core.client.Client` on its own opens its own HTTP
client and keeps its connections until it is closed. A process that drives
many conversations (the REST server, a window with many tabs) would then hold
at least one socket per conversation it ever ran: under a 256-file limit the
server stopped answering after about 240 conversations. Passing one
:class:`ConnectionPool` in every Client's ``AgentOptions.connection_pool``
makes them share one HTTP session per model server, whose keep-alive
connections are reused (and closed after a few idle seconds).

The pool belongs to whoever made it (it outlives the Clients using it): close
it with :meth:`ConnectionPool.aclose` when the process stops serving. It is
bound to the event loop it is first used on, like any async HTTP client.
"""

from __future__ import annotations

import asyncio
from typing import Any

DEFAULT_MAX_CONNECTIONS = 256
"""Connections open at once per model server (streams beyond it wait for one)."""


class ConnectionPool:
    """One shared HTTP session per model server base URL.

    Attributes:
        max_connections: Open connections allowed per server.
    """

    def __init__(self, *, max_connections: int = DEFAULT_MAX_CONNECTIONS) -> None:
        if max_connections < 1:
            raise ValueError("connection limits must be positive")
        self.max_connections = max_connections
        self._clients: dict[str, Any] = {}
        self._closed = False

    def http_client(self, base_url: str) -> Any:
        """The HTTP session (an ``aiohttp.ClientSession``) shared by Clients of ``base_url``."""
        if self._closed:
            raise RuntimeError("the connection pool is closed")
        key = base_url.rstrip("/")
        client = self._clients.get(key)
        if client is None or client.closed:
            from desktop_agent.core.wire.transport import new_session

            client = new_session(self.max_connections)
            self._clients[key] = client
        return client

    def __len__(self) -> int:
        """How many model servers have a shared client."""
        return len(self._clients)

    async def aclose(self) -> None:
        """Close every shared client (their Clients must not stream any more)."""
        self._closed = True
        clients, self._clients = list(self._clients.values()), {}
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
