"""CPU per streamed chunk with many replies at once: the core's Client against bare HTTP libraries.

The scripted model server runs in its own process (on another CPU where there
is one) and streams ``--streams`` replies of ``--tokens`` chunks, one every
``--delay`` seconds, as a busy local server would. This process reads them all
at once in these ways and prints the CPU time it spent per chunk:

- the core's ``Client`` (request, SSE decoding, aggregation: everything a turn does);
- the core's transport: ``open_stream``, the openai SDK (``AsyncOpenAI`` on its
  aiohttp backend) posting the prebuilt body, the core's own SSE reader decoding
  the lines;
- the transport before the SDK: bare aiohttp and the same reader;
- bare aiohttp, lines split and JSON decoded (no reader);
- bare httpx, the same work (what the SDK's default backend costs);
- bare asyncio streams with a hand-written chunked reader (a floor, not a client).

It prints the transport's ratio, SDK / bare aiohttp with the same reader
(target <= 1.1). The two transports live in one event loop and take turns
(``--rounds``, A B B A ...), each round all streams at once; the ratio is the
median of the rounds' ratios, so a shared machine getting busier or quieter
during the run moves both alike and a round hit by a burst of other work does
not decide it. The other ways run ``--runs`` times each.

What is left between the two transports is paid per request, not per chunk: the
core reads the body straight from the aiohttp response the SDK holds
(``core/wire/response_body.py``; the output says whether it did), so per chunk both
run the same code, while each request still builds openai's request options and
httpx2's Request and Response objects. The ratio therefore shrinks with longer
replies (``--tokens``). The latest figures are on docs/performance.md.

    python bench/http_chunk_cost.py [--streams 50] [--tokens 200] [--delay 0.005]
        [--runs 2] [--rounds 8]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import statistics
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import server_load  # the bench's own model-server helper

BODY = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}]}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _decode(block: bytes) -> None:
    for line in block.split(b"\n"):
        if line.startswith(b"data: {"):
            json.loads(line[6:])


async def _measured(streams: int, one: Callable[[], Awaitable[None]]) -> float:
    await asyncio.gather(*(one() for _ in range(streams)))  # warm: connections, imports
    gc.collect()  # the garbage of the ways before is not this one's to collect
    began = _cpu()
    await asyncio.gather(*(one() for _ in range(streams)))
    return _cpu() - began


async def through_client(url: str, streams: int) -> float:
    from desktop_agent import AgentOptions, Client
    from desktop_agent.core import ConnectionPool

    pool = ConnectionPool()
    clients = [Client(AgentOptions(model="m", base_url=url, connection_pool=pool))
               for _ in range(streams)]
    turns = iter(clients * 2)

    async def one() -> None:
        client = next(turns)
        await client.query("go")
        async for _ in client.receive_messages():
            pass

    try:
        return await _measured(streams, one)
    finally:
        for client in clients:
            await client.close()
        await pool.aclose()


Reply = Callable[[], Awaitable[None]]
Closer = Callable[[], Awaitable[None]]
SDK, BEFORE = "SDK + core reader", "aiohttp + core reader"

_DIRECT: set[bool] = set()
"""Whether the core's streams read the body straight from aiohttp (see core/wire/response_body)."""


async def _read_with_core_reader(stream: object) -> None:
    async for _ in stream.chunks():  # type: ignore[attr-defined]
        pass
    await stream.close()  # type: ignore[attr-defined]


async def _core_transport(url: str) -> tuple[Reply, Closer]:
    """What the core sends and reads with: ``open_stream`` (AsyncOpenAI's raw post), its reader."""
    from desktop_agent.core.wire.retry import RetryPolicy
    from desktop_agent.core.wire.transport import ModelHttp, open_stream

    http = ModelHttp(url, "", 60)
    retry = RetryPolicy()

    async def one() -> None:
        stream = await open_stream(http, BODY, base_url=url, api_key="", retry=retry)
        _DIRECT.add(getattr(stream, "direct", False))  # (absent before the short cut)
        await _read_with_core_reader(stream)

    return one, http.close


async def _aiohttp_transport(url: str) -> tuple[Reply, Closer]:
    """The transport before the SDK: an aiohttp post and the same reader."""
    import aiohttp

    from desktop_agent.core.wire.transport import ChatStream

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def one() -> None:
        response = await session.post(f"{url}/chat/completions", data=json.dumps(BODY).encode(),
                                      headers={"Content-Type": "application/json"})
        stream = ChatStream(response.content.iter_any(), url, None)
        async for _ in stream.chunks():
            pass
        response.release()

    return one, session.close


async def transports_side_by_side(url: str, streams: int, rounds: int) -> dict[str, list[float]]:
    """CPU seconds of the core's transport and the one before it, round by round.

    Both live in one event loop and take turns (A B B A ...), each round
    ``streams`` replies at once, so a shared machine getting busier or
    quieter during the run moves both alike.
    """
    made = {SDK: await _core_transport(url), BEFORE: await _aiohttp_transport(url)}
    seconds: dict[str, list[float]] = {name: [] for name in made}
    try:
        for one, _ in made.values():  # warm: connections, imports
            await asyncio.gather(*(one() for _ in range(streams)))
        for turn in range(rounds):
            for name in (SDK, BEFORE) if turn % 2 == 0 else (BEFORE, SDK):
                one = made[name][0]
                gc.collect()  # each round starts clean
                began = _cpu()
                await asyncio.gather(*(one() for _ in range(streams)))
                seconds[name].append(_cpu() - began)
    finally:
        for _, close in made.values():
            await close()
    return seconds


async def bare_aiohttp(url: str, streams: int) -> float:
    import aiohttp

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async def one() -> None:
            async with session.post(f"{url}/chat/completions", json=BODY) as response:
                async for block in response.content.iter_any():
                    _decode(block)

        return await _measured(streams, one)


async def bare_httpx(url: str, streams: int) -> float:
    import httpx

    limits = httpx.Limits(max_connections=None, max_keepalive_connections=streams)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        async def one() -> None:
            async with client.stream("POST", f"{url}/chat/completions", json=BODY) as response:
                async for block in response.aiter_raw():
                    _decode(block)

        return await _measured(streams, one)


async def bare_asyncio(url: str, streams: int) -> float:
    host, _, port = url.split("//")[1].split("/")[0].partition(":")
    payload = json.dumps(BODY).encode()

    async def one() -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: "
                     b"application/json\r\nContent-Length: %d\r\n\r\n%s"
                     % (host.encode(), len(payload), payload))
        await writer.drain()
        while await reader.readline() != b"\r\n":
            pass
        while size := int((await reader.readline()).strip(), 16):
            _decode(await reader.readexactly(size + 2))
        writer.close()

    return await _measured(streams, one)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.005)
    parser.add_argument("--runs", type=int, default=2, help="runs of the other ways")
    parser.add_argument("--rounds", type=int, default=8,
                        help="alternating rounds of the two transports")
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    model, url = server_load._start_model_server(args.tokens, args.delay)
    if len(cpus) >= 2:  # the model server on one CPU, the readers on another
        os.sched_setaffinity(model.pid, {cpus[0]})
        os.sched_setaffinity(0, {cpus[-1]})
    ways = [("Client (the core)", through_client), ("bare aiohttp", bare_aiohttp),
            ("bare httpx", bare_httpx), ("bare asyncio streams", bare_asyncio)]
    results: dict[str, list[float]] = {name: [] for name, _ in ways}
    chunks = args.streams * args.tokens
    try:
        for _ in range(args.runs):
            for name, way in ways:
                results[name].append(asyncio.run(way(url, args.streams)) / chunks * 1e6)
        paired = asyncio.run(transports_side_by_side(url, args.streams, args.rounds))
    finally:
        model.communicate("", timeout=30)
    print(f"{args.streams} streams x {args.tokens} chunks, one every {args.delay * 1000:g} ms; "
          f"CPU of this process per chunk (median of {args.runs} runs; the two transports: "
          f"of {args.rounds} alternating rounds in one event loop):")
    medians = {name: statistics.median(values) for name, values in results.items()}
    medians[SDK] = statistics.median(paired[SDK]) / chunks * 1e6
    medians[BEFORE] = statistics.median(paired[BEFORE]) / chunks * 1e6
    for name in ("Client (the core)", SDK, BEFORE, *[name for name, _ in ways[1:]]):
        print(f"  {name:<22} {medians[name]:6.1f} µs")
    # each round's pair ran back to back; the median of their ratios is not
    # moved by a round that a burst of other work on the machine hit
    rounds = sorted(sdk / before for sdk, before in zip(paired[SDK], paired[BEFORE], strict=True))
    ratio = statistics.median(rounds)
    direct = "sometimes" if len(_DIRECT) != 1 else "yes" if True in _DIRECT else "no"
    print(f"the core read the body straight from aiohttp (core/wire/response_body.py): {direct}")
    print(f"transport: SDK / bare aiohttp (same reader) = {ratio:.2f}  (target <= 1.1; "
          f"median of {len(rounds)} rounds, {rounds[0]:.2f} to {rounds[-1]:.2f})")


if __name__ == "__main__":
    main()
