"""Clients of model servers shared by many Clients: one ``AsyncOpenAI`` per model server.

A :class:`~desktop_agent.core.client.Client` on its own opens its own SDK
client and keeps its connections until it is closed. A process that drives
many conversations (the REST server, a window with many tabs) would then hold
at least one socket per conversation it ever ran: under a 256-file limit the
server stopped answering after about 240 conversations. Passing one
:class:`ConnectionPool` in every Client's ``AgentOptions.connection_pool``
makes them share one ``AsyncOpenAI`` (on the aiohttp backend, see
:mod:`~desktop_agent.core.wire.model_client`) per model server, whose
keep-alive connections are reused (and closed after a few idle seconds).
Discovery and the servers' detail endpoints take the same pool
(:func:`~desktop_agent.core.servers.discovery.probe_server`), so every
request to one server goes through one client.

A server is its base URL and the key it is reached with: two keys for one
address are two clients (the SDK sends its key with every request).

The pool belongs to whoever made it (it outlives the Clients using it): close
it with :meth:`ConnectionPool.aclose` when the process stops serving. It is
bound to the event loop it is first used on, like any async HTTP client.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from desktop_agent.core.wire.model_client import DEFAULT_MAX_CONNECTIONS

if TYPE_CHECKING:
    import openai

__all__ = ["DEFAULT_MAX_CONNECTIONS", "ConnectionPool"]


class ConnectionPool:
    """One shared ``AsyncOpenAI`` per model server (base URL and key).

    Attributes:
        max_connections: Open connections allowed per server.
    """

    def __init__(self, *, max_connections: int = DEFAULT_MAX_CONNECTIONS) -> None:
        if max_connections < 1:
            raise ValueError("connection limits must be positive")
        self.max_connections = max_connections
        self._clients: dict[tuple[str, str], Any] = {}
        self._closed = False

    def client(self, base_url: str, api_key: str | None = None) -> openai.AsyncOpenAI:
        """The ``AsyncOpenAI`` shared by everything that talks to ``base_url`` with ``api_key``."""
        if self._closed:
            raise RuntimeError("the connection pool is closed")
        url = base_url.rstrip("/")
        key = (url, api_key or "not-needed")
        client = self._clients.get(key)
        if client is None or client.is_closed():
            from desktop_agent.core.wire.model_client import new_openai_client

            client = new_openai_client(url, api_key, max_connections=self.max_connections)
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
