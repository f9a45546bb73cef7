"""Which model servers are running, and which chat models they serve.

Discovery runs in the background through the core
(:func:`desktop_agent.core.servers.discovery.discover_servers`) plus one
``list_models`` call per custom URL, all bounded by a timeout so the window
never hangs. Custom URLs are remembered in the store's app settings; their
API keys go to the keyring (settings hold the key's *name* only).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

if TYPE_CHECKING:
    from desktop_agent.core.wire.connection_pool import ConnectionPool
    from desktop_agent.store import Store

log = logging.getLogger("desktop_agent.gui.servers")

BASE_URL_ENV = "DESKTOP_AGENT_BASE_URL"
MODEL_ENV = "DESKTOP_AGENT_MODEL"
CUSTOM_SERVERS_KEY = "custom_servers"
DISCOVERY_TIMEOUT = 0.6
OVERALL_TIMEOUT = 8.0


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """A chat model a server offers."""

    id: str
    context_length: int | None = None
    vision: bool | None = None  # whether it reads images, where the server says


@dataclass(frozen=True, slots=True)
class ServerEntry:
    """One server as the picker lists it.

    Attributes:
        name: What the person sees (``LM Studio``, ``Custom``...).
        base_url: The OpenAI-compatible root (``.../v1``).
        up: Whether it answered.
        models: Its chat models.
        error: Why it is down, in words (None when up).
        api_key_name: The keyring name of its API key, if it has one.
        custom: Whether the person added it.
        local: The models the app runs itself ("On this computer"); ``base_url`` is
            then the session's ``LOCAL_SERVER`` mark, not an address.
    """

    name: str
    base_url: str
    up: bool
    models: tuple[ModelChoice, ...] = ()
    error: str | None = None
    api_key_name: str | None = None
    custom: bool = False
    local: bool = False

    def model(self, model_id: str) -> ModelChoice | None:
        """The model called ``model_id`` on this server, if listed."""
        return next((m for m in self.models if m.id == model_id), None)


@dataclass(slots=True)
class Preselection:
    """Server and model named by the environment (``DESKTOP_AGENT_BASE_URL/MODEL``)."""

    base_url: str | None = None
    model: str | None = None

    @classmethod
    def from_environment(cls) -> Preselection:
        """Read the two environment variables (blank means unset)."""
        url = os.environ.get(BASE_URL_ENV, "").strip().rstrip("/") or None
        model = os.environ.get(MODEL_ENV, "").strip() or None
        return cls(url, model)


def api_key_name_for(base_url: str) -> str:
    """The keyring name under which a custom server's API key is kept."""
    return f"api:{base_url}"


class ServerCatalog(QObject):
    """Finds servers in the background and remembers custom ones.

    Signals:
        discovery_started(): A search began.
        servers_changed(list): The search ended; a list of :class:`ServerEntry`.
    """

    discovery_started = Signal()
    servers_changed = Signal(list)

    def __init__(self, store: Store, parent: QObject | None = None, *,
                 connection_pool: ConnectionPool | None = None) -> None:
        super().__init__(parent)
        self._store = store
        # the window's pool: a found server is probed through the client its chats use
        self._pool = connection_pool
        self._servers: list[ServerEntry] = []
        self._local: list[ServerEntry] = []  # the app's own engine: known, not searched for
        self._task: asyncio.Task[None] | None = None
        self.preselection = Preselection.from_environment()
        self.searched = False
        self._searching = False

    @property
    def servers(self) -> list[ServerEntry]:
        """The app's own running models first, then the result of the last search."""
        local = {server.base_url for server in self._local}
        return [*self._local, *(s for s in self._servers if s.base_url not in local)]

    def set_local_servers(self, servers: list[ServerEntry]) -> None:
        """List the models the app runs itself ("On this computer"); tell the listeners.

        They are not searched for: the app knows their address, key and context, and
        a search that ran while one started would not find its random port anyway.
        """
        if servers == self._local:
            return
        self._local = list(servers)
        if not self._searching:
            self.servers_changed.emit(self.servers)

    @property
    def searching(self) -> bool:
        """Whether a search is running."""
        return self._searching

    def up_servers(self) -> list[ServerEntry]:
        """Servers that answered and serve at least one chat model."""
        return [s for s in self.servers if s.up and s.models]

    def preselected_choice(self) -> tuple[str, str, int | None] | None:
        """(URL, model, context length) named by DESKTOP_AGENT_BASE_URL/_MODEL, once found.

        With only the URL set, its first chat model; with only the model set, the
        first running server that has it.
        """
        pre = self.preselection
        if not (pre.base_url or pre.model):
            return None
        for server in self.up_servers():
            if pre.base_url and server.base_url.rstrip("/") != pre.base_url:
                continue
            found = server.model(pre.model) if pre.model else server.models[0]
            if found is not None:
                return server.base_url, found.id, found.context_length
        return None

    def find(self, base_url: str) -> ServerEntry | None:
        """The listed server at ``base_url``."""
        base_url = base_url.rstrip("/")
        return next((s for s in self.servers if s.base_url.rstrip("/") == base_url), None)

    def custom_servers(self) -> list[dict[str, Any]]:
        """Custom servers the person added: ``{"base_url", "api_key_name"}``."""
        stored = self._store.get_setting(CUSTOM_SERVERS_KEY, []) or []
        return [s for s in stored if isinstance(s, dict) and s.get("base_url")]

    def add_custom(self, base_url: str, api_key: str | None = None) -> tuple[str, bool | None]:
        """Remember a custom server (its key in the keyring) and search again.

        Returns:
            The normalised URL, and whether the key was persisted (True), kept for
            this session only (False), or there was no key (None).
        """
        url = normalise_url(base_url)
        persisted: bool | None = None
        key_name: str | None = None
        if api_key:
            from desktop_agent.appdata.secrets import set_secret

            key_name = api_key_name_for(url)
            persisted = set_secret(key_name, api_key)
        servers = [s for s in self.custom_servers() if s["base_url"] != url]
        servers.append({"base_url": url, "api_key_name": key_name})
        self._store.set_setting(CUSTOM_SERVERS_KEY, servers)
        self.refresh()
        return url, persisted

    def remove_custom(self, base_url: str) -> None:
        """Forget a custom server."""
        servers = [s for s in self.custom_servers() if s["base_url"] != base_url]
        self._store.set_setting(CUSTOM_SERVERS_KEY, servers)
        self.refresh()

    def refresh(self) -> None:
        """Start a search in the background (a running one is replaced)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._searching = True
        self.discovery_started.emit()
        self._task = asyncio.ensure_future(self._search())

    async def wait(self) -> None:
        """Wait for the running search (for the smoke test)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def close(self) -> None:
        """Cancel a running search."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._searching = False

    async def _search(self) -> None:
        try:
            servers = await asyncio.wait_for(self._gather(), OVERALL_TIMEOUT)
        except TimeoutError:
            servers = [ServerEntry("Search", "", False, error="The search for servers timed "
                                   "out.")]
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("server discovery failed: %s", exc, exc_info=True)
            servers = []
        self._servers = [s for s in servers if s.base_url]
        self.searched = True
        self._searching = False
        self.servers_changed.emit(self.servers)

    async def _gather(self) -> list[ServerEntry]:
        # Discovery talks through the openai SDK, whose import takes about a second of
        # CPU: it imports it in a worker thread, and only once a port answers (a local
        # port that refuses a connection is "not running" without it, see port_check).
        providers = await asyncio.to_thread(importlib.import_module,
                                            "desktop_agent.core.servers.discovery")

        custom = self.custom_servers()
        discovered, *probed = await asyncio.gather(
            providers.discover_servers(timeout=DISCOVERY_TIMEOUT, pool=self._pool),
            *(self._probe(providers, c) for c in custom), return_exceptions=True)
        found = [p for p in probed if isinstance(p, ServerEntry)]
        known = {p.base_url for p in found}
        if isinstance(discovered, BaseException):
            log.warning("discovery failed: %s", discovered)
            return found
        env_url = self.preselection.base_url
        for info in list(discovered):
            url = info.base_url.rstrip("/")
            if url in known:
                continue
            name = "From DESKTOP_AGENT_BASE_URL" if url == env_url and info.name == \
                info.base_url else info.name
            models = tuple(ModelChoice(m.id, m.context_length, m.vision) for m in info.chat_models)
            found.append(ServerEntry(name, url, bool(info.up), models, info.error))
        return found

    async def _probe(self, providers: Any, custom: dict[str, Any]) -> ServerEntry:
        url = str(custom["base_url"]).rstrip("/")
        key_name = custom.get("api_key_name")
        api_key = None
        if key_name:
            from desktop_agent.appdata.secrets import get_secret

            api_key = await asyncio.to_thread(get_secret, key_name)
        info = await providers.probe_server(url, name="Custom", api_key=api_key,
                                            timeout=OVERALL_TIMEOUT / 4, pool=self._pool)
        if key_name and api_key is None:
            error = "Its API key is gone (it was kept for one session only); add it again."
        else:
            error = info.error
        models = tuple(ModelChoice(m.id, m.context_length, m.vision) for m in info.chat_models)
        return ServerEntry("Custom", url, bool(info.up) and not error, models, error,
                           api_key_name=key_name, custom=True)


def normalise_url(text: str) -> str:
    """A server root URL from what a person typed (adds http:// and /v1 when missing)."""
    from urllib.parse import urlsplit

    url = text.strip()
    if not url:
        raise ValueError("Enter the server's URL, for example http://localhost:1234/v1.")
    if "://" not in url:
        url = "http://" + url
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        raise ValueError(f"That is not a URL ({exc}).") from exc
    if parts.scheme not in ("http", "https"):
        raise ValueError("The URL must start with http:// or https://.")
    if not host:
        raise ValueError("The URL needs a host name, for example http://localhost:1234/v1.")
    url = url.rstrip("/")
    if parts.path in ("", "/"):
        url += "/v1"
    return url
