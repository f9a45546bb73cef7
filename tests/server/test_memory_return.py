"""Memory freed by an eviction goes back to the system, not only to the allocator."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from desktop_agent.server.memory_return import can_return_memory

_CHILD = r"""
import json, os
from desktop_agent.server.memory_return import return_freed_memory

def rss_mb():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

start = rss_mb()
# What a busy hour leaves: many mid-sized strings (tool output, events), a few still alive.
blocks = [("line %d " % i) * 200 for i in range(60000)]
survivors = blocks[::1000]
peak = rss_mb()
del blocks
freed = rss_mb()
return_freed_memory()
print(json.dumps({"start": start, "peak": peak, "freed": freed, "trimmed": rss_mb()}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or not can_return_memory(),
                    reason="malloc_trim is glibc's; elsewhere nothing is returned")
def test_freed_objects_leave_the_resident_set():
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                         check=True).stdout
    rss = json.loads(out)
    grown = rss["peak"] - rss["start"]
    assert grown > 50, rss  # the allocation was real
    assert rss["trimmed"] - rss["start"] < grown / 4, f"the pages stayed resident: {rss}"
