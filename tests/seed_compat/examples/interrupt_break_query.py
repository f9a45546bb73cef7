"""Seed pattern: interrupt inside the loop, break, and ask again at once."""

import asyncio

from desktop_agent import AgentOptions, Client, TextBlock
from desktop_agent.config import get_base_url, get_model


async def main() -> None:
    options = AgentOptions(system_prompt="You write essays.", model=get_model("qwen2.5-7b"),
                           base_url=get_base_url())
    async with Client(options) as client:
        await client.query("Write a very long essay about rivers.")
        received = ""
        async for block in client.receive_messages():
            if isinstance(block, TextBlock):
                received += block.text
            if len(received) >= 100:
                await client.interrupt()
                break
        print(f"kept {len(received)} chars before stopping")
        await client.query("another question")  # at once, no waiting
        async for block in client.receive_messages():
            if isinstance(block, TextBlock):
                print(block.text, end="")
        print()
        print("roles:", " ".join(m["role"] for m in client.history))


if __name__ == "__main__":
    asyncio.run(main())
