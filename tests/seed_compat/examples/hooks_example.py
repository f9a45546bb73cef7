"""Seed example 10: hooks that gate tools and rewrite prompts, over two queries."""

import asyncio
from typing import Any

from desktop_agent import (
    HOOK_POST_TOOL_USE,
    HOOK_PRE_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    AgentOptions,
    Client,
    HookDecision,
    PostToolUseEvent,
    PreToolUseEvent,
    TextBlock,
    ToolResultBlock,
    UserPromptSubmitEvent,
    tool,
)
from desktop_agent.config import get_base_url, get_model

AUDIT: list[str] = []


@tool("delete_file", "Delete a file", {"path": str})
async def delete_file(args: dict[str, Any]) -> str:
    return f"deleted {args['path']}"


async def block_system_paths(event: PreToolUseEvent) -> HookDecision | None:
    if str(event.tool_input.get("path", "")).startswith("/etc"):
        return HookDecision(continue_=False, reason="system files are off limits")
    return None


async def audit(event: PostToolUseEvent) -> HookDecision | None:
    AUDIT.append(f"{event.tool_name} -> {event.tool_result}")
    return None


async def add_politeness(event: UserPromptSubmitEvent) -> HookDecision | None:
    return HookDecision(modified_prompt=event.prompt + " (please be concise)")


async def main() -> None:
    options = AgentOptions(
        system_prompt="You manage files.", model=get_model("qwen2.5-7b"),
        base_url=get_base_url(), tools=[delete_file], auto_execute_tools=True,
        hooks={HOOK_PRE_TOOL_USE: [block_system_paths], HOOK_POST_TOOL_USE: [audit],
               HOOK_USER_PROMPT_SUBMIT: [add_politeness]},
    )
    async with Client(options) as client:  # a default Client: many queries
        for prompt in ("Delete /etc/passwd", "Delete /tmp/scratch.txt"):
            await client.query(prompt)
            async for block in client.receive_messages():
                if isinstance(block, ToolResultBlock):
                    print(f"[{'refused' if block.is_error else 'ran'}] {block.content}")
                elif isinstance(block, TextBlock):
                    print(block.text, end="")
            print()
    print("audit:", AUDIT)


if __name__ == "__main__":
    asyncio.run(main())
