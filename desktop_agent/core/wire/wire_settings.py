"""What the wire reads of an agent's settings: the server, the key, limits, retries.

``AgentOptions`` (:mod:`desktop_agent.core.options`) is the one public object
that holds every setting, and it is built from every wing's types (tools,
hooks, the retry policy...). A wing that imported it would depend on every
other wing. So each wing declares the settings it reads as a Protocol of its
own (this one; the context's
:class:`~desktop_agent.core.context.context_settings.ContextSettings`; the
tooling's :class:`~desktop_agent.core.tooling.tooling_settings.ToolingSettings`)
and ``AgentOptions`` has each of them by its fields: a wing knows only what is
below it, and mypy refuses a wing that reads a setting it did not declare.
The members are read-only: a wing reads settings, it never changes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from desktop_agent.core.wire.connection_pool import ConnectionPool
    from desktop_agent.core.wire.retry import RetryPolicy

TextDeltaMode = Literal["auto", "incremental", "cumulative"]
"""``AgentOptions.text_delta_mode``: how a server streams text (see :mod:`.stream`)."""
TextToolCalls = Literal["auto", "off"]
"""``AgentOptions.text_tool_calls``: whether calls written as text are read."""


class WireSettings(Protocol):
    """The settings a request to the server is sent and its reply read with.

    Each member is the ``AgentOptions`` field of the same name, documented there.
    """

    @property
    def model(self) -> str: ...

    @property
    def base_url(self) -> str: ...

    @property
    def api_key(self) -> str: ...

    @property
    def timeout(self) -> float: ...

    @property
    def retry(self) -> RetryPolicy: ...

    @property
    def max_tokens(self) -> int | None: ...

    @property
    def extra_body(self) -> Mapping[str, Any]: ...

    @property
    def extra_headers(self) -> Mapping[str, str]: ...

    @property
    def text_delta_mode(self) -> TextDeltaMode: ...

    @property
    def connection_pool(self) -> ConnectionPool | None: ...
