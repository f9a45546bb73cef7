"""Hooks beyond tool calls (claude-agent-sdk's Stop, SessionStart, SessionEnd...).

    python examples/from_claude_sdk/lifecycle_hooks.py   (LM Studio; set
        DESKTOP_AGENT_BASE_URL / DESKTOP_AGENT_MODEL for another server)

Hooks are registered under claude-agent-sdk's names (``"Stop"``) or ours
(``HOOK_STOP``). A Stop hook that blocks sends its reason to the model and the
turn goes on: here it asks once for a shorter answer.
"""

import asyncio
import os

from desktop_agent import AgentOptions, HookDecision, ResultMessage, TextBlock, query


def session_start(event):
    print(f"[SessionStart] {event.payload()['hook_event_name']}")


def stop(event):
    if not event.stop_hook_active:  # the first stop: ask once for a shorter answer
        return HookDecision(continue_=False, reason="Say it in five words or fewer.")
    print(f"[Stop] last answer: {event.last_message}")
    return None


def session_end(event):
    print("[SessionEnd]")


async def main() -> None:
    options = AgentOptions(
        model=os.environ.get("DESKTOP_AGENT_MODEL", "qwen2.5-7b-instruct"),
        base_url=os.environ.get("DESKTOP_AGENT_BASE_URL", "http://localhost:1234/v1"),
        hooks={"SessionStart": [session_start], "Stop": [stop], "SessionEnd": [session_end]})
    async for message in query("Why is the sky blue?", options):
        if isinstance(message, ResultMessage):
            print(f"[result] {message.subtype}, {message.num_turns} request(s): "
                  f"{message.result}")
        else:
            for block in message.content:
                if isinstance(block, TextBlock):
                    print(block.text)


if __name__ == "__main__":
    asyncio.run(main())
