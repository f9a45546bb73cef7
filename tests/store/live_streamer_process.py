"""A separate process that leaves a reply "streaming" and stays alive until told to stop.

Proves start-up recovery leaves replies of live processes alone.

Usage: python live_streamer_process.py DB_PATH CONVERSATION_ID
"""

import sys

from desktop_agent.store import Store


def main() -> None:
    store = Store.open(sys.argv[1])
    record = store.add_message(
        sys.argv[2], {"role": "assistant", "content": ""}, status="streaming"
    )
    store.checkpoint_message(record.id, "still writing")
    print(f"streaming {record.id}", flush=True)
    sys.stdin.readline()


if __name__ == "__main__":
    main()
