"""Clients sharing one ConnectionPool: one AsyncOpenAI per model server, reused connections."""

from __future__ import annotations

import pytest

from desktop_agent.core import Client, ConnectionPool, TextBlock
from desktop_agent.testing import ScriptedServer, script

pytestmark = pytest.mark.timeout(60)


async def _reply(client: Client, prompt: str) -> str:
    await client.query(prompt)
    items = [i async for i in client.receive_messages()]
    return "".join(i.text for i in items if isinstance(i, TextBlock))


async def test_many_clients_share_one_pool_per_server(server, make_options):
    pool = ConnectionPool(max_connections=4)
    try:
        replies = []
        for n in range(20):
            server.enqueue(script.text(f"reply {n}", pieces=2))
            client = Client(make_options(connection_pool=pool))
            replies.append(await _reply(client, f"hi {n}"))
            await client.close()  # leaves the shared connections open for the next one
        assert replies == [f"reply {n}" for n in range(20)]
        assert len(pool) == 1
        shared = pool.client(server.base_url)
        assert not shared.is_closed()
        assert pool.client(server.base_url + "/") is shared

        with ScriptedServer() as other:
            other.enqueue(script.text("from the other server"))
            client = Client(make_options(connection_pool=pool, base_url=other.base_url))
            assert await _reply(client, "hi") == "from the other server"
            await client.close()
            assert len(pool) == 2 and pool.client(other.base_url) is not shared
    finally:
        await pool.aclose()
    assert shared.is_closed()
    with pytest.raises(RuntimeError, match="closed"):
        pool.client(server.base_url)


async def test_switching_server_keeps_the_shared_client_open(server, make_options):
    pool = ConnectionPool()
    try:
        server.enqueue(script.text("one"), script.text("two"))
        client = Client(make_options(connection_pool=pool))
        assert await _reply(client, "a") == "one"
        client.update_options(make_options(connection_pool=pool, base_url=server.base_url + "/"))
        assert await _reply(client, "b") == "two"
        await client.close()
        assert not pool.client(server.base_url).is_closed()
    finally:
        await pool.aclose()
