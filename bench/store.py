"""Conversation store figures: open a long conversation, autosave cost, search.

Run: python3 bench/store.py [--messages 10000] [--search-messages 100000]

Prints, against the targets in the issue:
- time to open a 10,000-message conversation (fresh Store.open + the last page
  of the active branch, as the window does), target < 100 ms;
- per-message autosave cost: add_message (a sent message) and
  checkpoint_message (a streaming reply growing), p50/p99, target p99 < 2 ms;
- FTS search over 100,000 messages, target < 50 ms;
- what the Store's public names cost over calling its parts directly (a ratio,
  ideally 1.0: each name is its part's bound method after first use).
Everything runs on a real SQLite file in a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from desktop_agent.store import NewConversation, NewMessage, Store

WORDS = (
    "agent",
    "model",
    "tool",
    "call",
    "weather",
    "paris",
    "python",
    "sqlite",
    "window",
    "approve",
    "deny",
    "stream",
    "token",
    "context",
    "server",
    "local",
    "llama",
    "qwen",
    "mistral",
    "file",
    "shell",
    "search",
    "branch",
    "export",
    "import",
    "keyring",
    "heron",
    "river",
    "mountain",
    "coffee",
    "recipe",
    "invoice",
    "travel",
    "train",
    "budget",
    "garden",
    "music",
    "guitar",
    "physics",
    "orbit",
    "planet",
    "comet",
    "galaxy",
    "protein",
    "enzyme",
    "graph",
    "matrix",
    "vector",
    "lemma",
    "proof",
)


def sentence(rng: random.Random, n: int = 30) -> str:
    return " ".join(rng.choice(WORDS) + str(rng.randrange(50)) for _ in range(n))


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def long_conversation(rng: random.Random, count: int) -> NewConversation:
    messages = [
        NewMessage(
            key=str(i),
            parent_key=str(i - 1) if i else None,
            message={"role": "user" if i % 2 == 0 else "assistant", "content": sentence(rng)},
            metadata={"model": "bench"} if i % 2 else {},
        )
        for i in range(count)
    ]
    return NewConversation(title="long", settings={"model": "bench"}, messages=messages)


def bench_open(folder: Path, count: int, page: int) -> None:
    rng = random.Random(1)
    path = folder / "open.sqlite3"
    with Store.open(path) as store:
        (record,) = store.insert_conversations([long_conversation(rng, count)])
    times, full = [], []
    for _ in range(20):
        start = time.perf_counter()
        store = Store.open(path)
        shown = store.active_path(record.id, limit=page)
        times.append(time.perf_counter() - start)
        start = time.perf_counter()
        everything = store.active_path(record.id)
        full.append(time.perf_counter() - start)
        store.close()
    assert len(shown) == page and len(everything) == count
    median = statistics.median(times)
    print(
        f"open a {count}-message conversation (Store.open + last {page}): "
        f"median {ms(median)}, worst {ms(max(times))}  (target < 100 ms: "
        f"{'OK' if median < 0.1 else 'MISSED'})"
    )
    print(
        f"  for comparison, reading the whole {count}-message branch: "
        f"median {ms(statistics.median(full))} "
        f"({statistics.median(full) / max(median, 1e-9):.1f}x the first page)"
    )


def bench_autosave(folder: Path, samples: int) -> None:
    rng = random.Random(2)
    with Store.open(folder / "autosave.sqlite3") as store:
        conv = store.create_conversation("autosave")
        adds = []
        for _ in range(samples):
            message = {"role": "user", "content": sentence(rng, 40)}
            start = time.perf_counter()
            store.add_message(conv.id, message)
            adds.append(time.perf_counter() - start)
        reply = store.add_message(conv.id, {"role": "assistant", "content": ""}, status="streaming")
        checkpoints = []
        text = ""
        for _ in range(samples):
            text += sentence(rng, 8) + " "
            start = time.perf_counter()
            store.checkpoint_message(reply.id, text[-4000:], thinking="thinking " * 20)
            checkpoints.append(time.perf_counter() - start)
        start = time.perf_counter()
        store.complete_message(reply.id, {"role": "assistant", "content": text})
        complete = time.perf_counter() - start
    for name, values in (
        ("add_message (sent/complete message)", adds),
        ("checkpoint_message (streaming reply)", checkpoints),
    ):
        p99 = percentile(values, 99)
        print(
            f"autosave {name}: p50 {ms(percentile(values, 50))}, p99 {ms(p99)}, "
            f"p99.9 {ms(percentile(values, 99.9))}, max {ms(max(values))} over {len(values)}"
            f"  (target p99 < 2 ms: {'OK' if p99 < 0.002 else 'MISSED'})"
        )
    print(f"  complete_message of a {len(text)} character reply: {ms(complete)}")


def bench_search(folder: Path, total: int) -> None:
    rng = random.Random(3)
    path = folder / "search.sqlite3"
    per = 1000
    with Store.open(path) as store:
        start = time.perf_counter()
        batch = []
        for c in range(total // per):
            messages = [
                NewMessage(
                    key=str(i),
                    parent_key=str(i - 1) if i else None,
                    message={"role": "user", "content": sentence(rng)},
                )
                for i in range(per)
            ]
            batch.append(NewConversation(title=f"conv {c}", settings={}, messages=messages))
            if len(batch) == 10:
                store.insert_conversations(batch)
                batch = []
        if batch:
            store.insert_conversations(batch)
        build = time.perf_counter() - start
        # A rare word planted in a few messages, like a person looking for one chat.
        conv = store.create_conversation("needle")
        store.add_message(conv.id, {"role": "user", "content": "the zanzibar itinerary"})
    print(f"  (built {total} messages in {build:.1f} s)")
    queries = ["zanzibar", "heron12 river", "coffee", "gal", "python3 sqlite7 window"]
    with Store.open(path) as store:
        for query in queries:
            times = []
            for _ in range(7):
                start = time.perf_counter()
                hits = store.search(query, limit=50)
                times.append(time.perf_counter() - start)
            median = statistics.median(times)
            print(
                f"search {query!r} over {total + 1} messages: median {ms(median)}, "
                f"{len(hits)} hits shown  (target < 50 ms: {'OK' if median < 0.05 else 'MISSED'})"
            )
        for query in ("zanzibar", "coffee"):
            times = []
            for _ in range(7):
                start = time.perf_counter()
                store.list_conversations(query=query)
                times.append(time.perf_counter() - start)
            print(
                f"sidebar list_conversations(query={query!r}): "
                f"median {ms(statistics.median(times))}"
            )


def bench_part_methods(folder: Path, calls: int = 100_000) -> None:
    """One cheap read (who holds a turn lease) through the Store's name and through its part."""
    with Store.open(folder / "facade.sqlite3") as store:
        part = store._cross  # the part behind store.turn_lease_holder
        through_store, direct = [], []
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(calls):
                store.turn_lease_holder("none")  # the name resolved per call, as callers do
            through_store.append((time.perf_counter() - start) / calls)
            start = time.perf_counter()
            for _ in range(calls):
                part.turn_lease_holder("none")
            direct.append((time.perf_counter() - start) / calls)
    best_store, best_part = min(through_store), min(direct)
    print(
        f"store.turn_lease_holder: {best_store * 1e6:.2f} us per call; its part directly "
        f"{best_part * 1e6:.2f} us ({best_store / best_part:.2f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--page", type=int, default=50)
    parser.add_argument("--autosave-samples", type=int, default=5000)
    parser.add_argument("--search-messages", type=int, default=100_000)
    args = parser.parse_args()
    if hasattr(os, "getloadavg"):
        cores = os.cpu_count() or 1
        print(
            f"(machine: {cores} cores, load average {os.getloadavg()[0]:.1f} at start;"
            " tail latencies grow when other work competes for the cores)"
        )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bench_open(folder, args.messages, args.page)
        bench_autosave(folder, args.autosave_samples)
        bench_search(folder, args.search_messages)
        bench_part_methods(folder)


if __name__ == "__main__":
    main()
