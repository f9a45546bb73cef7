"""The store on PostgreSQL as several replicas see it: one database, many connections.

Each ``Store.open(url)`` is one connection, as each ``serve`` replica holds one; the
tests open several on a real private cluster (``postgres_url``) and check what the
replicas rely on: they see each other's writes, event ids stay gapless and ordered
under concurrent appends, a commit wakes listeners, one turn lease at a time, and
a lost connection costs one call, not the replica.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from tier_policy import require_module

from desktop_agent.store import (
    ConversationBusyError,
    DatabaseAccessError,
    DatabaseUnusableError,
    NewEvent,
    Store,
    StoredEvent,
)
from desktop_agent.store.dialects import EVENTS_CHANNEL
from desktop_agent.store.postgres.advisory_locks import EVENT_LOCKS
from desktop_agent.store.sql_connection import SqlConnection

require_module("psycopg")  # skips the module locally; fails its collection in CI

import psycopg  # noqa: E402

from desktop_agent.store.postgres.event_listener import read_notification  # noqa: E402

WAIT = 60.0
"""Seconds a thread that should finish gets (only a failure waits that long)."""


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
        when = time.time()
        small = NewEvent(conv.id, "text", '{"text": "hi: there"}', when)
        large = NewEvent(conv.id, "tool_result", json.dumps("x" * 5000), when)
        replicas[1].append_events([small, small, large])
        notes = [n.payload for n in listener.notifies(timeout=30, stop_after=1)]
    assert len(notes) == 1
    newest, carried = read_notification(notes[0])
    assert newest == {conv.id: 3}
    # The small events travel whole (so a replica streaming them need not read them
    # back); the large one is only named, to be read from the table.
    assert carried == [StoredEvent(conv.id, n, "text", '{"text": "hi: there"}', when)
                       for n in (1, 2)]


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
    with b.turn_lease(conv.id, "server:b"):
        # Given back late by its old holder: the new holder's lease stays.
        stale.release()
        assert a.turn_lease_holder(conv.id) == "server:b"
    assert a.turn_lease_holder(conv.id) is None  # given back by its holder: gone
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


# -- what lets several busy replicas write at once ---------------------------------------


def _reach_the_server(conn: SqlConnection) -> None:
    """Wait for a result, so the write's pipelined BEGIN and locks have run."""
    assert conn.execute("SELECT 1").fetchone()[0] == 1


def _in_thread(action: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """Run ``action`` in a thread; its result (or exception) lands in the list."""
    out: list[object] = []

    def run() -> None:
        try:
            out.append(action())
        except BaseException as exc:  # reported by the test, not lost in the thread
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


@contextlib.contextmanager
def _appending(store: Store, conversation_id: str) -> Iterator[SqlConnection]:
    """A transaction holding what an append to the conversation holds while it runs."""
    with store._db.writing_beside() as conn:
        conn.execute("SELECT pg_advisory_xact_lock(?, hashtext(?))",
                     (EVENT_LOCKS, conversation_id))
        yield conn


def test_replicas_append_to_different_conversations_at_once_and_to_one_in_turn(
    replicas: list[Store],
) -> None:
    a, b, _ = replicas
    mine, other = a.create_conversation(), a.create_conversation()
    a.append_events([NewEvent(mine.id, "text", '"1"', time.time())])
    # Replica A is in the middle of appending to `mine` (its transaction still open).
    with _appending(a, mine.id) as conn:
        _reach_the_server(conn)
        # B appends to another conversation meanwhile: it does not wait for A.
        b.append_events([NewEvent(other.id, "text", '"x"', time.time())])
        assert [e.data_json for e in a.read_events(other.id)] == ['"x"']
        # B's append to the same conversation waits for A's to end.
        waiting, result = _in_thread(
            lambda: b.append_events([NewEvent(mine.id, "text", '"2"', time.time())]))
        waiting.join(0.5)
        assert waiting.is_alive() and result == []
    waiting.join(WAIT)
    assert [(e.id, e.data_json) for e in a.read_events(mine.id)] == [(1, '"1"'), (2, '"2"')]


def test_a_whole_write_waits_for_appends_and_appends_wait_for_it(replicas: list[Store]) -> None:
    a, b, _ = replicas
    conv = a.create_conversation("before")
    with _appending(a, conv.id) as conn:
        _reach_the_server(conn)
        renaming, renamed = _in_thread(lambda: b.update_conversation(conv.id, title="after"))
        renaming.join(0.5)
        assert renaming.is_alive()  # an ordinary write runs alone
    renaming.join(WAIT)
    assert not renaming.is_alive() and renamed and not isinstance(renamed[0], BaseException)
    with a._db.writing() as conn:
        _reach_the_server(conn)
        appending, appended = _in_thread(
            lambda: b.append_events([NewEvent(conv.id, "text", '"x"', time.time())]))
        appending.join(0.5)
        assert appending.is_alive() and appended == []
    appending.join(WAIT)
    assert b.last_event_id(conv.id) == 1


def test_a_replica_reads_while_its_own_write_waits_for_another_replica(
    replicas: list[Store],
) -> None:
    a, b, _ = replicas
    conv = a.create_conversation("shared")
    with a._db.writing() as conn:  # A writes; every replica's next whole write waits
        _reach_the_server(conn)
        writing, _ = _in_thread(lambda: b.update_conversation(conv.id, title="B's"))
        writing.join(0.5)
        assert writing.is_alive()
        # B's own write is stuck behind A, yet B still answers reads (its pool).
        reading, read = _in_thread(lambda: b.get_conversation(conv.id).title)
        reading.join(WAIT)
        assert read == ["shared"]
        assert writing.is_alive()
    writing.join(WAIT)
    assert a.get_conversation(conv.id).title == "B's"


def test_one_notification_per_commit_names_every_conversation_appended_to(
    postgres_url: str, replicas: list[Store],
) -> None:
    a, _, _ = replicas
    convs = [a.create_conversation() for _ in range(3)]
    with psycopg.connect(postgres_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {EVENTS_CHANNEL}")
        a.append_events([NewEvent(c.id, "text", f'"{n}"', time.time())
                         for n in range(2) for c in convs])
        notes = [n.payload for n in listener.notifies(timeout=30, stop_after=1)]
        newest, carried = read_notification(notes[0])
        assert newest == {c.id: 2 for c in convs}
        assert sorted((e.conversation_id, e.id, e.data_json) for e in carried) == sorted(
            (c.id, n + 1, f'"{n}"') for n in range(2) for c in convs)
        assert list(listener.notifies(timeout=0.2)) == []  # and no other


def test_a_batch_naming_many_conversations_is_heard_in_notifications_of_postgresql_size(
    postgres_url: str, replicas: list[Store],
) -> None:
    a, _, _ = replicas
    ids = [f"{n:032x}" for n in range(1000)]  # 40 KB of lines: more than one NOTIFY holds
    with psycopg.connect(postgres_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {EVENTS_CHANNEL}")
        a.append_events([NewEvent(cid, "text", f'"{n}"', time.time())
                         for n in range(2) for cid in ids])
        heard: dict[str, int] = {}
        events: list[StoredEvent] = []
        payloads: list[str] = []
        for note in listener.notifies(timeout=30):
            payloads.append(note.payload)
            newest, carried = read_notification(note.payload)
            heard.update(newest)
            events += carried
            if len(heard) == len(ids):
                break
    assert len(payloads) > 1
    assert all(len(p.encode()) < 8000 for p in payloads)
    assert heard == dict.fromkeys(ids, 2)
    assert sorted((e.conversation_id, e.id, e.data_json) for e in events) == sorted(
        (cid, n + 1, f'"{n}"') for cid in ids for n in range(2))


def test_a_replica_hears_other_replicas_commits_not_its_own(replicas: list[Store]) -> None:
    a, b, _ = replicas
    conv = a.create_conversation()
    heard: list[dict[str, int]] = []
    stop = a.watch_events(lambda newest, _carried: heard.append(newest))
    assert stop is not None
    try:
        deadline = time.monotonic() + WAIT
        while not heard and time.monotonic() < deadline:  # until the listener listens
            b.append_events([NewEvent(conv.id, "text", '"b"', time.time())])
            time.sleep(0.2)
        a.append_events([NewEvent(conv.id, "text", '"a"', time.time())])
        newest = b.append_events([NewEvent(conv.id, "text", '"b"', time.time())])[-1].id
        while (not heard or heard[-1] != {conv.id: newest}) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop()
    assert heard and heard[-1] == {conv.id: newest}
    assert {conv.id: newest - 1} not in heard  # A's own append was not reported to A


def test_new_events_of_many_conversations_are_read_in_one_call(replicas: list[Store]) -> None:
    a, b, _ = replicas
    convs = [a.create_conversation() for _ in range(3)]
    a.append_events([NewEvent(c.id, "text", f'"{c.id[:4]}{n}"', time.time())
                     for n in range(4) for c in convs])
    found = b.read_events_after({convs[0].id: 0, convs[1].id: 2, convs[2].id: 4})
    assert [e.id for e in found[convs[0].id]] == [1, 2, 3, 4]
    assert [e.data_json for e in found[convs[1].id]] == [
        f'"{convs[1].id[:4]}2"', f'"{convs[1].id[:4]}3"']
    assert convs[2].id not in found
    capped = b.read_events_after({convs[0].id: 0, convs[1].id: 0}, limit=5)
    assert sum(len(events) for events in capped.values()) == 5
    for events in capped.values():  # each conversation's oldest, without a hole
        assert [e.id for e in events] == list(range(1, len(events) + 1))


def _listening_connections(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND application_name = 'desktop-agent listen'").fetchone()
    return int(row[0])


def _wait_for(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + WAIT
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def test_a_replica_hears_events_approvals_and_callbacks_on_one_connection(
    postgres_url: str, replicas: list[Store],
) -> None:
    # PostgreSQL wakes every listening backend of a database at each NOTIFY: a
    # connection per channel made each commit of events wake two backends for nothing.
    a, b, _ = replicas
    conv = a.create_conversation()
    events: list[dict[str, int]] = []
    answers: list[str] = []
    callbacks: list[str] = []
    stops = [a.watch_events(lambda newest, _carried: events.append(newest)),
             a.watch_approvals(answers.append),
             a.watch_callbacks(callbacks.append)]
    try:
        assert _wait_for(lambda: "" in callbacks)  # listening (the reload signal)
        assert _listening_connections(postgres_url) == 1
        newest = b.append_events([NewEvent(conv.id, "text", '"b"', time.time())])[-1].id
        with psycopg.connect(postgres_url, autocommit=True) as other:
            other.execute("SELECT pg_notify('desktop_agent_approvals', %s)", (f"{conv.id}:0",))
            other.execute("SELECT pg_notify('desktop_agent_callbacks', %s)", (conv.id,))
        assert _wait_for(lambda: {conv.id: newest} in events and conv.id in answers
                         and conv.id in callbacks)
    finally:
        for stop in stops:
            assert stop is not None
            stop()
    assert _wait_for(lambda: _listening_connections(postgres_url) == 0)


def test_event_data_and_times_come_back_exactly_as_appended(
    postgres_url: str, replicas: list[Store],
) -> None:
    a, b, _ = replicas
    conv = a.create_conversation()
    texts = ['{"text": "caf\u00e9 \\"quoted\\" back\\\\slash \\n tab\\t \\u0000 \U0001f600"}',
             json.dumps({"text": "x" * 900}),  # too large to travel in the notification
             json.dumps({"nested": {"a": [1, 2.5, None, True]}, "t": "\u2028"},
                        ensure_ascii=False)]
    times = [1700000000.123456, 0.1 + 0.2, time.time()]
    with psycopg.connect(postgres_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {EVENTS_CHANNEL}")
        appended = list(enumerate(zip(texts, times, strict=True)))
        stored = a.append_events([NewEvent(conv.id, f"type{n}", text, at)
                                  for n, (text, at) in appended])
        notes = [n.payload for n in listener.notifies(timeout=30, stop_after=1)]
    assert [(e.id, e.type, e.data_json, e.created_at) for e in stored] == [
        (n + 1, f"type{n}", text, at) for n, (text, at) in appended]
    read = b.read_events(conv.id)
    assert [(e.id, e.type, e.data_json, e.created_at) for e in read] == [
        (e.id, e.type, e.data_json, e.created_at) for e in stored]
    newest, carried = read_notification(notes[0])
    assert newest == {conv.id: 3}
    assert [(e.id, e.data_json, e.created_at) for e in carried] == [
        (e.id, e.data_json, e.created_at) for e in stored if e.id != 2]


def test_an_append_on_a_lost_or_read_only_connection_says_so_and_the_next_one_works(
    postgres_url: str, replicas: list[Store],
) -> None:
    # Appends run as a statement prepared on the connection, straight on libpq.
    a, b, _ = replicas
    conv = a.create_conversation()
    assert [e.id for e in a.append_events([NewEvent(conv.id, "text", '"1"', time.time())])] == [1]
    with a._reading() as conn:
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    with b._reading() as conn:
        conn.execute("SELECT pg_terminate_backend(?)", (pid,))
    with pytest.raises(DatabaseAccessError, match="could not be used"):
        a.append_events([NewEvent(conv.id, "text", '"lost"', time.time())])
    # A new connection: the statement is prepared again there.
    assert [e.id for e in a.append_events([NewEvent(conv.id, "text", '"2"', time.time())])] == [2]
    with a._reading() as conn:
        conn.execute("SET default_transaction_read_only = on")
    with pytest.raises(DatabaseAccessError, match=r"could not be used.*read-only"):
        a.append_events([NewEvent(conv.id, "text", '"refused"', time.time())])
    with a._reading() as conn:
        conn.execute("SET default_transaction_read_only = off")
    assert [e.id for e in a.append_events([NewEvent(conv.id, "text", '"3"', time.time())])] == [3]
    assert [e.data_json for e in b.read_events(conv.id)] == ['"1"', '"2"', '"3"']


def test_a_lost_listening_connection_is_made_again_and_says_so(
    postgres_url: str, replicas: list[Store],
) -> None:
    a, b, _ = replicas
    conv = a.create_conversation()
    events: list[dict[str, int]] = []
    callbacks: list[str] = []
    stops = [a.watch_events(lambda newest, _carried: events.append(newest)),
             a.watch_callbacks(callbacks.append)]
    try:
        assert _wait_for(lambda: callbacks == [""])  # listening
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                          " WHERE datname = current_database()"
                          " AND application_name = 'desktop-agent listen'")
        # Listening again: the callbacks' reload signal once more, then events are heard.
        assert _wait_for(lambda: callbacks == ["", ""])
        newest = b.append_events([NewEvent(conv.id, "text", '"b"', time.time())])[-1].id
        assert _wait_for(lambda: {conv.id: newest} in events)
    finally:
        for stop in stops:
            assert stop is not None
            stop()
