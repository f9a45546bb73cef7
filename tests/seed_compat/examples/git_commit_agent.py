"""Seed example 7: write a commit message for the staged changes of a git repository."""

import argparse
import asyncio
import subprocess
import sys

from desktop_agent import AgentOptions, TextBlock, query
from desktop_agent.config import get_base_url, get_model

SYSTEM = ("You write conventional commit messages: a 'type(scope): summary' line, a blank "
          "line, then short bullet points.")


def staged_diff(repo: str) -> str:
    done = subprocess.run(["git", "diff", "--cached", "--stat", "--patch"], cwd=repo,
                          capture_output=True, text=True, check=True)
    return done.stdout


async def suggest(diff: str) -> str:
    options = AgentOptions(system_prompt=SYSTEM, model=get_model("qwen2.5-7b"),
                           base_url=get_base_url(provider="lmstudio"), max_tokens=500,
                           temperature=0.3)
    message = ""
    async for msg in query(f"Write a commit message for this diff:\n\n{diff[:8000]}", options):
        for block in msg.content:
            if isinstance(block, TextBlock):
                message += block.text
    return message.strip()


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", default=".")
    args = parser.parse_args()
    diff = staged_diff(args.repo)
    if not diff.strip():
        print("No staged changes: run git add first.")
        return 1
    files = sum(1 for line in diff.splitlines() if line.startswith("diff --git"))
    print(f"Found staged changes in {files} file(s)")
    print("Suggested commit message:")
    print(await suggest(diff))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
