"""Time to first token and tokens per second: ``Client`` versus raw ``AsyncOpenAI``.

Both paths stream the same greedy reply of exactly ``--tokens`` tokens
(``ignore_eos``) from one real llama.cpp ``llama-server`` serving SmolLM2-135M,
started here on a free port with the e2e tier's launcher and chat template.
Runs alternate, and the order flips every run, so drift on a busy machine
hits both paths alike. Prints medians and the ratios Client / raw.

A second part measures whether the prompt prefix stays cacheable: with
``cache_prompt`` on, the time to first token of turn 10 of a conversation
(the seven built-in tools, a system prompt, nine earlier turns) against a
fresh request holding only turn 10's new message. Target: at most 1.2x.

Needs the packages of ``.ci/install_llama.sh``::

    python bench/real_server.py [--runs 5] [--tokens 128] [--threads 2] [--part all|speed|cache]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e" / "llama"))

from llama_process import LlamaNotInstalled, start_server

from desktop_agent import AgentOptions, Client, TextBlock, ToolUseBlock, Usage

PROMPT = "Write a long story about a dragon who learns to bake bread."


@dataclass
class Run:
    """One streamed reply as a caller sees it."""

    first_token: float  # seconds from sending to the first text
    total: float  # seconds from sending to the end of the stream
    tokens: int  # completion tokens reported by the server
    pieces: int  # text deltas received
    client_tps: float  # (tokens - 1) / (last text - first text), measured here
    server_tps: float | None  # llama.cpp's own `timings.predicted_per_second`


def _request_extras() -> dict[str, object]:
    return {"ignore_eos": True, "seed": 1}


async def raw_sdk(base_url: str, tokens: int, shared: openai.AsyncOpenAI | None) -> Run:
    started = time.perf_counter()
    client = shared or openai.AsyncOpenAI(base_url=base_url, api_key="not-needed",
                                          max_retries=0)
    pieces = 0
    first = last = 0.0
    completion = 0
    server_tps = None
    stream = await client.chat.completions.create(
        model="smollm2", messages=[{"role": "user", "content": PROMPT}], stream=True,
        temperature=0.0, max_tokens=tokens, stream_options={"include_usage": True},
        extra_body=_request_extras())
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            now = time.perf_counter()
            first = first or now
            last = now
            pieces += 1
        if chunk.usage is not None:
            completion = chunk.usage.completion_tokens
            timings = (chunk.model_extra or {}).get("timings") or {}
            server_tps = timings.get("predicted_per_second")
    total = time.perf_counter() - started
    if shared is None:
        await client.close()
    return Run(first - started, total, completion, pieces,
               (completion - 1) / (last - first), server_tps)


async def through_client(base_url: str, tokens: int, shared: Client | None) -> Run:
    pieces = 0
    first = last = 0.0
    usage: Usage | None = None
    started = time.perf_counter()
    client = shared or Client(_options(base_url, tokens))
    client.message_history = []  # the same one-message prompt every run
    await client.query(PROMPT)
    async for item in client.receive_messages():
        if isinstance(item, TextBlock):
            now = time.perf_counter()
            first = first or now
            last = now
            pieces += 1
        elif isinstance(item, Usage):
            usage = item
    total = time.perf_counter() - started
    if shared is None:
        await client.close()
    assert usage is not None and usage.completion_tokens is not None
    completion = usage.completion_tokens
    return Run(first - started, total, completion, pieces,
               (completion - 1) / (last - first), usage.tokens_per_second)


def _options(base_url: str, tokens: int) -> AgentOptions:
    return AgentOptions(model="smollm2", base_url=base_url, temperature=0.0, max_tokens=tokens,
                        max_turns=None, extra_body=_request_extras())


def _median(runs: list[Run], field: str) -> float:
    return statistics.median(getattr(r, field) for r in runs)


async def measure(base_url: str, runs: int, tokens: int,
                  warm: bool) -> tuple[list[Run], list[Run]]:
    """Alternate the paths; ``warm`` reuses one client (and connection) per path."""
    raw_shared = openai.AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0) \
        if warm else None
    client_shared = Client(_options(base_url, tokens)) if warm else None
    await raw_sdk(base_url, tokens, raw_shared)  # warm up imports, the server, its cache
    await through_client(base_url, tokens, client_shared)
    raw_runs: list[Run] = []
    client_runs: list[Run] = []
    try:
        for index in range(runs):
            if index % 2 == 0:
                raw_runs.append(await raw_sdk(base_url, tokens, raw_shared))
                client_runs.append(await through_client(base_url, tokens, client_shared))
            else:
                client_runs.append(await through_client(base_url, tokens, client_shared))
                raw_runs.append(await raw_sdk(base_url, tokens, raw_shared))
    finally:
        if raw_shared is not None:
            await raw_shared.close()
        if client_shared is not None:
            await client_shared.close()
    return raw_runs, client_runs


def report(title: str, raw_runs: list[Run], client_runs: list[Run], tokens: int) -> None:
    counts = {r.tokens for r in raw_runs + client_runs}
    assert counts == {tokens}, f"both paths must get {tokens} tokens, got {counts}"
    print(f"\n{title}: {tokens} tokens per reply, {len(raw_runs)} runs per path (medians)")
    rows = (
        ("time to first token (ms)", "first_token", 1000.0),
        ("whole reply (ms)        ", "total", 1000.0),
        ("tokens/s seen by caller ", "client_tps", 1.0),
    )
    print(f"{'':25s}  {'raw AsyncOpenAI':>16s}  {'Client':>10s}  {'Client/raw':>10s}")
    for label, field, scale in rows:
        raw, ours = _median(raw_runs, field), _median(client_runs, field)
        print(f"{label} : {raw * scale:16.1f}  {ours * scale:10.1f}  {ours / raw:10.3f}")
    server = [r.server_tps for r in raw_runs + client_runs if r.server_tps]
    if server:
        print(f"server's own tokens/s     : {statistics.median(server):.1f} "
              "(llama.cpp timings; Client reports this figure as Usage.tokens_per_second)")
    print(f"text deltas per reply     : raw {_median(raw_runs, 'pieces'):.0f}, "
          f"Client {_median(client_runs, 'pieces'):.0f}")


CACHE_SYSTEM = "You are a helpful assistant. Answer in one short sentence."
CACHE_QUESTIONS = [f"Question {n}: name a fruit that starts with the letter {chr(65 + n)}."
                   for n in range(10)]


async def _first_token(client: Client, prompt: str) -> float:
    started = time.perf_counter()
    first = None
    await client.query(prompt)
    async for item in client.receive_messages():
        if first is None and isinstance(item, TextBlock | ToolUseBlock):
            first = time.perf_counter() - started
    return first if first is not None else time.perf_counter() - started


async def _timed_request(http: httpx.AsyncClient, request: dict[str, object]
                         ) -> tuple[float, dict[str, float]]:
    """(time to first token, llama.cpp's own ``timings``) of one streamed request."""
    body = {k: v for k, v in request.items() if k != "extra_body"}
    body.update(request.get("extra_body") or {})  # type: ignore[call-overload]
    started = time.perf_counter()
    first: float | None = None
    timings: dict[str, float] = {}
    async with http.stream("POST", "/chat/completions", json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            choices = chunk.get("choices") or []
            if first is None and choices and (choices[0].get("delta") or {}).get("content"):
                first = time.perf_counter() - started
            timings = chunk.get("timings") or timings
    return (first if first is not None else time.perf_counter() - started), timings


async def turn_ten_ratio(base_url: str, runs: int) -> None:
    """Turn-10 TTFT with the cached prefix vs a fresh prompt of only the new message.

    Turns 1-9 go through ``Client``; turn 10 is sent as the exact request
    ``Client`` would build (``request_build``), so llama.cpp's own ``timings``
    (tokens evaluated, tokens reused from the cache, prompt milliseconds) can
    be read: on a busy machine they say more than wall-clock times.
    """
    import tempfile

    from desktop_agent.core.request_build import build_request
    from desktop_agent.core.tooling.builtin import builtin_tools

    with tempfile.TemporaryDirectory() as folder:
        tools = builtin_tools(folder)
        options = AgentOptions(model="smollm2", base_url=base_url, temperature=0.0,
                               max_tokens=24, max_turns=None, system_prompt=CACHE_SYSTEM,
                               tools=tools, context_length=2048,
                               extra_body={"cache_prompt": True, "seed": 1})
        # fresh: evaluated from scratch (llama.cpp would otherwise restore it from its cache
        # of earlier prompts, and evaluate 1 token)
        fresh_options = AgentOptions(model="smollm2", base_url=base_url, temperature=0.0,
                                     max_tokens=24, max_turns=None,
                                     extra_body={"cache_prompt": False, "seed": 1})
        tenth: list[tuple[float, dict[str, float]]] = []
        fresh: list[tuple[float, dict[str, float]]] = []
        # a new connection per request: llama.cpp's HTTP server closes a kept-alive
        # connection after a few requests (or 5 idle seconds) without saying so, and a
        # request sent on it then fails with "server disconnected" (the app resends
        # such a request; this bare client does not)
        limits = httpx.Limits(max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=base_url, timeout=300, limits=limits) as http:
            for _ in range(runs):
                async with Client(options) as client:
                    for question in CACHE_QUESTIONS[:9]:
                        await _first_token(client, question)
                    history = [*client.history, {"role": "user", "content": CACHE_QUESTIONS[9]}]
                tenth.append(await _timed_request(http, build_request(options, history)))
                fresh.append(await _timed_request(http, build_request(
                    fresh_options, [{"role": "user", "content": CACHE_QUESTIONS[9]}])))

    def median(samples: list[tuple[float, dict[str, float]]], key: str | None) -> float:
        return statistics.median(s[0] * 1000 if key is None else float(s[1].get(key, 0))
                                 for s in samples)

    print(f"\nprompt cache ({runs} runs, medians): turn 10 of a conversation (system prompt, "
          "7 built-in tools, 9 earlier turns) vs a fresh prompt of only its new message")
    print(f"{'':36s} {'turn 10':>9s} {'fresh':>9s} {'ratio':>7s}")
    for label, key in (("time to first token (ms, wall)", None),
                       ("prompt eval (ms, llama.cpp timings)", "prompt_ms")):
        ours, base = median(tenth, key), median(fresh, key)
        print(f"{label:36s} {ours:9.1f} {base:9.1f} {ours / base:7.2f}  (target <= 1.2)")
    print(f"{'tokens evaluated (prompt_n)':36s} {median(tenth, 'prompt_n'):9.0f} "
          f"{median(fresh, 'prompt_n'):9.0f}")
    print(f"{'tokens reused from cache (cache_n)':36s} {median(tenth, 'cache_n'):9.0f} "
          f"{median(fresh, 'cache_n'):9.0f}")


async def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--part", choices=("all", "speed", "cache"), default="all")
    parser.add_argument("--flash-attn", choices=("auto", "on", "off"), default="auto",
                        help="llama.cpp's flash attention (its -fa)")
    args = parser.parse_args()
    try:
        server = start_server(threads=args.threads, flash_attn=args.flash_attn)
    except LlamaNotInstalled as exc:
        print(f"cannot run: {exc}", file=sys.stderr)
        return 2
    print("SmolLM2-135M Q4_1 on llama.cpp llama-server, "
          f"{args.threads} threads, flash attention {args.flash_attn}, greedy, ignore_eos")
    try:
        if args.part in ("all", "speed"):
            for warm, title in (
                    (False, "new client per reply (construction timed on both paths)"),
                    (True, "one client reused (keep-alive, as a conversation does)")):
                raw_runs, client_runs = await measure(server.base_url, args.runs, args.tokens,
                                                      warm)
                report(title, raw_runs, client_runs, args.tokens)
        if args.part in ("all", "cache"):
            await turn_ten_ratio(server.base_url, args.runs)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
