"""A Client's connection to its model server: made at first use, dropped when the server changes.

A Client outlives its settings: ``update_options`` may point it at another
server, key, timeout or connection pool between turns. The connection made
for the old settings is then closed in the background (a shared pool's client
stays open for the others) and the next request makes one for the new.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from desktop_agent.core.wire.transport import ModelHttp, make_model_http

if TYPE_CHECKING:
    from desktop_agent.core.wire.wire_settings import WireSettings


class ModelConnection:
    """The one :class:`~desktop_agent.core.wire.transport.ModelHttp` a Client sends with."""

    def __init__(self) -> None:
        self._http: ModelHttp | None = None
        self._closing: set[asyncio.Future[None]] = set()  # old connections being closed

    def http(self, settings: WireSettings) -> ModelHttp:
        """The connection for ``settings`` (made now if there is none yet)."""
        if self._http is None:
            pool = settings.connection_pool
            shared = pool.client(settings.base_url, settings.api_key) if pool is not None \
                else None
            self._http = make_model_http(settings.base_url, settings.api_key, settings.timeout,
                                         client=shared)
        return self._http

    def switch(self, old: WireSettings, new: WireSettings) -> None:
        """Drop the connection made for ``old`` when ``new`` reaches the server another way."""
        if self._http is not None and (new.base_url != old.base_url
                                       or new.api_key != old.api_key
                                       or new.timeout != old.timeout
                                       or new.connection_pool is not old.connection_pool):
            if old.connection_pool is None:  # a shared pool stays open
                self._closing.add(asyncio.ensure_future(self._http.close()))
                self._closing = {t for t in self._closing if not t.done()}
            self._http = None

    async def close(self, settings: WireSettings) -> None:
        """Close the connection (a shared ``connection_pool``'s stays open for others)."""
        if self._http is not None:
            http, self._http = self._http, None
            if settings.connection_pool is None:
                await http.close()
