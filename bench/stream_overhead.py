"""Streaming cost of the core versus the raw openai SDK on the same 20,000-chunk reply.

Both paths read the same scripted reply from the same local server in one
run; runs alternate so drift on a busy machine hits both alike. Prints each
median and the ratio Client / raw (target: <= 0.35). The Client sends through
the same SDK (raw body, its own SSE reader), so the ratio is what the SDK's
typed chunk objects cost.

    python bench/stream_overhead.py [--chunks 20000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import openai

from desktop_agent import AgentOptions, Client, TextBlock
from desktop_agent.testing import ScriptedServer, script


async def raw_sdk(base_url: str) -> tuple[float, int]:
    client = openai.AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
    started = time.perf_counter()
    text = []
    stream = await client.chat.completions.create(
        model="test-model", messages=[{"role": "user", "content": "go"}], stream=True,
        stream_options={"include_usage": True})
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text.append(chunk.choices[0].delta.content)
    elapsed = time.perf_counter() - started
    await client.close()
    return elapsed, len("".join(text))


async def through_client(base_url: str) -> tuple[float, int]:
    options = AgentOptions(model="test-model", base_url=base_url, max_tokens=None)
    async with Client(options) as client:
        started = time.perf_counter()
        await client.query("go")
        text = [b.text async for b in client.receive_messages() if isinstance(b, TextBlock)]
        elapsed = time.perf_counter() - started
    return elapsed, len("".join(text))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    reply = " ".join(f"w{i}" for i in range(args.chunks))
    with ScriptedServer() as server:
        server.responder = lambda body: script.text(reply)
        await raw_sdk(server.base_url)  # warm up imports and the server
        await through_client(server.base_url)
        raw_times, client_times = [], []
        for _ in range(args.runs):
            t, n_raw = await raw_sdk(server.base_url)
            raw_times.append(t)
            t, n_client = await through_client(server.base_url)
            client_times.append(t)
    assert n_raw == n_client == len(reply), "both paths must receive the whole reply"
    raw, ours = statistics.median(raw_times), statistics.median(client_times)
    print(f"chunks per reply        : {args.chunks}")
    for label, value in (("raw AsyncOpenAI (median)", raw), ("Client (median)         ", ours)):
        print(f"{label}: {value * 1000:8.1f} ms  ({value / args.chunks * 1e6:.1f} us/chunk)")
    print(f"ratio Client / raw      : {ours / raw:.3f}  (target <= 0.35)")


if __name__ == "__main__":
    asyncio.run(main())
