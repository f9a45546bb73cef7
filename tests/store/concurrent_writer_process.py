"""A separate process appending messages to a conversation another process also writes.

Prints ``ready``, waits for ``go`` on stdin (so both processes write at the
same time), appends COUNT messages tagged TAG to the active branch, prints
``done``.

Usage: python concurrent_writer_process.py DB_PATH CONVERSATION_ID COUNT TAG
"""

import sys

from desktop_agent.store import Store


def main() -> None:
    db_path, conversation_id, count, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    store = Store.open(db_path)
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(count):
        store.add_message(conversation_id, {"role": "user", "content": f"{tag} {i}"})
    store.close()
    print("done", flush=True)


if __name__ == "__main__":
    main()
