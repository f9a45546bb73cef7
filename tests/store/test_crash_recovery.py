"""kill -9 in the middle of a streaming reply loses nothing but the last moment."""

from __future__ import annotations

import signal
import sqlite3
import sys
from pathlib import Path

import pytest

from desktop_agent.store import Store

PROCESS_TIMEOUT = 60

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

PAIRS = 40


def _read_until(process, prefix: str, count: int = 1) -> list[str]:
    """Lines starting with ``prefix`` from the helper, until ``count`` arrived."""
    seen = []
    assert process.stdout is not None
    while len(seen) < count:
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"helper exited early: {process.stderr.read()}")
        if line.startswith(prefix):
            seen.append(line.split()[1])
    return seen


def _expected_stream(chars: int) -> str:
    text, i = "", 0
    while len(text) < chars:
        text += f"word{i} "
        i += 1
    return text


def test_killed_mid_stream_keeps_every_message_and_the_partial_reply(
    tmp_path: Path, helper_process
) -> None:
    db = tmp_path / "conversations.sqlite3"
    process = helper_process("stream_writer_process.py", str(db), str(PAIRS))
    try:
        conversation_id = _read_until(process, "ready")[0]
        saved = _read_until(process, "saved", count=15)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=PROCESS_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=PROCESS_TIMEOUT)
        process.stdout.close()
        process.stderr.close()
        process.stdin.close()
    assert process.returncode == -signal.SIGKILL
    last_saved = int(saved[-1])

    # The file is intact even before the app's recovery runs.
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()

    with Store.open(db, recover=False) as store:
        streaming = store.active_path(conversation_id)[-1]
        assert streaming.status == "streaming"
        assert store.recover_interrupted() == [streaming.id]

    with Store.open(db) as store:  # a later start finds nothing more to recover
        assert store.recover_interrupted() == []
        path = store.active_path(conversation_id)
        assert len(path) == 2 * PAIRS + 2
        for i in range(PAIRS):
            assert path[2 * i].message["content"] == f"question {i}"
            assert path[2 * i + 1].message["content"] == f"answer {i}"
            assert path[2 * i + 1].status == "complete"
        assert path[-2].message["content"] == "tell me a long story"
        partial = path[-1]
        assert partial.status == "interrupted"
        assert "interrupted_at" in partial.metadata
        assert partial.metadata["model"] == "m"
        content = partial.message["content"]
        # At least what the writer reported saved, and exactly the stream's words.
        assert len(content) >= last_saved
        assert content == _expected_stream(len(content))[: len(content)]
        assert set(partial.metadata["thinking"]) == {"t"}
        # The partial reply is searchable after recovery.
        assert partial.id in {h.message_id for h in store.search("word3")}


def test_recovery_leaves_a_live_processes_reply_alone(tmp_path: Path, helper_process) -> None:
    db = tmp_path / "conversations.sqlite3"
    with Store.open(db) as store:
        conversation = store.create_conversation()
    process = helper_process("live_streamer_process.py", str(db), conversation.id)
    try:
        message_id = _read_until(process, "streaming")[0]
        with Store.open(db) as store:  # another window starting up meanwhile
            assert store.recover_interrupted() == []
            assert store.get_message(message_id).status == "streaming"
        process.stdin.write("stop\n")
        process.stdin.flush()
        process.wait(timeout=PROCESS_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=PROCESS_TIMEOUT)
        process.stdout.close()
        process.stderr.close()
        process.stdin.close()
    with Store.open(db) as store:
        record = store.get_message(message_id)
        assert record.status == "interrupted"
        assert record.message["content"] == "still writing"
