"""Seed example 11: stop a long reply once enough arrived, and keep what arrived."""

import asyncio

from desktop_agent import AgentOptions, Client
from desktop_agent.config import get_base_url, get_model


async def main() -> None:
    options = AgentOptions(system_prompt="You write long essays.", model=get_model("qwen2.5-7b"),
                           base_url=get_base_url())
    async with Client(options) as client:
        await client.query("Write a very long essay about rivers.")
        received = ""
        enough = asyncio.Event()

        async def read() -> None:
            nonlocal received
            async for block in client.receive_messages():
                received += block.text  # the seed's blocks all had .text
                if len(received) >= 200:
                    enough.set()

        reader = asyncio.create_task(read())
        await asyncio.wait({reader, asyncio.create_task(enough.wait())},
                           return_when=asyncio.FIRST_COMPLETED)
        await client.interrupt()  # from outside the reading task, as a Stop button would
        await reader
        print(f"interrupted={client.turn_metadata['interrupted']} kept={len(received)} chars")
        print(f"history ends with: {client.history[-1]['role']}")
        await client.query("Just one short sentence now.")
        async for block in client.receive_messages():
            print(block.text, end="")
        print()


if __name__ == "__main__":
    asyncio.run(main())
