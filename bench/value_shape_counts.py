"""Offline: which string arguments get a shape from their description, and what it refuses.

No model runs. For every case of BFCL's files with accepted calls, outside the
held-out part of ``bench/bfcl.py``'s picks (never looked at while tuning), each
string parameter of the case's tools (nested ones too, as the grammar holds them)
is read by :func:`.value_shapes.shape`. Printed per category:

* ``params``: string parameters of the tools offered (one per case and tool);
* ``shaped``: those given a pattern, by shape;
* ``answered``: shaped parameters that BFCL's accepted calls give a value;
* ``refused``: accepted values the pattern would refuse (an empty string among
  them means "may be left out", which the grammar still allows, so it is not
  counted), and the cases where a shaped parameter's every accepted value is
  refused and leaving it out is not accepted: no reply can then get that case right.

A shape is worth keeping when ``lost`` stays at next to none. ``--ids`` prints the
ids of the bench's picked cases (``--slice all``, the bench's own set only) whose
request the shapes change, for ``bench/bfcl.py --ids``; ``--show`` prints each
refused value with its description::

    python bench/value_shape_counts.py
    python bench/value_shape_counts.py --show
    python bench/value_shape_counts.py --ids

Needs bfcl-eval's data (see ``bench/bfcl.py``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bfcl
from no_tool_counts import held_out_ids

from desktop_agent.core.tooling import value_shapes

#: The categories whose cases have accepted calls (irrelevance has none; the untouched
#: check is never read).
ANSWERED = ("simple", "multiple", "parallel", "live_simple", "live_multiple",
            "live_parallel")
_SHAPE_NAMES = {value_shapes.PLACE: "place", value_shapes.CLOCK: "HH:MM"}


def cases(category: str) -> list[tuple[dict[str, Any], list[Any]]]:
    """Every case of a category's file that is not held out, with its accepted calls."""
    data = resources.files("bfcl_eval") / "data"
    name = bfcl.CATEGORIES[category]
    questions = [json.loads(line) for line in (data / name).read_text().splitlines() if line]
    answers = {a["id"]: a["ground_truth"] for a in (
        json.loads(line) for line in
        (data / "possible_answer" / name).read_text().splitlines() if line)}
    held = held_out_ids(category)
    return [(q, answers.get(q["id"], [])) for q in questions if q["id"] not in held]


def shaped(schema: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any], str | None]]:
    """Each string parameter under a schema: its path, its schema and its pattern."""
    if not isinstance(schema, dict):
        return
    if schema.get("type") == "string":
        yield path, schema, value_shapes.shape(schema)
    for name, value in (schema.get("properties") or {}).items():
        yield from shaped(value, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from shaped(schema["items"], f"{path}[]")


def accepted(arguments: dict[str, Any], path: str) -> list[Any] | None:
    """The accepted values at a parameter's path in one accepted call (None: not named).

    BFCL lists each argument's accepted values; a nested object's accepted values are
    objects whose own arguments are lists again, and an array's are lists.
    """
    steps = path.strip(".").split(".")
    values: list[Any] = [arguments]
    for step in steps:
        items = step.endswith("[]")
        key = step.removesuffix("[]")
        found: list[Any] = []
        for value in values:
            if isinstance(value, dict) and key in value:
                inner = value[key]
                found += inner if isinstance(inner, list) else [inner]
        if items:
            found = [element for value in found if isinstance(value, list)
                     for element in value]
        values = found
        if not values:
            return None
    return values


def count(show: bool = False) -> dict[str, dict[str, Any]]:
    """Per category: the parameters shaped, the accepted values refused, the cases lost."""
    _, _, mapping = bfcl.load_checker()
    out: dict[str, dict[str, Any]] = {}
    for category in ANSWERED:
        figures: dict[str, Any] = {"cases": 0, "params": 0, "shaped": Counter(),
                                   "answered": 0, "values": 0, "refused": 0,
                                   "lost": [], "changed": []}
        for case, answer in cases(category):
            figures["cases"] += 1
            tools = {tool.name: tool for tool in bfcl.tools_for(case["function"], mapping)}
            changed = False
            for tool in tools.values():
                for path, schema, pattern in shaped(tool.input_schema):
                    figures["params"] += 1
                    if pattern is None:
                        continue
                    changed = True
                    figures["shaped"][_SHAPE_NAMES.get(pattern, pattern)] += 1
                    for call in answer:
                        for name, arguments in call.items():
                            if name.replace(".", "_") != tool.name:
                                continue
                            values = accepted(arguments, path)
                            if values is None:
                                continue
                            figures["answered"] += 1
                            strings = [v for v in values if isinstance(v, str) and v]
                            refused = [v for v in strings
                                       if not re.fullmatch(pattern, v)]
                            figures["values"] += len(strings)
                            figures["refused"] += len(refused)
                            if refused and len(refused) == len(strings) and "" not in values:
                                figures["lost"].append(case["id"])
                            if refused and show:
                                print(f"  {category} {case['id']} {tool.name}{path}: refused "
                                      f"{refused} of {values}\n    "
                                      f"{schema.get('description', '')[:200]}")
            if changed:
                figures["changed"].append(case["id"])
        out[category] = figures
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", action="store_true", help="print each refused value")
    parser.add_argument("--ids", action="store_true",
                        help="print the bench's own picked cases whose request changes")
    args = parser.parse_args()
    figures = count(args.show)
    for category, f in figures.items():
        shapes = ", ".join(f"{name} {n}" for name, n in f["shaped"].most_common())
        print(f"{category:<14} cases {f['cases']:>5}  params {f['params']:>6}  "
              f"shaped {sum(f['shaped'].values()):>5} ({shapes or '-'})  "
              f"answered {f['answered']:>4}  values {f['values']:>4}  "
              f"refused {f['refused']:>3}  lost {len(set(f['lost']))}  "
              f"changed cases {len(f['changed'])}")
    if args.ids:
        for category in bfcl.BENCH_SET:
            picked = {case["id"] for case, _, _ in bfcl.load_cases(
                category, bfcl.DEFAULT_COUNTS[category], "all")}
            ids = [i for i in figures[category]["changed"] if i in picked]
            held = held_out_ids(category)
            ids += [i for i in sorted(picked & held) if _changes(category, i)]
            print(f"{category}: {' '.join(sorted(set(ids)))}")


def _changes(category: str, case_id: str) -> bool:
    """Whether a held-out case of the bench's own set gets a shape (ids only, never shown)."""
    _, _, mapping = bfcl.load_checker()
    for case, _, _ in bfcl.load_cases(category, bfcl.DEFAULT_COUNTS[category], "all"):
        if case["id"] == case_id:
            return any(pattern for tool in bfcl.tools_for(case["function"], mapping)
                       for _, _, pattern in shaped(tool.input_schema))
    return False


if __name__ == "__main__":
    main()
