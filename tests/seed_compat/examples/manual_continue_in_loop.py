"""Seed pattern: manual tool mode continued from inside the loop that yielded the call.

The seed's README answers a ``ToolUseBlock`` with ``add_tool_result``, then
calls ``query("")`` and reads ``receive_messages()`` again, all while the
outer ``async for`` is still open. The outer loop must then end on its own.
"""

import asyncio
from typing import Any

from desktop_agent import AgentOptions, Client, TextBlock, ToolUseBlock, tool
from desktop_agent.config import get_base_url, get_model


@tool("get_weather", "Weather for a city", {"city": str})
async def get_weather(args: dict[str, Any]) -> str:
    return f"Sunny in {args['city']}"


async def main() -> None:
    options = AgentOptions(system_prompt="Use tools for the weather.",
                           model=get_model("qwen2.5-7b"), base_url=get_base_url(),
                           tools=[get_weather], auto_execute_tools=False)
    async with Client(options) as client:
        await client.query("What is the weather in Paris?")
        outer_blocks = 0
        async for block in client.receive_messages():
            outer_blocks += 1
            if isinstance(block, ToolUseBlock):
                result = await get_weather.execute(block.input)
                print(f"[ran {block.name}] {result}")
                await client.add_tool_result(tool_call_id=block.id, content=result,
                                             name=block.name)
                await client.query("")  # continue the turn
                follow_up = ""
                async for inner in client.receive_messages():
                    if isinstance(inner, TextBlock):
                        follow_up += inner.text
                print(f"follow-up: {follow_up}")
            elif isinstance(block, TextBlock):
                print(f"text: {block.text}")
        print(f"outer loop ended after {outer_blocks} block(s)")
        print("roles:", " ".join(m["role"] for m in client.history))


if __name__ == "__main__":
    asyncio.run(main())
