"""The context's caches remember counts and cuts, not the texts they were made from.

A conversation lets its history go between turns (the window and ``serve``);
caches keyed by the messages' texts kept every message (and the last 256 big
tool results of the process) in memory all the same.
"""

from __future__ import annotations

import tracemalloc

from desktop_agent.core.context.prompt_size import TokenCounter
from desktop_agent.core.context.result_budget import cut_result
from desktop_agent.core.context.tokens import count_text_tokens

BIG = 400_000  # characters of each text


def _held_after(make_and_drop: object) -> int:
    count_text_tokens("the tokenizer is loaded before measuring")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        make_and_drop()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_a_token_counter_keeps_counts_not_messages() -> None:
    counter = TokenCounter()
    counts: list[int] = []

    def count() -> None:
        for i in range(10):
            message = {"role": "tool", "content": f"result {i}\n" + "row of output\n" * (BIG // 14)}
            counts.append(counter.message(message))
            assert counter.message(dict(message)) == counts[-1]  # an equal copy: remembered

    held = _held_after(count)
    assert held < BIG, f"{held:,} bytes still held after counting ten texts of {BIG:,}"
    assert len(set(counts)) == 1 and counts[0] > 1000


def test_cut_results_are_remembered_without_the_results() -> None:
    cuts: list[str] = []

    def cut() -> None:
        for i in range(10):
            output = f"build {i}\n" + "".join(f"line {n} of the log\n" for n in range(BIG // 20))
            cuts.append(cut_result(output, 200, "bash"))
            assert cut_result(output, 200, "bash") == cuts[-1]
            small = f"small {i}"
            assert cut_result(small, 200, "bash") is small  # fits: given back whole

    held = _held_after(cut)
    kept = sum(len(c) for c in cuts)
    assert held < kept * 4 + 100_000, f"{held:,} bytes held for {kept:,} characters of cuts"
    assert all("Result truncated" in c and len(c) < 2_000 for c in cuts)
