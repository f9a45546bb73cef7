"""How busy the machine is right now, to stretch waits written for an idle one.

Why: the smoke test (``desktop-agent --smoke-test``) and the tests that run
it wait for each step with a deadline. A deadline written for an idle machine
failed a smoke test that was only slow, on a machine busy with other work.
As the llama.cpp tests stretch their waits by how much slower the server
generates than on an idle core, these stretch theirs by how much less of a
core this process gets: a short CPU-bound sample, its wall time over the CPU
time this thread was given. An idle core gives about 1; four processes
sharing one core give about 4. It measures contention, not a slow CPU.
"""

from __future__ import annotations

import time

#: Wall time of the sample (seconds): long enough to span a few scheduler slices.
SAMPLE_SECONDS = 0.25
#: A stretch beyond this is a machine too busy to test on; waits stop growing there.
MOST = 12.0


def busy_factor(sample_seconds: float = SAMPLE_SECONDS) -> float:
    """How many times longer CPU-bound work takes here now than on an idle core (1 to MOST)."""
    started_wall, started_cpu = time.perf_counter(), time.thread_time()
    count = 0
    while time.perf_counter() - started_wall < sample_seconds:
        for _ in range(2_000):
            count += 1
    wall = time.perf_counter() - started_wall
    cpu = time.thread_time() - started_cpu
    return max(1.0, min(MOST, wall / max(cpu, 1e-6)))


def stretched(seconds: float, factor: float) -> float:
    """``seconds`` for an idle machine, stretched for one ``factor`` times busier."""
    return seconds * max(1.0, factor)
