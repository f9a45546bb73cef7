"""Seed example 8: summarise a log file's errors and ask the model for causes."""

import argparse
import asyncio
import re
import sys
from collections import Counter

from desktop_agent import AgentOptions, TextBlock, query
from desktop_agent.config import get_base_url, get_model

LEVEL = re.compile(r"\b(ERROR|WARN(?:ING)?|INFO|DEBUG)\b")


def summarise(lines: list[str]) -> tuple[Counter[str], Counter[str]]:
    levels: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for line in lines:
        found = LEVEL.search(line)
        if not found:
            continue
        level = found.group(1).replace("WARNING", "WARN")
        levels[level] += 1
        if level == "ERROR":
            errors[line[found.end():].strip(" :-").split(":")[0]] += 1
    return levels, errors


def read_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        return handle.read().splitlines()


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("logfile")
    args = parser.parse_args()
    lines = read_lines(args.logfile)
    levels, errors = summarise(lines)
    print(f"Total entries: {len(lines)}")
    print(f"Errors: {levels['ERROR']}  Warnings: {levels['WARN']}")
    for pattern, count in errors.most_common(3):
        print(f"  - {pattern}: {count} occurrences")
    options = AgentOptions(system_prompt="You are an SRE. Suggest likely causes and fixes.",
                           model=get_model("qwen2.5-7b"), base_url=get_base_url())
    prompt = "Top errors:\n" + "\n".join(f"{p} x{c}" for p, c in errors.most_common(5))
    print("ANALYSIS REPORT:")
    async for msg in query(prompt, options):
        for block in msg.content:
            if isinstance(block, TextBlock):
                print(block.text, end="")
    print()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
