"""A script's own skills and slash commands: the app's formats, read from folders.

``agent_folders/skills/haiku/SKILL.md`` is a skill: only its name and description
go into the system prompt, and the model loads its instructions with the
``load_skill`` tool when a poem is asked for. ``agent_folders/commands/poem.md``
is ``/poem``: the prompt ``/poem the sea`` is sent as the file's text.

    python examples/skills_and_commands.py
    DESKTOP_AGENT_BASE_URL=http://localhost:11434/v1 DESKTOP_AGENT_MODEL=qwen2.5:7b \
        python examples/skills_and_commands.py
"""

import asyncio
import os
from pathlib import Path

from desktop_agent import AgentOptions, TextBlock, ToolUseBlock, query

FOLDERS = Path(__file__).parent / "agent_folders"


async def main() -> None:
    options = AgentOptions(
        model=os.environ.get("DESKTOP_AGENT_MODEL", "qwen2.5-7b-instruct"),
        base_url=os.environ.get("DESKTOP_AGENT_BASE_URL", "http://localhost:1234/v1"),
        auto_execute_tools=True,
        skills_dirs=[FOLDERS / "skills"], commands_dirs=[FOLDERS / "commands"])
    async for message in query("/poem the sea", options):
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                print(f"[{block.name}] {block.input}")
            elif isinstance(block, TextBlock):
                print(block.text, end="", flush=True)
    print()


if __name__ == "__main__":
    asyncio.run(main())
