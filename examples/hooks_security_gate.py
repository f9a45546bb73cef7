"""Hooks as a security gate: refuse prompts with secrets, block dangerous commands.

    python examples/hooks_security_gate.py   (LM Studio; set DESKTOP_AGENT_BASE_URL /
                                              DESKTOP_AGENT_MODEL for Ollama)
"""

import asyncio
import os
import re
import subprocess

from desktop_agent import (
    HOOK_PRE_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    AgentOptions,
    Client,
    HookDecision,
    PermissionRule,
    PromptBlockedError,
    TextBlock,
    ToolUseError,
    tool,
)


@tool("run", "Run a shell command and return its output", {"command": str})
def run(args):
    done = subprocess.run(args["command"], shell=True, capture_output=True, text=True, timeout=30)
    return done.stdout + done.stderr


def no_secrets_in_prompts(event):
    if re.search(r"(sk-[A-Za-z0-9]{10,}|password\s*[:=])", event.prompt):
        return HookDecision(continue_=False, reason="the prompt looks like it contains a secret")
    return None


def no_destructive_commands(event):
    command = event.tool_input.get("command", "")
    if re.search(r"\b(rm|mkfs|dd|shutdown|reboot)\b", command):
        return HookDecision(continue_=False, reason=f"destructive command refused: {command}")
    return None


async def main() -> None:
    options = AgentOptions(
        model=os.environ.get("DESKTOP_AGENT_MODEL", "qwen2.5-7b-instruct"),
        base_url=os.environ.get("DESKTOP_AGENT_BASE_URL", "http://localhost:1234/v1"),
        tools=[run],
        auto_execute_tools=True,
        max_turns=None,
        hooks={HOOK_USER_PROMPT_SUBMIT: [no_secrets_in_prompts],
               HOOK_PRE_TOOL_USE: [no_destructive_commands]},
        permission_rules=[PermissionRule("run", "deny", {"command": "*sudo*"})],
    )
    async with Client(options) as client:
        try:
            await client.query("my password: hunter2, please remember it")
        except PromptBlockedError as exc:
            print(f"Blocked before sending: {exc}")
        await client.query("List the files here, then delete them all.")
        async for block in client.receive_messages():
            if isinstance(block, TextBlock):
                print(block.text, end="", flush=True)
            elif isinstance(block, ToolUseError):
                print(f"\n[refused: {block.error}]")
        print()


if __name__ == "__main__":
    asyncio.run(main())
