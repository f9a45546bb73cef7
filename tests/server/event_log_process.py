"""A second server's event log on the same data folder, appending while another does.

Prints ``ready``, waits for a line on stdin, appends COUNT ``text`` events
tagged TAG to CONVERSATION (yielding to the loop now and then, as a streaming
turn does), waits until they are readable, prints ``done``.

Usage: python event_log_process.py DB_PATH CONVERSATION COUNT TAG
"""

import asyncio
import sys

from desktop_agent.server.event_log import EventLog
from desktop_agent.store import Store


async def main() -> None:
    db_path, conversation_id, count, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    store = Store.open(db_path)
    log = EventLog(store)
    try:
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        for n in range(count):
            log.append(conversation_id, "message", {"text": f"{tag} {n}"})
            if n % 5 == 0:
                await asyncio.sleep(0)
        await log.page(conversation_id, 0, 1)
        print("done", flush=True)
    finally:
        await asyncio.to_thread(log.close)
        store.close()


if __name__ == "__main__":
    asyncio.run(main())
