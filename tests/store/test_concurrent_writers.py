"""Two tabs streaming at once plus a second process: no corruption, no lost message."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from desktop_agent.store import Store, StreamingReplyWriter

PROCESS_TIMEOUT = 60

PER_WRITER = 250


def test_threads_and_another_process_append_to_one_conversation(
    tmp_path: Path, helper_process
) -> None:
    db = tmp_path / "conversations.sqlite3"
    shared = Store.open(db)
    own = Store.open(db)  # a second connection in this process, like a REST worker
    conversation = shared.create_conversation("busy")
    other = shared.create_conversation("streaming elsewhere")
    process = helper_process(
        "concurrent_writer_process.py", str(db), conversation.id, str(PER_WRITER), "process"
    )
    errors: list[BaseException] = []
    start = threading.Barrier(4, timeout=PROCESS_TIMEOUT)

    def append(store: Store, tag: str) -> None:
        try:
            start.wait()
            for i in range(PER_WRITER):
                store.add_message(conversation.id, {"role": "user", "content": f"{tag} {i}"})
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    def stream() -> None:
        try:
            start.wait()
            writer = StreamingReplyWriter(shared, other.id, interval=0)
            for i in range(PER_WRITER):
                writer.append_text(f"piece{i} ")
            writer.finish()
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=append, args=(shared, "thread-a")),
        threading.Thread(target=append, args=(own, "thread-b")),
        threading.Thread(target=stream),
    ]
    try:
        assert process.stdout.readline().strip() == "ready"
        for thread in threads:
            thread.start()
        start.wait()
        process.stdin.write("go\n")
        process.stdin.flush()
        for thread in threads:
            thread.join(timeout=PROCESS_TIMEOUT)
        assert process.stdout.readline().strip() == "done", process.stderr.read()
        process.wait(timeout=PROCESS_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=PROCESS_TIMEOUT)
        for pipe in (process.stdin, process.stdout, process.stderr):
            pipe.close()
        own.close()
    assert errors == []
    assert process.returncode == 0

    # Every message is there, and all of them form ONE branch: no append raced
    # another into a sibling, so the conversation reads as a single thread.
    total = 3 * PER_WRITER
    assert shared.count_messages(conversation.id) == total
    path = shared.active_path(conversation.id)
    assert len(path) == total
    for tag in ("thread-a", "thread-b", "process"):
        own_order = [m.message["content"] for m in path if m.message["content"].startswith(tag)]
        assert own_order == [f"{tag} {i}" for i in range(PER_WRITER)]
    streamed = shared.active_path(other.id)[-1]
    assert streamed.status == "complete"
    assert streamed.message["content"] == "".join(f"piece{i} " for i in range(PER_WRITER))
    shared.close()

    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    conn.execute("INSERT INTO message_search(message_search) VALUES ('integrity-check')")
    conn.close()
