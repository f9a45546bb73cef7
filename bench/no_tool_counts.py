"""Offline: which BFCL requests the word rules hold to an answer, and the right tools they drop.

No model runs. For every case of BFCL's files outside the held-out part of
``bench/bfcl.py``'s picks (never looked at while tuning), the tools a first
constrained reply may call are the ones :func:`.tool_match.offered` leaves for the
case's request. Printed per category:

* ``irrelevance``: the requests left with no tool (right: no call can be made);
* every other category: the cases whose right tool (any function of BFCL's
  accepted calls) is not offered, which no reply can then get right.

A rule of ``tool_match.py`` is worth keeping when it turns more ``irrelevance``
requests to no tool while dropping next to no right tool. ``--save`` keeps the
case ids of a run and ``--compare`` prints which cases a later run turned either
way, so a rule's cost is named case by case::

    python bench/no_tool_counts.py --save before.json
    python bench/no_tool_counts.py --compare before.json --show-requests
    python bench/no_tool_counts.py --list irrelevance     # the requests still offered a tool

Needs bfcl-eval's data (see ``bench/bfcl.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bfcl

from desktop_agent.core.tooling import tool_match


def held_out_ids(category: str) -> set[str]:
    """The ids ``bench/bfcl.py`` holds out of its default picks of a category.

    Of ``live_irrelevance`` that is every one of its 30 picks (the untouched check);
    the file's other 854 requests are counted here.
    """
    return {case["id"] for case, _, _ in bfcl.load_cases(
        category, bfcl.DEFAULT_COUNTS[category], "held-out")}


def cases(category: str) -> list[tuple[dict[str, Any], list[Any]]]:
    """Every case of a category's file that is not held out, with its accepted calls."""
    data = resources.files("bfcl_eval") / "data"
    name = bfcl.CATEGORIES[category]
    questions = [json.loads(line) for line in (data / name).read_text().splitlines() if line]
    answers: dict[str, Any] = {}
    if category not in bfcl.NO_CALL:
        answers = {a["id"]: a["ground_truth"] for a in (
            json.loads(line) for line in
            (data / "possible_answer" / name).read_text().splitlines() if line)}
    held = held_out_ids(category)
    return [(q, answers.get(q["id"], [])) for q in questions if q["id"] not in held]


def offered_names(case: dict[str, Any], mapping: dict[str, str]) -> list[str]:
    """The tools the first constrained reply to the case's request may call."""
    _, user = bfcl.messages_of(case)
    tools = bfcl.tools_for(case["function"], mapping)
    return [tool.name for tool in tool_match.offered([{"role": "user", "content": user}],
                                                     tools)]


def right_names(answer: list[Any]) -> set[str]:
    """The functions BFCL's accepted calls use, named as the bench sends them."""
    return {name.replace(".", "_") for call in answer for name in call}


def count(mapping: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Per category: cases counted, and the ids held to no tool / whose right tool is lost."""
    out: dict[str, dict[str, Any]] = {}
    for category in bfcl.CATEGORIES:
        if category in bfcl.SHIFTED or category == "live_relevance":
            continue  # the same file as live_irrelevance; all 16 cases are untouched
        flagged: list[str] = []
        picked = cases(category)
        for case, answer in picked:
            names = offered_names(case, mapping)
            if category in bfcl.NO_CALL:
                if not names:
                    flagged.append(case["id"])
            elif not right_names(answer) <= set(names):
                flagged.append(case["id"])
        out[category] = {"cases": len(picked), "ids": flagged}
    return out


def request_of(category: str, case_id: str) -> str:
    for case, _ in cases(category):
        if case["id"] == case_id:
            return bfcl.messages_of(case)[1].replace("\n", " ")[:200]
    return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--save", type=Path, help="write the ids of this run here")
    parser.add_argument("--compare", type=Path, help="ids of an earlier --save run")
    parser.add_argument("--show-requests", action="store_true",
                        help="with --compare: print each changed case's request")
    parser.add_argument("--list", choices=[c for c in bfcl.CATEGORIES
                                                 if c not in ("live_relevance",
                                                              *bfcl.SHIFTED)],
                        help="print the cases of a category the rules get wrong, with "
                             "their requests (irrelevance: the ones offered a tool)")
    args = parser.parse_args()
    _, _, mapping = bfcl.load_checker()
    figures = count(mapping)
    lost_total = cases_total = 0
    for category, result in figures.items():
        flagged = len(result["ids"])
        if category in bfcl.NO_CALL:
            print(f"{category:<14} no tool offered: {flagged} of {result['cases']}")
        else:
            lost_total += flagged
            cases_total += result["cases"]
            print(f"{category:<14} right tool left out: {flagged} of {result['cases']}")
    print(f"{'other':<14} right tool left out: {lost_total} of {cases_total}")
    if args.compare:
        before = json.loads(args.compare.read_text())
        for category, result in figures.items():
            now, then = set(result["ids"]), set(before.get(category, {}).get("ids", []))
            for sign, ids in (("+", now - then), ("-", then - now)):
                for case_id in sorted(ids):
                    text = f": {request_of(category, case_id)}" if args.show_requests else ""
                    print(f"  {sign} {category} {case_id}{text}")
    if args.list:
        flagged = set(figures[args.list]["ids"])
        for case, _ in cases(args.list):
            wrong = (case["id"] not in flagged) if args.list in bfcl.NO_CALL \
                else case["id"] in flagged
            if wrong:
                names = offered_names(case, mapping)
                print(f"  {case['id']} {names}: "
                      f"{bfcl.messages_of(case)[1].replace(chr(10), ' ')[:300]}")
    if args.save:
        args.save.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
