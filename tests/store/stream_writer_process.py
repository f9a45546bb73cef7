"""A separate process that streams a long reply into the store until it is killed.

Used by the kill test: it writes some complete messages, says ``ready <id>``,
then streams ``word<i> `` pieces through a StreamingReplyWriter and prints
``saved <chars>`` after each checkpoint reaches the database. The test kills
it with SIGKILL mid-stream.

Usage: python stream_writer_process.py DB_PATH COMPLETE_PAIRS
"""

import sys
import time

from desktop_agent.store import Store, StreamingReplyWriter


def main() -> None:
    db_path, pairs = sys.argv[1], int(sys.argv[2])
    store = Store.open(db_path)
    conversation = store.create_conversation("kill test", {"model": "test-model"})
    for i in range(pairs):
        store.add_message(conversation.id, {"role": "user", "content": f"question {i}"})
        store.add_message(
            conversation.id,
            {"role": "assistant", "content": f"answer {i}"},
            metadata={"model": "m"},
        )
    store.add_message(conversation.id, {"role": "user", "content": "tell me a long story"})
    print(f"ready {conversation.id}", flush=True)
    writer = StreamingReplyWriter(store, conversation.id, interval=0.02, metadata={"model": "m"})
    saved = 0
    i = 0
    while True:  # until killed
        writer.append_text(f"word{i} ")
        writer.append_thinking("t")
        i += 1
        if writer.saved_chars != saved:
            saved = writer.saved_chars
            print(f"saved {saved}", flush=True)
        time.sleep(0.002)


if __name__ == "__main__":
    main()
