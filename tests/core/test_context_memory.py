"""What the request's helpers remember between turns holds no message text.

A conversation's client lives as long as the conversation is in use, and ``serve``
lets each conversation's history go between turns: a cache keyed by the texts
would keep every message alive anyway.
"""

from __future__ import annotations

import gc
import tracemalloc

from desktop_agent.core.context.prompt_size import TokenCounter
from desktop_agent.core.context.result_budget import cut_result

BIG = 100_000
"""Characters of each message: 20 of them held would be 2 MB."""


def test_counts_and_cuts_are_remembered_without_the_texts() -> None:
    counter = TokenCounter()
    counter.message({"role": "tool", "content": "warm up " * 100})  # loads what counting needs
    cut_result("warm up " * 10_000, 100, "bash")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        counts, cuts = [], []
        for n in range(20):
            text = f"output {n}\n" + "line of a long command output\n" * (BIG // 30)
            message = {"role": "tool", "content": text}
            counts.append(counter.message(message))
            cuts.append(cut_result(text, 100, "bash"))
        del text, message
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # What the calls return is kept by the test: the cut heads (~400 characters each).
    assert held < 400_000, f"{held:,} bytes still held after counting 20 big messages"
    again = "output 7\n" + "line of a long command output\n" * (BIG // 30)
    assert counter.message({"role": "tool", "content": again}) == counts[7]
    assert cut_result(again, 100, "bash") == cuts[7]
    assert "Result truncated to fit the context" in cuts[7]
