"""Seed example 9: calculator tools with @tool, answered by hand inside the receive loop."""

import asyncio
from typing import Any

from desktop_agent import AgentOptions, Client, TextBlock, ToolUseBlock, tool
from desktop_agent.config import get_base_url, get_model


@tool("add", "Add two numbers", {"a": float, "b": float})
async def add(args: dict[str, Any]) -> dict[str, Any]:
    return {"result": args["a"] + args["b"]}


@tool("multiply", "Multiply two numbers", {"a": float, "b": float})
async def multiply(args: dict[str, Any]) -> dict[str, Any]:
    return {"result": args["a"] * args["b"]}


@tool("divide", "Divide a by b", {"a": float, "b": float})
async def divide(args: dict[str, Any]) -> dict[str, Any]:
    if args["b"] == 0:
        return {"error": "division by zero"}
    return {"result": args["a"] / args["b"]}


TOOLS = {t.name: t for t in (add, multiply, divide)}


async def main() -> None:
    options = AgentOptions(system_prompt="Use the calculator tools for arithmetic.",
                           model=get_model("qwen2.5-7b"), base_url=get_base_url(),
                           tools=list(TOOLS.values()))
    async with Client(options) as client:
        await client.query("What is (3 + 4) * 6?")
        while True:
            called = False
            async for block in client.receive_messages():
                if isinstance(block, ToolUseBlock):
                    called = True
                    result = await TOOLS[block.name].execute(block.input)
                    print(f"{block.name}({block.input}) = {result}")
                    await client.add_tool_result(block.id, result)  # still inside the loop
                elif isinstance(block, TextBlock):
                    print(block.text, end="")
            if not called:
                break
        print()


if __name__ == "__main__":
    asyncio.run(main())
