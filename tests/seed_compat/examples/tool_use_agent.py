"""Seed example 3: three ways to answer tool calls by hand with add_tool_result()."""

import asyncio
from typing import Any

from desktop_agent import AgentOptions, Client, TextBlock, ToolUseBlock
from desktop_agent.config import get_base_url, get_model

CAPITALS = {"france": "Paris", "japan": "Tokyo"}


def run_tool(name: str, params: dict[str, Any]) -> dict[str, Any]:
    if name == "capital_of":
        return {"capital": CAPITALS.get(str(params.get("country", "")).lower(), "unknown")}
    return {"error": f"no tool {name}"}


def make_options() -> AgentOptions:
    return AgentOptions(system_prompt="Use tools when asked about capitals.",
                        model=get_model("qwen2.5-7b"), base_url=get_base_url(), max_turns=5)


async def pattern_manual_loop() -> None:
    """Pattern 1: answer calls inside the loop, then read the follow-up."""
    async with Client(make_options()) as client:
        await client.query("What is the capital of France?")
        pending = True
        while pending:
            pending = False
            async for block in client.receive_messages():
                if isinstance(block, TextBlock):
                    print(block.text, end="")
                elif isinstance(block, ToolUseBlock):
                    print(f"[calling {block.name}]")
                    await client.add_tool_result(block.id, run_tool(block.name, block.input))
                    pending = True
        print()
        print(f"manual loop turns: {client.turn_count}")


async def ask_with_tools(client: Client, prompt: str) -> str:
    """Pattern 2: a helper that hides the loop and returns the final text."""
    await client.query(prompt)
    text = ""
    while True:
        calls = []
        async for block in client.receive_messages():
            if isinstance(block, TextBlock):
                text += block.text
            elif isinstance(block, ToolUseBlock):
                calls.append(block)
        if not calls:
            return text
        for call in calls:
            await client.add_tool_result(call.id, run_tool(call.name, call.input), name=call.name)


class CapitalsAgent:
    """Pattern 3: a reusable agent class keeping one client."""

    def __init__(self) -> None:
        self.client = Client(make_options())

    async def ask(self, prompt: str) -> str:
        return await ask_with_tools(self.client, prompt)

    async def close(self) -> None:
        await self.client.close()


async def main() -> None:
    await pattern_manual_loop()
    async with Client(make_options()) as client:
        print("helper:", await ask_with_tools(client, "And the capital of Japan?"))
    agent = CapitalsAgent()
    try:
        print("agent:", await agent.ask("Capital of France again?"))
        print("agent:", await agent.ask("Thanks!"))
        print(f"agent turns: {agent.client.turn_count}")
    finally:
        await agent.close()


if __name__ == "__main__":
    asyncio.run(main())
