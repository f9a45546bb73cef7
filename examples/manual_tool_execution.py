"""Execute tool calls yourself: inspect each call, run it, send the result back.

    python examples/manual_tool_execution.py   (LM Studio; set DESKTOP_AGENT_BASE_URL /
                                                DESKTOP_AGENT_MODEL for Ollama)
"""

import asyncio
import os

from desktop_agent import AgentOptions, Client, TextBlock, ToolUseBlock, ToolUseError, tool


@tool("get_weather", "Current weather for a city", {"city": str})
async def get_weather(args):
    return {"city": args["city"], "temperature_c": 21, "sky": "clear"}


async def main() -> None:
    options = AgentOptions(
        model=os.environ.get("DESKTOP_AGENT_MODEL", "qwen2.5-7b-instruct"),
        base_url=os.environ.get("DESKTOP_AGENT_BASE_URL", "http://localhost:1234/v1"),
        tools=[get_weather],
        max_turns=None,
    )
    async with Client(options) as client:
        await client.query("What's the weather in Lisbon?")
        while True:
            calls = []
            async for block in client.receive_messages():
                if isinstance(block, TextBlock):
                    print(block.text, end="", flush=True)
                elif isinstance(block, ToolUseBlock):
                    calls.append(block)
                elif isinstance(block, ToolUseError):
                    print(f"\n[unusable tool call: {block.error}]")
            if not calls:
                break
            for call in calls:
                prompt = f"\nRun {call.name}({call.input})? [y/N] "
                answer = (await asyncio.to_thread(input, prompt)).strip().lower()
                if answer == "y":
                    await client.add_tool_result(call.id, await get_weather.execute(call.input))
                else:
                    await client.add_tool_result(call.id, "The user declined.", is_error=True)
            await client.query("")  # continue the turn with the results
        print()


if __name__ == "__main__":
    asyncio.run(main())
