"""Another process on the same database: holds a turn lease, appends events, or writes.

Modes (each prints a line the test waits for):

- ``lease DB CID OWNER``: try the turn lease; print ``held`` (then wait for a
  line on stdin, release, print ``released``) or ``busy <holder>: <sentence>``.
- ``events DB CID COUNT TAG``: print ``ready``, wait for ``go`` on stdin, append
  COUNT events in batches of 1 to 7, print ``done``.
- ``append DB CID TEXT``: append a user message to the active branch, patch the
  setting ``from_other`` to TEXT, print ``done``.
"""

import sys

from desktop_agent.store import ConversationBusyError, NewEvent, Store


def _lease(store: Store, conversation_id: str, owner: str) -> None:
    lease = store.turn_lease(conversation_id, owner)
    try:
        lease.acquire()
    except ConversationBusyError as exc:
        print(f"busy {exc.holder}: {exc}", flush=True)
        return
    print("held", flush=True)
    sys.stdin.readline()
    lease.release()
    print("released", flush=True)


def _events(store: Store, conversation_id: str, count: int, tag: str) -> None:
    print("ready", flush=True)
    sys.stdin.readline()
    sent = 0
    size = 1
    while sent < count:
        batch = [NewEvent(conversation_id, "text", f'{{"text": "{tag} {sent + i}"}}', 0.0)
                 for i in range(min(size, count - sent))]
        store.append_events(batch)
        sent += len(batch)
        size = size % 7 + 1
    print("done", flush=True)


def main() -> None:
    mode, db_path, conversation_id = sys.argv[1:4]
    store = Store.open(db_path)
    try:
        if mode == "lease":
            _lease(store, conversation_id, sys.argv[4])
        elif mode == "events":
            _events(store, conversation_id, int(sys.argv[4]), sys.argv[5])
        elif mode == "append":
            store.add_message(conversation_id, {"role": "user", "content": sys.argv[4]})
            store.patch_settings(conversation_id, {"from_other": sys.argv[4]})
            print("done", flush=True)
    finally:
        store.close()


if __name__ == "__main__":
    main()
