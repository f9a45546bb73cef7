"""Offline: the accepted calls the needed-value rule would refuse, and the placeholders.

No model runs. For every case of BFCL's files with accepted calls, outside the
held-out part of ``bench/bfcl.py``'s picks (never looked at while tuning), each of
BFCL's accepted calls is built with the first value it accepts for each argument
(an empty string means "may be left out": the argument is left out) and judged as
a constrained reply's call is, against the case's request:

* ``refused``: cases with a call that
  :func:`~desktop_agent.core.wire.call_lists.invents_needed` judges to fill a value
  the tool needs with one nobody gave;
* ``placeholder``: cases with a call that
  :func:`~desktop_agent.core.wire.call_lists.placeholder` judges to hold nothing the
  person gave.

Either is then not run: the request goes again held to an answer. A right call
refused here is a right call the rule costs, so a rule is worth keeping when these
stay at next to none. (The model may write a right value in another form than the
first accepted one; that is measured with the model, ``bench/bfcl.py``.) ``--show``
prints each refused case with its request and the call::

    python bench/needed_value_counts.py
    python bench/needed_value_counts.py --show

Needs bfcl-eval's data (see ``bench/bfcl.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bfcl
from no_tool_counts import cases

from desktop_agent.core.wire.call_lists import Said, invents_needed, placeholder

CATEGORIES = ("simple", "multiple", "parallel", "live_simple", "live_multiple",
              "live_parallel")


def accepted_calls(answer: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """BFCL's accepted calls, each argument given its first accepted value, named as sent."""
    out: list[tuple[str, dict[str, Any]]] = []
    for call in answer:
        for name, arguments in call.items():
            built: dict[str, Any] = {}
            for key, values in arguments.items():
                accepted = values if isinstance(values, list) else [values]
                given = [value for value in accepted if value != "" and value is not None]
                if given:
                    built[key] = given[0]
            out.append((name.replace(".", "_"), built))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", action="store_true",
                        help="print each refused case: its request and the call")
    args = parser.parse_args()
    _, _, mapping = bfcl.load_checker()
    refused_total = placeholder_total = cases_total = 0
    for category in CATEGORIES:
        refused = placeholders = 0
        picked = cases(category)
        for case, answer in picked:
            _, user = bfcl.messages_of(case)
            said = Said([{"role": "user", "content": user}],
                        bfcl.tools_for(case["function"], mapping))
            calls = accepted_calls(answer)
            invented = [(name, arguments) for name, arguments in calls
                        if invents_needed(name, arguments, said)]
            placeholders += any(placeholder(name, arguments, said) for name, arguments in calls)
            if invented:
                refused += 1
                if args.show:
                    request = user.replace("\n", " ")[:160]
                    print(f"  {case['id']}: {request} | {json.dumps(invented[0])[:200]}")
        refused_total += refused
        placeholder_total += placeholders
        cases_total += len(picked)
        print(f"{category:<14} refused {refused} of {len(picked)}, placeholder {placeholders}")
    print(f"{'all':<14} refused {refused_total} of {cases_total}, "
          f"placeholder {placeholder_total}")


if __name__ == "__main__":
    main()
