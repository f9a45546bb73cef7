"""CPU per streamed chunk for a window's few replies: the SDK on aiohttp against httpx2.

    python bench/window_stream_cpu.py [--streams 1 3] [--tokens 400] [--delay 0.005]
        [--rounds 6]

Why the window streams replies on aiohttp: aiohttp and what it loads are ~7-10 MB of
resident memory (``bench/startup.py``), so a window imports it for its first streamed
reply only (``core/wire/split_transport.py``: a server search's requests, read whole,
go through httpx2). This prints what streaming on httpx2 instead would cost where a
window streams: the core's ``Client`` reading
1 and 3 replies at once from the scripted model server (its own process, on
another CPU where there is one), CPU of this process per chunk on each backend
(rounds alternate, the median of each), and the extra share of one CPU core the
httpx2 backend takes while the replies stream at ``1 / --delay`` chunks per second.

The SDK's requests were to cost no more CPU than the transport before them (issue 31),
so the window streams on aiohttp and pays its memory once it streams. The latest
figures are on docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import server_load  # the bench's own model-server helper
from http_chunk_cost import through_client  # the Client reading N replies, CPU seconds

from desktop_agent.core.wire import http_backend


def per_chunk_us(url: str, streams: int, tokens: int, aiohttp: bool) -> float:
    http_backend.prefer_aiohttp = aiohttp
    return asyncio.run(through_client(url, streams)) / (streams * tokens) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--tokens", type=int, default=400)
    parser.add_argument("--delay", type=float, default=0.005)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    model, url = server_load._start_model_server(args.tokens, args.delay)
    if len(cpus) >= 2:  # the model server on one CPU, the reader on another
        os.sched_setaffinity(model.pid, {cpus[0]})
        os.sched_setaffinity(0, {cpus[-1]})
    figures: dict[tuple[int, bool], list[float]] = {}
    try:
        for streams in args.streams:
            for n in range(args.rounds):  # A B B A ...: drift on a shared machine hits both
                order = (True, False) if n % 2 == 0 else (False, True)
                for aiohttp in order:
                    figures.setdefault((streams, aiohttp), []).append(
                        per_chunk_us(url, streams, args.tokens, aiohttp))
    finally:
        model.communicate("", timeout=30)
    rate = 1 / args.delay
    print(f"Client CPU per chunk, {args.tokens} chunks per reply, one every "
          f"{args.delay * 1000:g} ms (median of {args.rounds} rounds):")
    for streams in args.streams:
        on_aiohttp = statistics.median(figures[(streams, True)])
        on_httpx2 = statistics.median(figures[(streams, False)])
        extra = (on_httpx2 - on_aiohttp) * 1e-6 * rate * streams
        print(f"  {streams} repl{'y' if streams == 1 else 'ies'} at once: aiohttp "
              f"{on_aiohttp:5.1f} µs, httpx2 {on_httpx2:5.1f} µs "
              f"({on_httpx2 / on_aiohttp:.2f}x); httpx2 takes {extra:.1%} more of one core "
              f"while they stream")
    return 0


if __name__ == "__main__":
    sys.exit(main())
