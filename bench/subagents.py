"""Subagents in parallel: three delegations at once on one llama.cpp server with three slots.

The main agent (on the scripted server, so its own replies cost nothing)
delegates in one reply to three subagents running SmolLM2-135M on a real
``llama-server`` started here with ``--parallel 3``. Each subagent writes
exactly ``--tokens`` tokens (``ignore_eos``). The same delegation is also run
for each subagent alone. Printed: the median wall time of each subagent alone,
of the three at once, and the ratio three-at-once / longest-alone (issue 45's
target: at most 1.5; 3.0 would mean no overlap at all).

Runs alternate (alone, together) so drift on a busy machine hits both alike.

Then the same three requests are sent straight to ``llama-server`` (no SDK,
no delegation: one HTTP request each, the same prompt and token count), alone
and at once, and the server's own ratio is printed beside the delegation's. It
is the floor no client can go under on this machine: on a CPU build a batch of
three sequences costs close to three times one once the cores are busy.

Needs the packages of ``.ci/install_llama.sh``::

    python bench/subagents.py [--runs 3] [--tokens 96] [--threads 1]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e" / "llama"))

from llama_process import MODEL_ALIAS, LlamaNotInstalled, start_server

from desktop_agent import AgentDefinition, AgentOptions, Client, SubagentBlock
from desktop_agent.testing import ScriptedServer, script

TOPICS = {"baker": "a dragon who learns to bake bread",
          "sailor": "a lighthouse keeper who finds a map",
          "gardener": "a robot who grows tomatoes on the moon"}


def options(server: ScriptedServer, llama_url: str, tokens: int) -> AgentOptions:
    writer = {name: AgentDefinition(f"Writes about {topic}.", "You write short stories.",
                                    model=MODEL_ALIAS, base_url=llama_url, max_turns=1)
              for name, topic in TOPICS.items()}
    return AgentOptions(model="main", base_url=server.base_url, agents=writer,
                        max_concurrent_subagents=3, max_tokens=tokens, temperature=0,
                        extra_body={"ignore_eos": True, "seed": 1, "cache_prompt": False},
                        auto_execute_tools=True, allowed_tools=["delegate"])


async def delegate(server: ScriptedServer, opts: AgentOptions,
                   names: list[str]) -> tuple[float, dict[str, float]]:
    """Wall time of one turn delegating to ``names`` at once, and each subagent's own."""
    server.enqueue(script.tool_calls([("delegate", {"agent": name,
                                                    "prompt": f"Write about {TOPICS[name]}."})
                                      for name in names]),
                   script.text("done"))
    each: dict[str, float] = {}
    started = time.perf_counter()
    async with Client(opts) as client:
        await client.query("Have the writers write.")
        async for item in client.receive_messages():
            if isinstance(item, SubagentBlock) and item.event == "finished":
                if item.error:
                    raise RuntimeError(f"{item.agent} failed: {item.error}")
                each[item.agent] = item.seconds
    return time.perf_counter() - started, each


async def measure(runs: int, tokens: int, threads: int) -> None:
    llama = start_server(context_size=2048 * 3, threads=threads, parallel=3)
    try:
        with ScriptedServer() as server:
            opts = options(server, llama.base_url, tokens)
            await delegate(server, opts, ["baker"])  # warm-up: loads, first prompt
            alone: dict[str, list[float]] = {name: [] for name in TOPICS}
            together: list[float] = []
            overlap: list[dict[str, float]] = []
            for run in range(runs):
                order = [False, True] if run % 2 == 0 else [True, False]
                for at_once in order:
                    if at_once:
                        wall, each = await delegate(server, opts, list(TOPICS))
                        together.append(wall)
                        overlap.append(each)
                    else:
                        for name in TOPICS:
                            alone[name].append((await delegate(server, opts, [name]))[0])
        floor = await server_floor(llama.base_url, tokens, runs)
    finally:
        llama.stop()
    medians = {name: statistics.median(times) for name, times in alone.items()}
    longest = max(medians.values())
    both = statistics.median(together)
    for name, seconds in medians.items():
        print(f"{name:10s} alone       {seconds:6.2f} s  ({tokens} tokens)")
    print(f"three at once          {both:6.2f} s  (3 slots, {threads} thread(s), {runs} runs)")
    # Each subagent's own time in the run at once: all near the wall time means they ran
    # side by side (the server shared its time between them); 1x, 2x, 3x means one by one.
    last = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in sorted(overlap[-1].items()))
    print(f"  each subagent's own time at once (last run): {last}")
    print(f"ratio at once / longest alone: {both / longest:.2f}  (target <= 1.5)")
    print(f"llama-server alone (no SDK): longest {floor[0]:.2f} s, three at once {floor[1]:.2f} s,"
          f" ratio {floor[1] / floor[0]:.2f}  (the floor on this machine)")
    print(f"  decode time reported by the server: {floor[2]:.0f} ms for one sequence alone,"
          f" {floor[3]:.0f} ms for three at once")


async def server_floor(base_url: str, tokens: int, runs: int) -> tuple[float, float, float, float]:
    """The same three requests straight to llama-server: alone and at once.

    Returns the medians of: the longest request alone, the three at once (wall),
    the server's decode time (``timings.predicted_ms``) of one alone and of the
    slowest of three at once.
    """
    async with httpx.AsyncClient(timeout=600) as http:
        async def one(name: str) -> tuple[float, float]:
            body = {"model": MODEL_ALIAS, "temperature": 0, "max_tokens": tokens, "seed": 1,
                    "ignore_eos": True, "cache_prompt": False,
                    "messages": [{"role": "system", "content": "You write short stories."},
                                 {"role": "user", "content": f"Write about {TOPICS[name]}."}]}
            started = time.perf_counter()
            reply = (await http.post(f"{base_url}/chat/completions", json=body)).json()
            return time.perf_counter() - started, float(reply["timings"]["predicted_ms"])

        alone: list[float] = []
        together: list[float] = []
        decode_alone: list[float] = []
        decode_together: list[float] = []
        for _run in range(runs):
            each = [await one(name) for name in TOPICS]
            alone.append(max(wall for wall, _ in each))
            decode_alone.append(max(ms for _, ms in each))
            started = time.perf_counter()
            each = await asyncio.gather(*(one(name) for name in TOPICS))
            together.append(time.perf_counter() - started)
            decode_together.append(max(ms for _, ms in each))
    return (statistics.median(alone), statistics.median(together),
            statistics.median(decode_alone), statistics.median(decode_together))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    try:
        asyncio.run(measure(args.runs, args.tokens, args.threads))
    except LlamaNotInstalled as exc:
        print(f"skipped: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
