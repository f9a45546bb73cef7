"""Two processes on one data folder: settings by key, one turn at a time, no forks, no lost events.

The window and ``desktop-agent serve`` (or two servers) share the SQLite file;
each test runs the other side as a real subprocess (store_actor_process.py).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest

from desktop_agent.store import (
    ConversationBusyError,
    NewEvent,
    NotFoundError,
    StaleParentError,
    Store,
    StreamingReplyWriter,
)

PROCESS_TIMEOUT = 60


def _actor(helper_process, *args: str) -> subprocess.Popen[str]:
    return helper_process("store_actor_process.py", *args)


def _finish(process: subprocess.Popen[str]) -> str:
    out, err = process.communicate(timeout=PROCESS_TIMEOUT)
    assert process.returncode == 0, err
    return out


# -- settings ------------------------------------------------------------------------------
def test_patching_settings_keeps_keys_another_process_wrote(store: Store, helper_process) -> None:
    conv = store.create_conversation("shared", {"model": "a", "confirm_tools": True})
    seen_by_window = store.get_conversation(conv.id)
    assert seen_by_window is not None

    _finish(_actor(helper_process, "append", str(store.path), conv.id, "from the server"))
    # The window changes only the temperature, from its stale copy of the settings.
    result = store.patch_settings(conv.id, {"temperature": 0.2})

    assert result == {"model": "a", "confirm_tools": True, "temperature": 0.2,
                      "from_other": "from the server"}
    stored = store.get_conversation(conv.id)
    assert stored is not None and stored.settings == result


def test_a_key_patched_to_none_is_removed_and_bad_values_change_nothing(store: Store) -> None:
    conv = store.create_conversation("c", {"model": "a", "sandbox": "workdir"})
    assert store.patch_settings(conv.id, {"sandbox": None, "tools": ["read_file"]}) == {
        "model": "a", "tools": ["read_file"]}
    with pytest.raises(ValueError, match="sandbox"):
        store.patch_settings(conv.id, {"sandbox": "everything", "model": "b"})
    stored = store.get_conversation(conv.id)
    assert stored is not None and stored.settings == {"model": "a", "tools": ["read_file"]}
    with pytest.raises(NotFoundError):
        store.patch_settings("no-such-conversation", {"model": "b"})


# -- the active leaf -----------------------------------------------------------------------
def test_appending_after_another_process_moved_the_leaf_is_refused(
    store: Store, helper_process
) -> None:
    conv = store.create_conversation("c")
    first = store.add_message(conv.id, {"role": "user", "content": "hi"}, expected_parent=None)
    path_seen = store.active_path(conv.id)
    assert [m.id for m in path_seen] == [first.id]

    _finish(_actor(helper_process, "append", str(store.path), conv.id, "from the API"))

    with pytest.raises(StaleParentError) as refused:
        store.add_message(conv.id, {"role": "user", "content": "window"},
                          expected_parent=path_seen[-1].id)
    assert refused.value.expected == first.id
    assert "changed in another window or server" in str(refused.value)
    # Nothing was written; re-reading the path and appending keeps one branch.
    fresh = store.active_path(conv.id)
    assert [m.message["content"] for m in fresh] == ["hi", "from the API"]
    store.add_message(conv.id, {"role": "user", "content": "window"},
                      expected_parent=fresh[-1].id)
    assert [m.message["content"] for m in store.active_path(conv.id)] == [
        "hi", "from the API", "window"]
    assert store.count_messages(conv.id) == 3


def test_a_streaming_reply_checks_the_leaf_too(store: Store) -> None:
    conv = store.create_conversation("c")
    user = store.add_message(conv.id, {"role": "user", "content": "hi"})
    store.add_message(conv.id, {"role": "user", "content": "moved on"})
    with pytest.raises(StaleParentError):
        StreamingReplyWriter(store, conv.id, expected_parent=user.id)
    assert store.count_messages(conv.id) == 2


# -- change token --------------------------------------------------------------------------
def test_the_change_token_shows_another_processes_write(store: Store, helper_process) -> None:
    conv = store.create_conversation("c")
    before = store.change_token()
    assert store.change_token() == before  # reading changes nothing
    store.add_message(conv.id, {"role": "user", "content": "mine"})
    own = store.change_token()
    assert own != before and not own.changed_elsewhere(before)

    _finish(_actor(helper_process, "append", str(store.path), conv.id, "theirs"))

    after = store.change_token()
    assert after.changed_elsewhere(own)
    assert store.change_token() == after


# -- turn lease ----------------------------------------------------------------------------
def test_two_processes_cannot_both_hold_the_lease(store: Store, helper_process) -> None:
    conv = store.create_conversation("c")
    other = _actor(helper_process, "lease", str(store.path), conv.id, "server:8000")
    try:
        assert other.stdout.readline().strip() == "held"
        assert store.turn_lease_holder(conv.id) == "server:8000"
        with pytest.raises(ConversationBusyError) as refused, store.turn_lease(conv.id, "window"):
            pytest.fail("the window ran a turn while the server held the lease")
        assert str(refused.value) == "This conversation is busy in another window or server."
        assert refused.value.holder == "server:8000"
        other.stdin.write("release\n")
        other.stdin.flush()
        assert other.stdout.readline().strip() == "released"
    finally:
        _finish(other)

    with store.turn_lease(conv.id, "window") as lease:
        assert lease.held and store.turn_lease_holder(conv.id) == "window"
        second = _actor(helper_process, "lease", str(store.path), conv.id, "server:8000")
        assert _finish(second).startswith("busy window: This conversation is busy")
    assert store.turn_lease_holder(conv.id) is None


def test_one_process_holds_one_lease_per_conversation(store: Store) -> None:
    a = store.create_conversation("a")
    b = store.create_conversation("b")
    with (
        store.turn_lease(a.id, "tab 1"),
        store.turn_lease(b.id, "tab 2"),
        pytest.raises(ConversationBusyError),
    ):
        store.turn_lease(a.id, "tab 3").acquire()
    with store.turn_lease(a.id, "tab 3"):
        pass
    with pytest.raises(NotFoundError):
        store.turn_lease("missing", "tab").acquire()


def test_the_lease_of_a_killed_process_is_taken_over(store: Store, helper_process) -> None:
    conv = store.create_conversation("c")
    other = _actor(helper_process, "lease", str(store.path), conv.id, "server:8000")
    assert other.stdout.readline().strip() == "held"
    os.kill(other.pid, signal.SIGKILL)
    other.communicate(timeout=PROCESS_TIMEOUT)

    with store.turn_lease(conv.id, "window") as lease:
        assert lease.held and store.turn_lease_holder(conv.id) == "window"


def test_an_expired_lease_is_taken_over_and_its_holder_learns_it(store: Store) -> None:
    conv = store.create_conversation("c")
    with Store.open(store.path) as other:  # another connection, as a hung second holder
        stale = other.turn_lease(conv.id, "hung", seconds=1.5)
        stale.acquire()
        with pytest.raises(ConversationBusyError):
            store.turn_lease(conv.id, "window").acquire()
        time.sleep(1.6)  # the hung holder never renews
        with store.turn_lease(conv.id, "window"):
            with pytest.raises(ConversationBusyError):
                stale.renew()
            assert stale.lost
            stale.release()  # must not remove the new holder's lease
            assert store.turn_lease_holder(conv.id) == "window"


def _lease_expiry(store: Store, conversation_id: str) -> float:
    with store._reading() as conn:
        row = conn.execute("SELECT expires_at FROM turn_leases WHERE conversation_id = ?",
                           (conversation_id,)).fetchone()
    return float(row[0]) if row else 0.0


async def test_async_lease_renews_itself_and_is_released_on_cancel(store: Store) -> None:
    import asyncio

    conv = store.create_conversation("c")
    entered = asyncio.Event()

    async def turn() -> None:
        async with store.turn_lease(conv.id, "server", seconds=0.3):
            entered.set()
            await asyncio.sleep(60)

    task = asyncio.ensure_future(turn())
    await asyncio.wait_for(entered.wait(), 10)
    first = _lease_expiry(store, conv.id)
    for _ in range(200):  # renewed in the background (every 0.1 s), not by this test
        await asyncio.sleep(0.05)
        if _lease_expiry(store, conv.id) > first:
            break
    assert _lease_expiry(store, conv.id) > first
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert store.turn_lease_holder(conv.id) is None
    assert _lease_expiry(store, conv.id) == 0.0  # the row is gone, not just expired


def test_deleting_a_conversation_removes_its_events_and_lease(store: Store) -> None:
    conv = store.create_conversation("c")
    store.append_events([NewEvent(conv.id, "state", "{}", 1.0)])
    store.turn_lease(conv.id, "window").acquire()
    store.delete_conversation(conv.id)
    assert store.last_event_id(conv.id) == 0
    assert store.turn_lease_holder(conv.id) is None


# -- events --------------------------------------------------------------------------------
def test_two_processes_appending_events_lose_none(store: Store, helper_process) -> None:
    conv = store.create_conversation("c")
    count = 400
    writers = [_actor(helper_process, "events", str(store.path), conv.id, str(count), tag)
               for tag in ("serve-a", "serve-b")]
    for writer in writers:
        assert writer.stdout.readline().strip() == "ready"
    for writer in writers:
        writer.stdin.write("go\n")
        writer.stdin.flush()
    for writer in writers:
        assert _finish(writer).strip() == "done"

    events = store.read_events(conv.id, 0, limit=10_000)
    assert [e.id for e in events] == list(range(1, 2 * count + 1))
    texts = [json.loads(e.data_json)["text"] for e in events]
    for tag in ("serve-a", "serve-b"):
        mine = [t for t in texts if t.startswith(tag)]
        assert mine == [f"{tag} {i}" for i in range(count)], "lost or reordered events"
    assert store.last_event_id(conv.id) == 2 * count
    assert store.read_events(conv.id, after=2 * count - 2, limit=5)[0].id == 2 * count - 1
    assert [e.id for e in store.read_events(conv.id, after=3, limit=10, before=6)] == [4, 5]
    assert store.event_conversations() == [conv.id]


def test_events_table_is_part_of_the_schema(store: Store) -> None:
    conn = sqlite3.connect(store.path)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()
    assert {"events", "turn_leases"} <= tables
    assert "server_events" not in tables

