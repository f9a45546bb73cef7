"""Seed pattern: a UserPromptSubmit hook blocks a prompt; the script catches RuntimeError."""

import asyncio

from desktop_agent import (
    HOOK_USER_PROMPT_SUBMIT,
    AgentOptions,
    Client,
    HookDecision,
    TextBlock,
    UserPromptSubmitEvent,
)
from desktop_agent.config import get_base_url, get_model


async def no_passwords(event: UserPromptSubmitEvent) -> HookDecision | None:
    if "password" in event.prompt.lower():
        return HookDecision(continue_=False, reason="prompts may not mention passwords")
    return None


async def main() -> None:
    options = AgentOptions(system_prompt="You are helpful.", model=get_model("qwen2.5-7b"),
                           base_url=get_base_url(),
                           hooks={HOOK_USER_PROMPT_SUBMIT: [no_passwords]})
    async with Client(options) as client:
        for prompt in ("What is my password?", "What is the capital of France?"):
            try:
                await client.query(prompt)
            except RuntimeError as exc:
                print(f"blocked: {exc}")
                continue
            reply = ""
            async for block in client.receive_messages():
                if isinstance(block, TextBlock):
                    reply += block.text
            print(f"reply: {reply}")
        print(f"history: {len(client.history)} messages")


if __name__ == "__main__":
    asyncio.run(main())
