"""Seed example 5: the simple query, configured from the environment with fallbacks."""

import asyncio

from desktop_agent import AgentOptions, TextBlock, query
from desktop_agent.config import get_base_url, get_model


async def main() -> None:
    options = AgentOptions(
        system_prompt="You answer in one sentence.",
        model=get_model("qwen2.5-32b-instruct"),
        base_url=get_base_url(provider="lmstudio"),
    )
    print(f"model={options.model} url={options.base_url}")
    async for message in query("Say hello from the environment.", options):
        for block in message.content:
            if isinstance(block, TextBlock):
                print(block.text, end="", flush=True)
    print()


if __name__ == "__main__":
    asyncio.run(main())
