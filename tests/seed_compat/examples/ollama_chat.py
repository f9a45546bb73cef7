"""Seed example 2: a chat loop on Ollama that logs the tools the model asks for."""

import asyncio

from desktop_agent import AgentOptions, Client, TextBlock, ToolUseBlock
from desktop_agent.config import get_base_url, get_model


async def main() -> None:
    options = AgentOptions(
        system_prompt="You are a friendly assistant.",
        model=get_model("llama3.1:8b"),
        base_url=get_base_url(provider="ollama"),
        max_turns=10,
    )
    async with Client(options) as client:
        while True:
            try:
                line = (await asyncio.to_thread(input, "You: ")).strip()
            except EOFError:
                break
            if line.lower() in {"quit", "exit"}:
                break
            if not line:
                continue
            await client.query(line)
            print("Assistant: ", end="", flush=True)
            async for block in client.receive_messages():
                if isinstance(block, TextBlock):
                    print(block.text, end="", flush=True)
                elif isinstance(block, ToolUseBlock):
                    print(f"\n[Tool: {block.name}] input={block.input}")
            print()
        print(f"Total turns: {client.turn_count}")
        print(f"Max turns: {client.turn_metadata['max_turns']}")


if __name__ == "__main__":
    asyncio.run(main())
