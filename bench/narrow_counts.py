"""Offline: which BFCL cases :func:`.tool_match.by_thing` offers fewer tools, and at what cost.

No model runs. Over every case outside the bench's held-out third (as
``bench/no_tool_counts.py``), per category: the cases whose first reply is offered
fewer tools with the rule than without it, how many of those keep the right tool (the
gain a small model may turn into right picks), and how many lose it. ``--picks``
prints the ids of the picks whose offered tools change, the ones worth a model run
(tuning picks; of the bench's own set all of them, since its floors count them all);
``--lost`` prints the cases that lose the right tool.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bfcl
import no_tool_counts

from desktop_agent.core.tooling import tool_match


def without_rule(history: list[dict[str, Any]], tools: list[Any]) -> list[Any]:
    """What :func:`.tool_match.offered` left before the rule: the named tools, ordered."""
    request = tool_match.person_text(history)
    if not tool_match._judged_by_words(request):
        return list(tools)
    return tool_match.by_request(tool_match.named(request, tools), request)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--picks", action="store_true")
    parser.add_argument("--lost", action="store_true")
    args = parser.parse_args()
    _, _, mapping = bfcl.load_checker()
    for category in bfcl.CATEGORIES:
        if category in bfcl.NO_CALL or category in bfcl.SHIFTED or \
                category in bfcl.UNTOUCHED:
            continue
        fewer = kept = lost = 0
        for case, answer in no_tool_counts.cases(category):
            history = [{"role": "user", "content": bfcl.messages_of(case)[1]}]
            tools = bfcl.tools_for(case["function"], mapping)
            before = {t.name for t in without_rule(history, tools)}
            after = {t.name for t in tool_match.offered(history, tools)}
            right = no_tool_counts.right_names(answer)
            if len(after) < len(before):
                fewer += 1
                kept += right <= after
                if right <= before and not right <= after:
                    lost += 1
                    if args.lost:
                        print(f"  lost {case['id']}: {sorted(before)} -> {sorted(after)}")
        print(f"{category:<14} fewer tools: {fewer}, right tool kept: {kept}, "
              f"right tool lost: {lost}")
        if args.picks:
            ids = []
            part = "all" if category in bfcl.BENCH_SET else "tune"
            for case, _, _ in bfcl.load_cases(category, bfcl.DEFAULT_COUNTS[category],
                                              part):
                history = [{"role": "user", "content": bfcl.messages_of(case)[1]}]
                tools = bfcl.tools_for(case["function"], mapping)
                if {t.name for t in without_rule(history, tools)} != \
                        {t.name for t in tool_match.offered(history, tools)}:
                    ids.append(case["id"])
            print(f"  changed picks ({part}): {' '.join(ids)}")


if __name__ == "__main__":
    main()
