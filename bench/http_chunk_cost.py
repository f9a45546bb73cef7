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
(target <= 1.1), as the median of each run's ratio (the two run one after the
other, so a machine that gets busier between runs moves both).

What the SDK costs, measured on the loaded 2-core machine by alternating the
ways in one process (``time.process_time`` over 1,000 requests each):

- per chunk, the SDK's wrapping of aiohttp's response: each block went through
  openai's vendored ``AiohttpResponseStream``, httpx2's ``BoundAsyncStream``
  and ``Response.aiter_raw``, ~3-4 µs per chunk at 50 streams. The core now
  reads the body from the aiohttp response the SDK holds
  (``core/wire/response_body.py``; the bench says whether it did), so per
  chunk the two paths run the same code;
- per request, openai's request options and request building and httpx2's
  Request and Response objects: ~0.55 ms of CPU more than a bare aiohttp post,
  i.e. ~2.8 µs per chunk at 200-chunk replies, the ratio's remaining gap; it
  shrinks with longer replies. It was ~0.65 ms before the core kept each
  path merged with the base URL (the SDK parsed both again for every request,
  ~45 µs) and closed a finished reply under a timeout scope instead of
  ``asyncio.wait_for`` (a task per reply on Python 3.11, ~40 µs).

Same machine, same load, 50 streams x 200 chunks (``--runs 3``): before,
1.26 (SDK + core reader 39.4 µs, aiohttp + core reader 31.3 µs; this
morning 1.23 on a quieter machine); after, 1.07 (38.1 against 34.3 µs,
runs 1.11, 1.03, 1.07). Before the SDK carried the requests, on the same
machine under the same load, the Client measured 66.5 µs and bare aiohttp
51.6 µs per chunk (commit 0641ca5).

    python bench/http_chunk_cost.py [--streams 50] [--tokens 200] [--delay 0.005] [--runs 2]
"""

from __future__ import annotations

import argparse
import asyncio
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


_DIRECT: set[bool] = set()
"""Whether the core's streams read the body straight from aiohttp (see core/wire/response_body)."""


async def _read_with_core_reader(stream: object) -> None:
    async for _ in stream.chunks():  # type: ignore[attr-defined]
        pass
    await stream.close()  # type: ignore[attr-defined]


async def sdk_transport(url: str, streams: int) -> float:
    """What the core sends and reads with: ``open_stream`` (AsyncOpenAI's raw post), its reader."""
    from desktop_agent.core.wire.retry import RetryPolicy
    from desktop_agent.core.wire.transport import ModelHttp, open_stream

    http = ModelHttp(url, "", 60)
    retry = RetryPolicy()

    async def one() -> None:
        stream = await open_stream(http, BODY, base_url=url, api_key="", retry=retry)
        _DIRECT.add(stream.direct)
        await _read_with_core_reader(stream)

    try:
        return await _measured(streams, one)
    finally:
        await http.close()


async def aiohttp_transport(url: str, streams: int) -> float:
    """The transport before the SDK: an aiohttp post and the same reader."""
    import aiohttp

    from desktop_agent.core.wire.transport import ChatStream

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async def one() -> None:
            response = await session.post(f"{url}/chat/completions", data=json.dumps(BODY).encode(),
                                          headers={"Content-Type": "application/json"})
            stream = ChatStream(response.content.iter_any(), url, None)
            async for _ in stream.chunks():
                pass
            response.release()

        return await _measured(streams, one)


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
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    model, url = server_load._start_model_server(args.tokens, args.delay)
    if len(cpus) >= 2:  # the model server on one CPU, the readers on another
        os.sched_setaffinity(model.pid, {cpus[0]})
        os.sched_setaffinity(0, {cpus[-1]})
    ways = [("Client (the core)", through_client),
            ("SDK + core reader", sdk_transport),
            ("aiohttp + core reader", aiohttp_transport),
            ("bare aiohttp", bare_aiohttp),
            ("bare httpx", bare_httpx), ("bare asyncio streams", bare_asyncio)]
    results: dict[str, list[float]] = {name: [] for name, _ in ways}
    try:
        for _ in range(args.runs):
            for name, way in ways:
                seconds = asyncio.run(way(url, args.streams))
                results[name].append(seconds / (args.streams * args.tokens) * 1e6)
    finally:
        model.communicate("", timeout=30)
    print(f"{args.streams} streams x {args.tokens} chunks, one every {args.delay * 1000:g} ms; "
          f"CPU of this process per chunk (median of {args.runs} runs):")
    medians = {name: statistics.median(values) for name, values in results.items()}
    for name, value in medians.items():
        print(f"  {name:<22} {value:6.1f} µs")
    # each run's two transports ran one after the other: their ratio is paired,
    # so a machine that got busier between runs moves both
    ratios = [sdk / bare for sdk, bare in zip(results["SDK + core reader"],
                                               results["aiohttp + core reader"], strict=True)]
    ratio = statistics.median(ratios)
    direct = "sometimes" if len(_DIRECT) != 1 else "yes" if True in _DIRECT else "no"
    print(f"the core read the body straight from aiohttp (core/wire/response_body.py): {direct}")
    print(f"transport: SDK / bare aiohttp (same reader) = {ratio:.2f}  (target <= 1.1; "
          f"per run: {', '.join(f'{r:.2f}' for r in ratios)})")


if __name__ == "__main__":
    main()
