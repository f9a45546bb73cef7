"""Seed example 1: one streamed query against a local LM Studio server."""

import asyncio

from desktop_agent import AgentOptions, query
from desktop_agent.config import get_base_url


async def main() -> None:
    options = AgentOptions(
        system_prompt="You are a careful copy editor.",
        model="qwen2.5-32b-instruct",
        base_url=get_base_url(provider="lmstudio"),  # http://localhost:1234/v1 unless set
        max_turns=1,
        temperature=0.1,
    )
    answer = ""
    async for msg in query(prompt="Tidy this sentence: the cat sat in mat.", options=options):
        if hasattr(msg, "content"):
            for block in msg.content:
                if hasattr(block, "text"):
                    answer += block.text
    print(answer)


if __name__ == "__main__":
    asyncio.run(main())
