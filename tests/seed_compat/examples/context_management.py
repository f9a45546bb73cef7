"""Seed example 12: managing history by hand: stateless, manual truncation, token budget."""

import asyncio

from desktop_agent import AgentOptions, Client, TextBlock, query
from desktop_agent.config import get_base_url, get_model
from desktop_agent.context import estimate_tokens, truncate_messages


def options() -> AgentOptions:
    return AgentOptions(system_prompt="You are a helpful assistant.",
                        model=get_model("qwen2.5-7b"), base_url=get_base_url())


async def stateless() -> None:
    """Pattern 1: a fresh query per task keeps nothing between calls."""
    for task in ("Summarise A", "Summarise B"):
        async for msg in query(task, options()):
            for block in msg.content:
                if isinstance(block, TextBlock):
                    print(block.text, end="")
        print()


async def manual_truncation() -> None:
    """Pattern 2: trim the history at a natural break."""
    async with Client(options()) as client:
        for i in range(6):
            await client.query(f"step {i}")
            async for _ in client.receive_messages():
                pass
        before = len(client.message_history)
        client.message_history = truncate_messages(client.message_history, keep=4)
        print(f"truncated {before} -> {len(client.message_history)} messages")
        await client.query("continue")
        async for _ in client.receive_messages():
            pass
        print(f"after one more turn: {len(client.message_history)} messages")


async def token_budget() -> None:
    """Pattern 3: check the estimate every turn and trim past a budget."""
    budget = 60
    async with Client(options()) as client:
        for i in range(8):
            await client.query(f"tell me fact number {i} about the sea")
            async for _ in client.receive_messages():
                pass
            used = estimate_tokens(client.message_history)
            if used > budget:
                client.message_history = truncate_messages(client.message_history, keep=2)
                print(f"turn {client.turn_count}: {used} tokens > {budget}, trimmed")
        print(f"final estimate: {estimate_tokens(client.message_history)} tokens")


async def main() -> None:
    await stateless()
    await manual_truncation()
    await token_budget()


if __name__ == "__main__":
    asyncio.run(main())
