"""Tool-call accuracy on the Berkeley Function Calling Leaderboard's own cases and checker.

Runs a fixed public subset of BFCL (the first ``--simple`` / ``--multiple`` /
``--parallel`` cases of ``BFCL_v4_simple_python``, ``BFCL_v4_multiple`` and
``BFCL_v4_parallel``, by id order, as shipped in the ``bfcl-eval`` package) against
a llama.cpp server (the e2e tier's SmolLM2-135M, started here unless ``--base-url``
names one) and scores each reply with BFCL's AST checker. Prints, per category,
accuracy and median latency for:

* ``raw``: ``AsyncOpenAI`` with ``tools=`` and the model's native calls;
* ``sdk-default``: ``Client`` with default options (``constrained_tool_calls="auto"``);
* ``native``: ``Client`` with ``constrained_tool_calls=False``;
* ``constrained``: ``Client`` with ``constrained_tool_calls=True``.

Target on SmolLM2-135M (issue 30): the default at least 55 % simple, 25 % multiple and
20 % parallel, each at least the best explicit mode. Accuracy does not depend on the
machine's load (requests are greedy and read afresh), so the figures of one run hold;
the latest are on docs/performance.md::

    python bench/bfcl.py --max-tokens 128 --modes sdk-default constrained native
    python bench/bfcl.py --simple 12 --multiple 10 --parallel 8 --max-tokens 128   # quick set

``sdk-default`` sends the same requests as ``constrained`` on llama.cpp (it finds a
grammar server and a model not known to call natively); ``native`` and ``raw`` score
nothing with this model, which never writes a native call. How a reply is read (a list
of calls, the run-on calls dropped) is explained in
``desktop_agent/core/tooling/constrained_calls.py`` and ``core/wire/call_lists.py``.
``--show-misses`` prints each missed case, the calls made and the ones BFCL accepts.

Needs the packages of ``.ci/install_llama.sh`` and bfcl-eval's data and checker. The
checker needs none of bfcl-eval's many dependencies (torch, provider SDKs), which
are left out::

    pip install --no-deps "bfcl-eval==2026.3.23"
    python bench/bfcl.py [--simple 80] [--multiple 79] [--parallel 39] [--modes ...]

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
import json
import re
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

from llama_process import LlamaNotInstalled, start_server

from desktop_agent import AgentOptions, Client, Tool, ToolUseBlock
from desktop_agent.core.tooling import tool_call_mode
from desktop_agent.core.wire.retry import RetryPolicy

CATEGORIES = {"simple": "BFCL_v4_simple_python.json", "multiple": "BFCL_v4_multiple.json",
              "parallel": "BFCL_v4_parallel.json"}
DEFAULT_COUNTS = {"simple": 80, "multiple": 79, "parallel": 39}  # the run
MODES = ("raw", "sdk-default", "native", "constrained")
MODEL_NAME = "desktop-agent-bench"
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
    seconds: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)


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


def load_cases(category: str, count: int) -> list[tuple[dict[str, Any], list[Any]]]:
    """The first ``count`` cases of a category with their possible answers."""
    data = resources.files("bfcl_eval") / "data"
    name = CATEGORIES[category]
    questions = [json.loads(line) for line in (data / name).read_text().splitlines() if line]
    answers = {a["id"]: a["ground_truth"] for a in (
        json.loads(line) for line in (data / "possible_answer" / name).read_text().splitlines()
        if line)}
    return [(q, answers[q["id"]]) for q in questions[:count]]


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
                    max_tokens: int, mode: str) -> list[dict[str, Any]]:
    """The calls ``Client`` gives for one case under a mode."""
    system, user = messages_of(case)
    setting: bool | str = {"sdk-default": "auto", "native": False, "constrained": True}[mode]
    options = AgentOptions(model=model, base_url=base_url, system_prompt=system, tools=tools,
                           temperature=0.0, max_tokens=max_tokens, timeout=600.0,
                           constrained_tool_calls=setting,  # type: ignore[arg-type]
                           retry=RetryPolicy(max_retries=0), extra_body=dict(FRESH))
    async with Client(options) as client:
        await client.query(user)
        return [{b.name: b.input} async for b in client.receive_messages()
                if isinstance(b, ToolUseBlock)]


async def run(args: argparse.Namespace, base_url: str, model: str) -> None:
    checker, language, mapping = load_checker()
    counts = {"simple": args.simple, "multiple": args.multiple, "parallel": args.parallel}
    scores = {(m, c): Score() for m in args.modes for c in CATEGORIES}
    for category, count in counts.items():
        for case, answer in load_cases(category, count):
            tools = tools_for(case["function"], mapping)
            for mode in args.modes:
                score = scores[(mode, category)]
                started = time.perf_counter()
                output: list[dict[str, Any]] | None = None
                try:
                    if mode == "raw":
                        output = await raw_calls(base_url, model, case, tools, args.max_tokens)
                    else:
                        output = await sdk_calls(base_url, model, case, tools,
                                                 args.max_tokens, mode)
                    verdict = checker(case["function"], output, answer, language, category,
                                      MODEL_NAME) if output else {
                        "valid": False, "error_type": "no call"}
                except Exception as exc:  # noqa: BLE001  (a case's failure is its score)
                    verdict = {"valid": False, "error_type": type(exc).__name__}
                score.seconds.append(time.perf_counter() - started)
                score.total += 1
                if verdict.get("valid"):
                    score.right += 1
                else:
                    kind = str(verdict.get("error_type", "wrong"))
                    score.errors[kind] = score.errors.get(kind, 0) + 1
                    if args.show_misses:
                        show_miss(case, mode, kind, output, answer)
            if args.verbose:
                print(f"  {case['id']}: " + "  ".join(
                    f"{m} {scores[(m, category)].right}/{scores[(m, category)].total}"
                    for m in args.modes), flush=True)
    report(scores, args.modes)


def show_miss(case: dict[str, Any], mode: str, kind: str,
              output: list[dict[str, Any]] | None, answer: list[Any]) -> None:
    """One missed case: what was asked, what the mode called, what BFCL accepts."""
    _, user = messages_of(case)
    print(f"  MISS {case['id']} [{mode}] {kind}\n    asked: {user[:300]}\n"
          f"    got ({len(output or [])}): {json.dumps(output, ensure_ascii=False)[:600]}\n"
          f"    want ({len(answer)}): {json.dumps(answer, ensure_ascii=False)[:600]}",
          flush=True)


def report(scores: dict[tuple[str, str], Score], modes: list[str]) -> None:
    print(f"\n{'mode':<13}" + "".join(f"{c:>24}" for c in CATEGORIES))
    for mode in modes:
        cells = []
        for category in CATEGORIES:
            s = scores[(mode, category)]
            if not s.total:
                cells.append(f"{'-':>24}")
                continue
            median = statistics.median(s.seconds)
            cells.append(f"{100 * s.right / s.total:6.1f} % ({s.right:>2}/{s.total:<2}) "
                         f"{median:5.2f} s")
        print(f"{mode:<13}" + "".join(f"{c:>24}" for c in cells))
    print("\n(accuracy by BFCL's AST checker; median seconds per case)")
    for mode in modes:
        for category in CATEGORIES:
            errors = scores[(mode, category)].errors
            if errors:
                common = ", ".join(f"{k} {v}" for k, v in sorted(
                    errors.items(), key=lambda kv: -kv[1])[:3])
                print(f"  {mode} / {category} misses: {common}")
    if "sdk-default" in modes:
        explicit = [m for m in modes if m in ("native", "constrained")]
        for category in CATEGORIES:
            default = scores[("sdk-default", category)]
            if not default.total or not explicit:
                continue
            best = max(scores[(m, category)].right / max(1, scores[(m, category)].total)
                       for m in explicit)
            ratio = default.right / default.total
            print(f"  {category}: default {100 * ratio:.1f} % vs best explicit mode "
                  f"{100 * best:.1f} %")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--simple", type=int, default=DEFAULT_COUNTS["simple"])
    parser.add_argument("--multiple", type=int, default=DEFAULT_COUNTS["multiple"])
    parser.add_argument("--parallel", type=int, default=DEFAULT_COUNTS["parallel"])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--base-url", help="a running llama.cpp server (default: start one)")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--verbose", action="store_true", help="print scores after each case")
    parser.add_argument("--show-misses", action="store_true",
                        help="print each missed case: the calls made and the ones accepted")
    args = parser.parse_args()
    load_checker()  # fail early, in words, before a server starts
    if args.base_url:
        asyncio.run(run(args, args.base_url, args.model))
        return
    try:
        server = start_server(threads=args.threads)
    except LlamaNotInstalled as exc:
        sys.exit(f"bench/bfcl.py: {exc}")
    try:
        tool_call_mode.forget()
        asyncio.run(run(args, server.base_url, server.model))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
