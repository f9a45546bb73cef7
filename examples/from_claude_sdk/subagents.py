"""Subagents (claude-agent-sdk's ``agents`` and ``Task``): the agent delegates to a reviewer.

    python examples/from_claude_sdk/subagents.py   (LM Studio; set DESKTOP_AGENT_BASE_URL /
                                                    DESKTOP_AGENT_MODEL for another server)

The reviewer runs its own loop with a clean context, only the tools its
definition names and, if you set REVIEWER_MODEL, a smaller model; its answer
comes back as the ``delegate`` call's result. What it does streams as
``SubagentBlock`` items under that call.
"""

import asyncio
import os

from desktop_agent import (
    AgentDefinition,
    AgentOptions,
    Client,
    PermissionResultAllow,
    SubagentBlock,
    TextBlock,
    ToolResultBlock,
    tool,
)


@tool("read_file", "Read a text file", {"path": str}, read_only=True)
def read_file(args):
    return "def parse_row(line):\n    return line.split(',')\n"


async def approve(tool_name, tool_input, context):
    who = f"the subagent {context.agent}" if context.agent else "the main agent"
    print(f"[asked] {who} wants {tool_name}")
    return PermissionResultAllow()


async def main() -> None:
    reviewer = AgentDefinition(
        description="Reviews a file for real bugs; give it the file's path.",
        prompt="You review code. Report real bugs only, with file and line.",
        tools=("read_file",), model=os.environ.get("REVIEWER_MODEL"), max_turns=5)
    options = AgentOptions(
        model=os.environ.get("DESKTOP_AGENT_MODEL", "qwen2.5-7b-instruct"),
        base_url=os.environ.get("DESKTOP_AGENT_BASE_URL", "http://localhost:1234/v1"),
        system_prompt="Delegate reviews to the reviewer.",
        tools=[read_file], agents={"reviewer": reviewer},
        auto_execute_tools=True, can_use_tool=approve, allowed_tools=["delegate"])
    async with Client(options) as client:
        await client.query("Have the reviewer check parser.py.")
        async for item in client.receive_messages():
            if isinstance(item, SubagentBlock) and item.event == "finished":
                print(f"[{item.agent}] {item.requests} request(s), answer: {item.result}")
            elif isinstance(item, ToolResultBlock) and item.name == "delegate":
                print("[delegate result]", item.content.splitlines()[0])
            elif isinstance(item, TextBlock):
                print(item.text, end="", flush=True)
    print()


if __name__ == "__main__":
    asyncio.run(main())
