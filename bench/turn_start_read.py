"""What a turn's start reads from the store, as one conversation grows.

    python bench/turn_start_read.py [--turns 50 100 200 333]

A turn reads the conversation's active branch back to its newest compaction's
end (``Store.active_path(enough=tail_enough)``); between turns the tab holds
none of it. This writes a conversation shaped as ``soak_window.py``'s (an
answer of 10,900 characters a turn; every third turn a tool call and the
2,000-line ``bash`` result; each reply keeps a compaction whose view starts two
turns back, as an 8,192-token window compacts it) to a temporary SQLite store
and prints, at each ``--turns`` length, the messages read, the peak of Python
allocations the read makes (tracemalloc) and its wall time: the whole branch
(what a turn's start read before) and the tail a turn reads now. The figures
are on docs/performance.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

ANSWER = ("## Step\n\nRead the file **one row at a time**.\n\n```python\nx = 1\n```\n"
          * 200)[:10900]
BASH = "".join(f"line {n} of the build log\n" for n in range(1, 2001))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[50, 100, 200, 333])
    args = parser.parse_args()
    from desktop_agent.session import tail_enough
    from desktop_agent.store import Store

    with tempfile.TemporaryDirectory() as folder:
        store = Store.open(Path(folder) / "data.db")
        conversation = store.create_conversation("turn start read")
        turns = 0
        history = 0  # messages of the model's history so far
        starts: list[tuple[str, int]] = []  # each turn's user message and its history index
        for target in sorted(args.turns):
            while turns < target:
                turns += 1
                prompt = store.add_message(conversation.id,
                                           {"role": "user", "content": f"Turn {turns}: explain"})
                starts.append((prompt.id, history))
                history += 1
                if turns % 3 == 0:
                    call = {"id": f"call{turns}", "type": "function",
                            "function": {"name": "bash", "arguments": "{}"}}
                    store.add_message(conversation.id, {"role": "assistant", "content": "",
                                                        "tool_calls": [call]})
                    store.add_message(conversation.id, {"role": "tool", "content": BASH,
                                                        "tool_call_id": f"call{turns}"})
                    history += 2
                first, covered = starts[max(0, len(starts) - 2)]
                metadata = {"compaction": {"messages": covered, "anchor": None, "from": first,
                                           "mode": "drop_oldest", "dropped": covered}
                            } if covered else {}
                store.add_message(conversation.id, {"role": "assistant", "content": ANSWER},
                                  metadata=metadata)
                history += 1
            for name, read in (("whole", lambda: store.active_path(conversation.id)),
                               ("tail ", lambda: store.active_path(conversation.id,
                                                                   enough=tail_enough))):
                tracemalloc.start()
                started = time.perf_counter()
                branch = read()
                spent = time.perf_counter() - started
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                print(f"{turns:5d} turns, {name}: {len(branch):5d} messages read at a turn's "
                      f"start, peak {peak / 2**20:5.1f} MB of Python allocations, "
                      f"{spent * 1000:4.0f} ms (under tracing)")
                del branch
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
