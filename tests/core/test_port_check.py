"""A local port that refuses a connection is known to be free without the SDK; nothing else is.

The server search (``core/servers/discovery.py``) skips the SDK only where this
says "refused"; any doubt must leave the address to the SDK's own request.
"""

from __future__ import annotations

import socket

import pytest

from desktop_agent.core.servers.port_check import refuses_connections

pytestmark = pytest.mark.timeout(60)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_closed_local_port_is_refused_by_address_and_by_name() -> None:
    port = _free_port()
    assert await refuses_connections(f"http://127.0.0.1:{port}/v1", 2.0)
    assert await refuses_connections(f"http://localhost:{port}/v1", 2.0)


async def test_a_listening_port_is_left_to_the_sdk() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert not await refuses_connections(f"http://127.0.0.1:{port}/v1", 2.0)


@pytest.mark.parametrize("url", [
    "http://192.0.2.1:1/v1",  # not this machine: a proxy or a route may answer for it
    "http://127.0.0.1:99999/v1",  # no such port: the SDK says what is wrong
    "not a url",
])
async def test_anything_but_a_local_address_is_left_to_the_sdk(url: str) -> None:
    assert not await refuses_connections(url, 2.0)


async def test_a_proxy_in_the_environment_leaves_every_address_to_the_sdk(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    assert not await refuses_connections(f"http://127.0.0.1:{_free_port()}/v1", 2.0)
