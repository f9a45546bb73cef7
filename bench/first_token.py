"""Time to the first token of turn 1 and turn 2, with the built-in tools, on the real SmolLM2.

A person trying SmolLM2 on a laptop waited 19-44 s for the first token: the
prompt (system prompt, the tools' schemas, the messages) is read before the
first word, and a CPU reads prompts far slower than it writes. From the second
request on, llama.cpp's prefix cache skips the part it has seen, if the prefix
is byte-identical. This prints, per arm and turn, the median time to the first
token, the prompt's size, and the tokens the server evaluated afresh vs reused
(llama.cpp's ``timings``):

* ``uncached``: every request with ``cache_prompt: false`` (what a prefix that
  changes from request to request, or a server without a prefix cache, costs);
* ``cached``: the app's requests as sent (``cache_prompt: true``, a stable prefix).

Turn 2's "new" tokens are its prompt minus turn 1's. Each run's system prompt is its own, so each
run's turn 1 starts cold. The same prompt sent twice is re-read for a few tokens
anyway (the ``floor``, measured first), so the reuse holds when turn 2
evaluated no more than its new tokens + 5 % + the floor. Medians of ``--runs`` runs on a shared
machine (its load is printed): read them as orders of magnitude.

    python bench/first_token.py [--runs 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e" / "llama"))

from llama_process import LlamaNotInstalled, start_server

from desktop_agent import AgentOptions, Client, Usage
from desktop_agent.core.servers import prompt_speed
from desktop_agent.core.servers.prompt_speed import slow_prompt
from desktop_agent.core.tooling import tool_call_mode
from desktop_agent.core.tooling.builtin import builtin_tools
from desktop_agent.core.tooling.schema_cost import schema_costs

PROMPTS = ("What is in this folder? Answer in one sentence.",
           "Thanks. Now suppose I want to add a small command-line tool that prints the "
           "largest files of this folder, sorted by size, with a flag for how many to show. "
           "Which files would you create first, and what would you name the flag?")
SYSTEM = "You are a helpful coding assistant working in the user's project folder."


async def one_run(base_url: str, model: str, folder: str, cached: bool, run: int,
                  ) -> list[Usage]:
    """Two turns of one new conversation; each turn's usage.

    Each run's system prompt starts with its own number: llama.cpp keeps earlier
    prompts in RAM (``--cache-ram``) and would otherwise start turn 1 warm.
    """
    options = AgentOptions(model=model, base_url=base_url, tools=builtin_tools(folder),
                           system_prompt=f"Session {run}. {SYSTEM}", max_tokens=32,
                           temperature=0,
                           auto_execute_tools=False, timeout=600.0,
                           extra_body={} if cached else {"cache_prompt": False})
    usages: list[Usage] = []
    async with Client(options) as client:
        for prompt in PROMPTS:
            await client.query(prompt)
            usages += [i async for i in client.receive_messages() if isinstance(i, Usage)]
    return usages


async def same_prompt_twice(base_url: str, model: str) -> int:
    """Tokens llama.cpp evaluates of a prompt it has just cached whole."""
    body = {"model": model, "max_tokens": 1, "temperature": 0, "cache_prompt": True,
            "messages": [{"role": "system", "content": SYSTEM},
                         {"role": "user", "content": PROMPTS[0]}]}
    async with httpx.AsyncClient(timeout=600) as http:
        for _ in range(2):
            reply = (await http.post(base_url + "/chat/completions", json=body)).json()
    return int(reply["timings"]["prompt_n"])


def _median(values: list[Any]) -> float:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else float("nan")


async def main(runs: int, threads: int) -> None:
    try:
        server = start_server(threads=threads, context_size=4096)
    except LlamaNotInstalled as exc:
        sys.exit(str(exc))
    try:
        with tempfile.TemporaryDirectory() as folder:
            schema = sum(c.tokens for c in schema_costs(builtin_tools(folder)))
            print(f"SmolLM2-135M on llama.cpp (xllamacpp), {threads} thread(s); "
                  f"7 built-in tools, {schema} schema tokens by the app's estimate")
            mode = await tool_call_mode.resolve(AgentOptions(
                model=server.model, base_url=server.base_url, tools=builtin_tools(folder)))
            print(f"tool-call mode: {mode.reason}")
            floor = await same_prompt_twice(server.base_url, server.model)
            print(f"floor: the same prompt sent twice re-reads {floor} token(s) of it")
            run = 0
            for cached in (False, True):
                results = []
                for _ in range(runs):
                    run += 1
                    results.append(await one_run(server.base_url, server.model, folder,
                                                 cached, run))
                label = "cached" if cached else "uncached"
                for turn in (0, 1):
                    usage = [r[turn] for r in results]
                    ttft = _median([u.time_to_first_token for u in usage])
                    size = _median([u.prompt_tokens for u in usage])
                    evaluated = _median([u.prompt_tokens_evaluated for u in usage])
                    reused = _median([u.cached_prompt_tokens for u in usage])
                    speed = _median([u.prompt_tokens_per_second for u in usage])
                    line = (f"{label:9s} turn {turn + 1}: first token {ttft:6.2f} s | prompt "
                            f"{size:5.0f} tokens: {evaluated:5.0f} evaluated, {reused:5.0f} "
                            f"reused | {speed:5.1f} prompt tokens/s")
                    if turn == 1:
                        new = _median([r[1].prompt_tokens - r[0].prompt_tokens for r in results
                                       if r[1].prompt_tokens and r[0].prompt_tokens])
                        held = evaluated <= new * 1.05 + floor
                        line += f" | new {new:.0f}: reuse {'held' if held else 'MISSED'}"
                    print(line)
            fixed = int(_median([r[0].prompt_tokens for r in results]))
            warning = slow_prompt(fixed, schema, prompt_speed.speed(server.base_url,
                                                                    server.model),
                                  server="llama.cpp", tool_count=7,
                                  constrained=mode.constrained)
            print("slow-prompt warning:", warning.sentence if warning else "none (under 5 s)")
    finally:
        server.stop()


def print_load() -> None:
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True,
                                  check=False).stdout.strip(), f"({os.cpu_count()} cores)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    arguments = parser.parse_args()
    print_load()
    asyncio.run(main(arguments.runs, arguments.threads))
    print_load()
