"""Seed example 6: strict configuration: both values must come from the environment."""

import asyncio
import sys

from desktop_agent import AgentOptions, TextBlock, query
from desktop_agent.config import get_base_url, get_model


async def main() -> int:
    model = get_model()
    if model is None:
        print("Set OPEN_AGENT_MODEL (and OPEN_AGENT_BASE_URL) first.", file=sys.stderr)
        return 2
    options = AgentOptions(system_prompt="You are terse.", model=model, base_url=get_base_url())
    print(f"Using {model} at {options.base_url}")
    text = ""
    async for message in query("strict env check", options):
        for block in message.content:
            if isinstance(block, TextBlock):
                text += block.text
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
