"""Another process driving one conversation through a ConversationSession (for tests).

Usage: python session_actor_process.py DB CONVERSATION_ID TEXT
Prints ``SENT`` once its turn started and ``DONE <outcome>`` when it ended.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from desktop_agent.session.conversation import ConversationSession
from desktop_agent.session.events import SessionEvent, StateChanged
from desktop_agent.session.tools.tool_catalog import ToolCatalog
from desktop_agent.session.turn.options import SessionEnvironment
from desktop_agent.store import Store


async def refuse(_question: Any) -> Any:
    raise AssertionError("no tool calls expected")


async def main(database: str, conversation_id: str, text: str) -> None:
    store = Store.open(database)
    outcome: list[str] = []

    def on_event(event: SessionEvent) -> None:
        if isinstance(event, StateChanged) and event.outcome is not None:
            outcome.append(event.outcome)

    env = SessionEnvironment(tools=ToolCatalog(include_builtin=False, include_mcp=False))
    session = ConversationSession(store, conversation_id, env, refuse, owner="other-process")
    session.subscribe(on_event)
    session.send(text)
    print("SENT", flush=True)
    while session.busy:
        await asyncio.sleep(0.02)
    await session.close()
    store.close()
    print("DONE", outcome[-1] if outcome else "none", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
