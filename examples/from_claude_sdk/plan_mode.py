"""Permission modes (claude-agent-sdk's ``permission_mode``): plan first, then edit unasked.

    python examples/from_claude_sdk/plan_mode.py   (LM Studio; set DESKTOP_AGENT_BASE_URL /
                                                    DESKTOP_AGENT_MODEL for another server)

In ``plan`` mode only read-only tools run and the model is told to hand in a
plan with ``exit_plan_mode``. Approving the plan with ``"mode": "acceptEdits"``
switches the same turn to ``acceptEdits``: file edits then run without asking
(commands would still ask).
"""

import asyncio
import os
import tempfile
from pathlib import Path

from desktop_agent import (
    AgentOptions,
    Client,
    PermissionResultAllow,
    PermissionResultDeny,
    TextBlock,
    tool,
)

FOLDER = Path(tempfile.mkdtemp(prefix="plan-mode-"))


@tool("write_file", "Write a text file", {"path": str, "content": str}, edits_files=True)
def write_file(args):
    (FOLDER / Path(args["path"]).name).write_text(args["content"])
    return f"wrote {args['path']}"


def written():
    return sorted(p.name for p in FOLDER.iterdir())


async def approve(tool_name, tool_input, context):
    if tool_name == "exit_plan_mode":
        print("[plan]", tool_input.get("plan", "").strip())
        return PermissionResultAllow({**tool_input, "mode": "acceptEdits"})
    print(f"[asked] {tool_name}")  # not reached for the edit: acceptEdits runs it
    return PermissionResultDeny("not now")


async def main() -> None:
    options = AgentOptions(
        model=os.environ.get("DESKTOP_AGENT_MODEL", "qwen2.5-7b-instruct"),
        base_url=os.environ.get("DESKTOP_AGENT_BASE_URL", "http://localhost:1234/v1"),
        tools=[write_file], auto_execute_tools=True, can_use_tool=approve,
        permission_mode="plan")
    async with Client(options) as client:
        await client.query("Write hello.txt saying hello.")
        async for item in client.receive_messages():
            if isinstance(item, TextBlock):
                print(item.text, end="", flush=True)
        print()
        print("mode now:", client.options.permission_mode)
    print("files:", written())


if __name__ == "__main__":
    asyncio.run(main())
