"""Whether anything listens at a local server's address, known without the openai SDK.

Why: the window searches the usual local ports (:mod:`.discovery`) right after
it opens, and on most of them nothing listens. Each probe went through the
server's ``AsyncOpenAI`` even then, so an idle window imported the whole SDK
stack (openai, pydantic, aiohttp, httpx2, httpcore2: about 25 MB of resident
memory, ``bench/startup.py``) only to learn that six ports refuse connections.
The kernel says that in a fraction of a millisecond: a TCP connection to a
loopback port where nothing listens is refused at once. So a probe first
asks that, and only an address that accepts a connection is then asked
through the SDK, whose client carries every request to a server as before.

The check is made only where its answer is certain and the SDK would have
gone straight to the same address: a loopback host, with no proxy named in
the environment (the SDK's clients honour ``HTTP(S)_PROXY``, and a proxy may
answer for an address this process cannot reach). Anything else (a refused
connection is the only "no") leaves the probe to the SDK.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import os
import socket
from urllib.parse import urlsplit

_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")

_UNUSABLE_HERE = frozenset({errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT, errno.ENETUNREACH})
"""Errors of an address this machine cannot use (``::1`` without IPv6): no answer either way."""


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _proxy_named() -> bool:
    return any(os.environ.get(name) or os.environ.get(name.upper())
               for name in _PROXY_VARIABLES)


def reached_directly(base_url: str) -> bool:
    """Whether ``base_url`` names a loopback address that no proxy stands in front of.

    Such an address is this machine's own server, spoken to as it is
    (:mod:`.local_json` lists its models without the SDK); anything else may
    need what the SDK's client adds (a proxy from the environment, Azure's
    headers).
    """
    try:
        host = urlsplit(base_url).hostname or ""
    except ValueError:
        return False
    return _loopback(host) and not _proxy_named()


async def refuses_connections(base_url: str, timeout: float) -> bool:
    """Whether ``base_url`` is a local address where nothing listens (connection refused).

    False whenever that is not certain: another host, a proxy in the
    environment, a URL without a port Python can tell, a connection that
    opens, times out or fails another way. A name with several addresses
    (``localhost``: ``::1`` and ``127.0.0.1``) is refused when one refuses and
    the others refuse too or cannot be used on this machine (no IPv6).
    """
    try:
        parts = urlsplit(base_url)
        host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False
    if not _loopback(host) or _proxy_named():
        return False
    try:
        async with asyncio.timeout(timeout):
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port, type=socket.SOCK_STREAM)
            refused = False
            for address in dict.fromkeys(str(info[4][0]) for info in infos):
                try:
                    _reader, writer = await asyncio.open_connection(address, port)
                except ConnectionRefusedError:
                    refused = True
                    continue
                except OSError as exc:
                    if exc.errno in _UNUSABLE_HERE:
                        continue
                    return False
                writer.close()
                with contextlib.suppress(OSError):  # closed from the other side: it listened
                    await writer.wait_closed()
                return False
    except (OSError, TimeoutError):
        return False
    return refused
