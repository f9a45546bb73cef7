"""The store on PostgreSQL as several replicas see it: one database, many connections.

Each ``Store.open(url)`` is one connection, as each ``serve`` replica holds one; the
tests open several on a real private cluster (``postgres_url``) and check what the
replicas rely on: they see each other's writes, event ids stay gapless and ordered
under concurrent appends, a commit wakes listeners, one turn lease at a time, and
a lost connection costs one call, not the replica.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from desktop_agent.store import (
    ConversationBusyError,
    DatabaseAccessError,
    DatabaseUnusableError,
    NewEvent,
    Store,
)
from desktop_agent.store.dialects import EVENTS_CHANNEL

psycopg = pytest.importorskip("psycopg")  # the fixture fails in CI before this matters


@pytest.fixture
def replicas(postgres_url: str) -> Iterator[list[Store]]:
    """Three stores on one database, as three ``serve`` replicas hold them."""
    stores = [Store.open(postgres_url) for _ in range(3)]
    try:
        yield stores
    finally:
        for store in stores:
            store.close()


def test_a_conversation_written_on_one_replica_is_read_and_continued_on_another(
    postgres_url: str, replicas: list[Store],
) -> None:
    a, b, c = replicas
    conv = a.create_conversation("Shared", {"model": "m"})
    b.add_message(conv.id, {"role": "user", "content": "from B"})
    c.add_message(conv.id, {"role": "assistant", "content": "from C"})
    assert [m.message["content"] for m in a.active_path(conv.id)] == ["from B", "from C"]
    assert a.patch_settings(conv.id, {"temperature": 0.5}) == {"model": "m", "temperature": 0.5}
    assert b.get_conversation(conv.id).settings == {"model": "m", "temperature": 0.5}
    assert a.engine == "postgresql" and a.path is None
    password = postgres_url.split(":")[2].split("@")[0]
    assert a.location.startswith("postgresql://desktop_agent_tests@127.0.0.1:")
    assert password not in a.location


def test_the_change_token_moves_for_other_replicas_writes_only(replicas: list[Store]) -> None:
    a, b, _ = replicas
    before = a.change_token()
    a.create_conversation("mine")
    after_own = a.change_token()
    assert not after_own.changed_elsewhere(before)
    b.create_conversation("theirs")
    assert a.change_token().changed_elsewhere(after_own)


def test_events_appended_at_once_by_three_replicas_get_gapless_ordered_ids(
    replicas: list[Store],
) -> None:
    conv = replicas[0].create_conversation()
    per_replica, batch = 60, 3
    errors: list[BaseException] = []

    def append(store: Store, tag: str) -> None:
        try:
            for n in range(0, per_replica, batch):
                store.append_events([
                    NewEvent(conv.id, "text", f'"{tag}{n + i}"', time.time()) for i in range(batch)
                ])
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=append, args=(store, tag))
               for store, tag in zip(replicas, "abc", strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    events = replicas[1].read_events(conv.id, limit=1000)
    assert [e.id for e in events] == list(range(1, 3 * per_replica + 1))
    for tag in "abc":
        mine = [e.data_json for e in events if e.data_json.startswith(f'"{tag}')]
        assert mine == [f'"{tag}{n}"' for n in range(per_replica)]  # each replica's in order
    assert replicas[2].last_event_id(conv.id) == 3 * per_replica


def test_a_commit_of_events_wakes_a_listener_on_another_connection(
    postgres_url: str, replicas: list[Store],
) -> None:
    conv = replicas[0].create_conversation()
    with psycopg.connect(postgres_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {EVENTS_CHANNEL}")
        replicas[1].append_events([NewEvent(conv.id, "text", '"hi"', time.time())] * 2)
        notes = [n.payload for n in listener.notifies(timeout=30, stop_after=1)]
    assert notes == [f"{conv.id}:2"]


def test_one_turn_lease_across_replicas(replicas: list[Store]) -> None:
    a, b, _ = replicas
    conv = a.create_conversation()
    with a.turn_lease(conv.id, "server:a"):
        with pytest.raises(ConversationBusyError) as refused:
            b.turn_lease(conv.id, "server:b").acquire()
        assert refused.value.holder == "server:a"
        assert b.turn_lease_holder(conv.id) == "server:a"
    with b.turn_lease(conv.id, "server:b"):
        assert a.turn_lease_holder(conv.id) == "server:b"


def test_an_expired_lease_is_taken_over_by_another_replica(replicas: list[Store]) -> None:
    a, b, _ = replicas
    conv = a.create_conversation()
    stale = a.turn_lease(conv.id, "server:a", seconds=0.2)
    stale.acquire()
    time.sleep(0.3)
    with b.turn_lease(conv.id, "server:b"), pytest.raises(ConversationBusyError):
        stale.renew()
    assert stale.lost


def test_a_lost_connection_fails_one_call_and_the_next_connects_again(
    postgres_url: str, replicas: list[Store],
) -> None:
    a, b, _ = replicas
    conv = a.create_conversation("before")
    with a._reading() as conn:
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    with b._reading() as conn:
        conn.execute("SELECT pg_terminate_backend(?)", (pid,))
    with pytest.raises(DatabaseAccessError, match="could not be used"):
        a.get_conversation(conv.id)
    assert a.get_conversation(conv.id).title == "before"


def test_a_failed_write_says_so_and_changes_nothing(replicas: list[Store]) -> None:
    a, _, _ = replicas
    conv = a.create_conversation()
    a.add_message(conv.id, {"role": "user", "content": "kept"})
    with a._reading() as conn:
        conn.execute("SET default_transaction_read_only = on")
    with pytest.raises(DatabaseAccessError, match="could not be used"):
        a.add_message(conv.id, {"role": "user", "content": "lost?"})
    with a._reading() as conn:
        conn.execute("SET default_transaction_read_only = off")
    assert [m.message["content"] for m in a.active_path(conv.id)] == ["kept"]


def test_a_wrong_password_is_refused_in_words_without_the_password(postgres_url: str) -> None:
    secret = postgres_url.split(":")[2].split("@")[0]
    wrong = postgres_url.replace(secret, "wrong-password-123")
    with pytest.raises(DatabaseUnusableError, match="Cannot connect") as refused:
        Store.open(wrong)
    assert "wrong-password-123" not in str(refused.value)
    assert secret not in str(refused.value)


def test_a_database_of_another_program_is_left_untouched(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int)")
    with pytest.raises(DatabaseUnusableError, match="another program"):
        Store.open(postgres_url)
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
        ).fetchall()
    assert tables == [("invoices",)]
