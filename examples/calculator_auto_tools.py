"""A calculator agent that runs its tools automatically.

Run against LM Studio (default) or Ollama:

    python examples/calculator_auto_tools.py
    DESKTOP_AGENT_BASE_URL=http://localhost:11434/v1 DESKTOP_AGENT_MODEL=qwen2.5:7b \
        python examples/calculator_auto_tools.py
"""

import asyncio
import os

from desktop_agent import AgentOptions, Client, TextBlock, ToolResultBlock, ToolUseBlock, tool


@tool("add", "Add two numbers", {"a": float, "b": float}, read_only=True)
async def add(args):
    return args["a"] + args["b"]


@tool("multiply", "Multiply two numbers", {"a": float, "b": float}, read_only=True)
async def multiply(args):
    return args["a"] * args["b"]


async def main() -> None:
    options = AgentOptions(
        system_prompt="You are a calculator. Use the tools for every arithmetic step.",
        model=os.environ.get("DESKTOP_AGENT_MODEL", "qwen2.5-7b-instruct"),
        base_url=os.environ.get("DESKTOP_AGENT_BASE_URL", "http://localhost:1234/v1"),
        tools=[add, multiply],
        auto_execute_tools=True,
        max_tool_iterations=10,
    )
    async with Client(options) as client:
        await client.query("What is (12.5 + 7.5) * 3?")
        async for block in client.receive_messages():
            if isinstance(block, TextBlock):
                print(block.text, end="", flush=True)
            elif isinstance(block, ToolUseBlock):
                print(f"\n[calling {block.name}({block.input})]")
            elif isinstance(block, ToolResultBlock):
                print(f"[result: {block.content}]")
        print(f"\n\n{client.last_usage}")


if __name__ == "__main__":
    asyncio.run(main())
