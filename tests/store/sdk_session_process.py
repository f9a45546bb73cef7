"""A script in its own process: continue a stored conversation through the SDK.

Usage: python sdk_session_process.py DB_PATH CONVERSATION_ID BASE_URL PROMPT
"""

import asyncio
import sys

from desktop_agent import AgentOptions, Client, TextBlock
from desktop_agent.store.store_history import StoreHistory


async def main(db: str, conversation_id: str, base_url: str, prompt: str) -> None:
    session = StoreHistory.open(conversation_id, db)
    try:
        options = AgentOptions(model="test-model", base_url=base_url)
        async with Client(options, session=session) as client:
            print(f"loaded {len(client.history)} messages")
            await client.query(prompt)
            async for block in client.receive_messages():
                if isinstance(block, TextBlock):
                    print(block.text, end="")
            print()
    finally:
        session.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
