"""Which HTTP library carries the openai SDK's requests, and the errors each one raises.

The app installs ``aiohttp`` (the ``aiohttp`` extra, part of ``[app]``) and the SDK
then streams replies on aiohttp (other requests go through httpx2, see
:mod:`~desktop_agent.core.wire.split_transport`): aiohttp's HTTP parser is written
in C, and at 50 concurrent streams it costs ~40 µs less CPU per chunk than httpx
(``bench/http_chunk_cost.py``). ``pip install desktop-agent`` alone leaves aiohttp
out (its eight packages would take the SDK past 20) and the SDK runs on its own
httpx2 backend, which a script streaming a few replies does not notice.

Code that needs to recognise a transport failure (a refused connection, a server
that hung up, a timeout) asks here rather than importing aiohttp itself, so the
SDK alone never imports a library it does not have.
"""

from __future__ import annotations

import functools
import importlib.util
import sys

prefer_aiohttp = True
"""Use aiohttp when it is installed (tests set this False to run the httpx2 backend)."""


@functools.cache
def aiohttp_installed() -> bool:
    """Whether aiohttp can be imported (the app's install; the SDK alone leaves it out)."""
    return importlib.util.find_spec("aiohttp") is not None


def use_aiohttp() -> bool:
    """Whether new clients run on the SDK's aiohttp backend."""
    return prefer_aiohttp and aiohttp_installed()


def _aiohttp_errors(*names: str) -> tuple[type[BaseException], ...]:
    """Aiohttp's exception classes by name, if aiohttp is imported (whatever the backend).

    Not imported, it has raised nothing: the app imports it for its first streamed
    reply (:mod:`~desktop_agent.core.wire.split_transport`), not to recognise errors.
    """
    aiohttp = sys.modules.get("aiohttp")
    found = (getattr(aiohttp, name, None) for name in names)  # None: still being imported
    return tuple(error for error in found if error is not None)


def transport_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean the connection failed (on either backend)."""
    import httpx2

    return (httpx2.TransportError, OSError, *_aiohttp_errors("ClientError"))


def refused_errors() -> tuple[type[BaseException], ...]:
    """Errors in a failure's cause chain that mean nothing listens at the address."""
    return (ConnectionRefusedError, *_aiohttp_errors("ClientConnectorError"))


def timeout_errors() -> tuple[type[BaseException], ...]:
    """Errors in a failure's cause chain that mean the server did not answer in time."""
    import httpx2

    return (TimeoutError, httpx2.TimeoutException, *_aiohttp_errors("ServerTimeoutError"))


def is_hang_up(error: BaseException) -> bool:
    """Whether ``error`` says the server closed the connection before any response byte.

    aiohttp raises ``ServerDisconnectedError``; httpx2 a ``RemoteProtocolError``
    ("Server disconnected without sending a response").
    """
    if isinstance(error, _aiohttp_errors("ServerDisconnectedError")):
        return True
    name = type(error).__name__
    return name == "RemoteProtocolError" and "without sending a response" in str(error)
