"""Conversations, the message tree, paging, search and app settings on both engines.

The tests that take ``store`` run on a real SQLite file and on a real PostgreSQL
database (``engine_store``); those about SQLite's own file and PRAGMAs take
``sqlite_store``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from desktop_agent.store import (
    ConversationBusyError,
    DatabaseAccessError,
    NewConversation,
    NewMessage,
    NotFoundError,
    SecretInSettingsError,
    StaleParentError,
    Store,
    StoreClosedError,
    StreamingReplyWriter,
)


@pytest.fixture
def store(engine_store: Store) -> Store:
    """This module's store: each engine in turn."""
    return engine_store


def _texts(records):
    return [r.message["content"] for r in records]


def test_messages_survive_reopening_in_order(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    with Store.open(path) as store:
        conv = store.create_conversation("Trip", {"model": "qwen", "temperature": 0.2})
        store.add_message(conv.id, {"role": "user", "content": "Plan a trip"})
        store.add_message(
            conv.id,
            {"role": "assistant", "content": "Sure", "tool_calls": None},
            metadata={"model": "qwen", "usage": {"prompt_tokens": 5, "completion_tokens": 1}},
        )
    with Store.open(path) as store:
        again = store.get_conversation(conv.id)
        assert again is not None
        assert again.title == "Trip"
        assert again.settings == {"model": "qwen", "temperature": 0.2}
        path_records = store.active_path(conv.id)
        assert _texts(path_records) == ["Plan a trip", "Sure"]
        assert path_records[1].metadata["usage"]["completion_tokens"] == 1
        assert path_records[1].parent_id == path_records[0].id


def test_journal_is_wal(sqlite_store: Store) -> None:
    with sqlite_store._reading() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_regenerating_adds_a_sibling_branch_and_remembers_the_active_one(store: Store) -> None:
    conv = store.create_conversation()
    question = store.add_message(conv.id, {"role": "user", "content": "Q"})
    first = store.add_message(conv.id, {"role": "assistant", "content": "A1"})
    store.add_message(conv.id, {"role": "user", "content": "follow-up"})
    second = store.add_message(
        conv.id, {"role": "assistant", "content": "A2"}, parent_id=question.id
    )

    assert _texts(store.active_path(conv.id)) == ["Q", "A2"]
    assert [s.id for s in store.siblings(first.id)] == [first.id, second.id]

    # Switch back to the first branch: its newest leaf comes back with it.
    store.set_active_leaf(conv.id, store.latest_leaf(first.id))
    assert _texts(store.active_path(conv.id)) == ["Q", "A1", "follow-up"]
    assert store.get_conversation(conv.id).active_leaf_id == store.latest_leaf(first.id)
    assert store.count_messages(conv.id) == 4
    # The window asks which version a message is ("‹ 1/2 ›").
    assert store.branch_position(first.id) == (1, 2)
    assert store.branch_position(second.id) == (2, 2)
    assert store.branch_position(question.id) is None


def test_editing_the_first_message_starts_a_new_root(store: Store) -> None:
    conv = store.create_conversation()
    original = store.add_message(conv.id, {"role": "user", "content": "hello"})
    store.add_message(conv.id, {"role": "assistant", "content": "hi"})
    edited = store.add_message(conv.id, {"role": "user", "content": "hello, edited"}, new_root=True)
    assert _texts(store.active_path(conv.id)) == ["hello, edited"]
    assert [r.id for r in store.siblings(original.id)] == [original.id, edited.id]
    assert [r.id for r in store.children(None, conv.id)] == [original.id, edited.id]


def test_last_page_of_a_long_branch_and_paging_in_older_messages(store: Store) -> None:
    conv = store.create_conversation()
    for i in range(250):
        store.add_message(conv.id, {"role": "user", "content": f"m{i}"})
    page = store.active_path(conv.id, limit=50)
    assert _texts(page) == [f"m{i}" for i in range(200, 250)]
    assert page[0].depth == 200  # 200 older messages exist
    older = store.active_path(conv.id, limit=50, before=page[0].id)
    assert _texts(older) == [f"m{i}" for i in range(150, 200)]
    oldest = store.active_path(conv.id, limit=500, before=page[0].id)
    assert len(oldest) == 200 and oldest[0].depth == 0
    assert len(store.active_path(conv.id)) == 250


def _work_to_open(store: Store, conversation_id: str, limit: int | None) -> int:
    """SQLite virtual-machine steps spent reading the active branch (a size, not a time)."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    with store._reading() as conn:
        conn.set_progress_handler(count, 1)
    try:
        store.active_path(conversation_id, limit=limit)
    finally:
        with store._reading() as conn:
            conn.set_progress_handler(None, 1)
    return steps


def test_opening_a_long_conversation_reads_only_the_last_page(sqlite_store: Store) -> None:
    def chain(n: int) -> NewConversation:
        return NewConversation(
            title=f"{n}",
            settings={},
            messages=[
                NewMessage(str(i), str(i - 1) if i else None, {"role": "user", "content": f"m{i}"})
                for i in range(n)
            ],
        )

    short, long = sqlite_store.insert_conversations([chain(100), chain(10_000)])
    page_short = _work_to_open(sqlite_store, short.id, 50)
    page_long = _work_to_open(sqlite_store, long.id, 50)
    whole_long = _work_to_open(sqlite_store, long.id, None)
    # The first page of 10,000 messages costs what the first page of 100 costs...
    assert page_long <= page_short * 1.2
    # ...and a small fraction of reading the whole branch.
    assert page_long * 20 < whole_long


def test_streaming_reply_is_checkpointed_then_completed(store: Store) -> None:
    conv = store.create_conversation()
    store.add_message(conv.id, {"role": "user", "content": "story"})
    writer = StreamingReplyWriter(store, conv.id, interval=0)
    writer.append_thinking("let me think")
    writer.append_text("Once upon")
    # Saved at once by the caller on SQLite, by the background saver on a database
    # server (so a loop feeding many replies never waits for the network).
    deadline = time.monotonic() + 30
    while writer.saved_chars != len("Once upon"):
        assert time.monotonic() < deadline, "the reply was never saved"
        time.sleep(0.02)
    stored = store.get_message(writer.message_id)
    assert stored.status == "streaming"
    assert stored.message["content"] == "Once upon"
    assert stored.metadata["thinking"] == "let me think"
    assert writer.saved_chars == len("Once upon")

    writer.append_text(" a time")
    done = writer.finish(metadata={"model": "m", "usage": {"completion_tokens": 3}})
    assert done.status == "complete"
    final = store.get_message(writer.message_id)
    assert final.message == {"role": "assistant", "content": "Once upon a time"}
    assert final.metadata == {
        "thinking": "let me think",
        "model": "m",
        "usage": {"completion_tokens": 3},
    }
    # A checkpoint arriving after completion must not undo the final text.
    store.checkpoint_message(writer.message_id, "Once")
    assert store.get_message(writer.message_id).message["content"] == "Once upon a time"


def test_a_pause_after_a_delta_still_saves_it_within_the_interval(store: Store) -> None:
    conv = store.create_conversation()
    writer = StreamingReplyWriter(store, conv.id, interval=0.2)
    writer.append_text("first ")  # saved at once? no: the interval has not passed yet
    writer.append_text("words")
    # No more deltas arrive (the model pauses); the background saver writes it anyway.
    deadline = time.monotonic() + 30
    while store.get_message(writer.message_id).message["content"] != "first words":
        assert time.monotonic() < deadline, "the paused reply was never saved"
        time.sleep(0.02)
    assert writer.saved_chars == len("first words")
    writer.finish()


def test_a_sooner_deadline_wakes_the_saver_sleeping_until_a_later_one(store: Store) -> None:
    conv = store.create_conversation()
    slow = StreamingReplyWriter(store, conv.id, interval=3600)
    slow.append_text("later")  # the saver now sleeps until this one is due, an hour away
    time.sleep(0.1)
    quick = StreamingReplyWriter(store, conv.id, parent_id=slow.message_id, interval=0.2)
    quick.append_text("soon")
    deadline = time.monotonic() + 10
    while store.get_message(quick.message_id).message["content"] != "soon":
        assert time.monotonic() < deadline, "the saver kept sleeping past the sooner deadline"
        time.sleep(0.02)
    assert store.get_message(slow.message_id).message["content"] == ""
    quick.finish()
    slow.finish()


def test_writer_with_a_long_interval_saves_on_finish_only(store: Store) -> None:
    conv = store.create_conversation()
    writer = StreamingReplyWriter(store, conv.id, interval=3600)
    writer.append_text("abc")
    assert store.get_message(writer.message_id).message["content"] == ""
    writer.flush()
    assert store.get_message(writer.message_id).message["content"] == "abc"


def test_tool_call_and_result_with_approval_metadata(store: Store) -> None:
    conv = store.create_conversation()
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    assistant = store.add_message(conv.id, call)
    store.update_message_metadata(
        assistant.id,
        {
            "tool_calls": {
                "call_1": {"status": "ok", "approval": {"decision": "allow", "by": "user"}}
            }
        },
    )
    store.add_message(
        conv.id, {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "18C"}
    )
    path = store.active_path(conv.id)
    assert path[0].metadata["tool_calls"]["call_1"]["approval"]["decision"] == "allow"
    assert path[1].message["tool_call_id"] == "call_1"
    # Tool names and arguments are searchable.
    assert [h.message_id for h in store.search("Paris")] == [assistant.id]


def test_search_finds_words_across_conversations_and_tolerates_syntax(store: Store) -> None:
    a = store.create_conversation("Cooking")
    b = store.create_conversation("Travel")
    store.add_message(a.id, {"role": "user", "content": "How long to boil an egg?"})
    hit = store.add_message(b.id, {"role": "user", "content": "Trains from Zürich to Milano"})
    assert [h.message_id for h in store.search("zurich milan")] == [hit.id]  # diacritics, prefix
    assert "[Zürich]" in store.search("zurich")[0].snippet
    assert store.search('"unbalanced AND (') == []  # typed text never breaks the query language
    assert store.search("   ") == []
    assert [c.id for c in store.list_conversations(query="egg")] == [a.id]
    assert [c.id for c in store.list_conversations(query="trav")] == [b.id]  # title match
    assert [c.id for c in store.list_conversations(query="100%")] == []


def test_list_is_newest_first_and_pages(store: Store) -> None:
    ids = [store.create_conversation(f"c{i}").id for i in range(5)]
    store.add_message(ids[1], {"role": "user", "content": "bump"})
    listed = [c.id for c in store.list_conversations()]
    assert listed[0] == ids[1]
    assert listed[1:] == [ids[4], ids[3], ids[2], ids[0]]
    assert [c.id for c in store.list_conversations(limit=2, offset=1)] == [ids[4], ids[3]]
    assert store.count_conversations() == 5


def test_update_and_delete_conversation(store: Store) -> None:
    conv = store.create_conversation("old")
    store.add_message(conv.id, {"role": "user", "content": "findme"})
    updated = store.update_conversation(conv.id, title="new", settings={"model": "x"})
    assert (updated.title, updated.settings) == ("new", {"model": "x"})
    store.delete_conversation(conv.id)
    assert store.get_conversation(conv.id) is None
    assert store.search("findme") == []
    with pytest.raises(NotFoundError):
        store.active_path(conv.id)


def test_unknown_ids_raise_not_found(store: Store) -> None:
    conv = store.create_conversation()
    with pytest.raises(NotFoundError):
        store.add_message("nope", {"role": "user", "content": "x"})
    with pytest.raises(NotFoundError):
        store.add_message(conv.id, {"role": "user", "content": "x"}, parent_id="nope")
    with pytest.raises(NotFoundError):
        store.set_active_leaf(conv.id, "nope")
    with pytest.raises(NotFoundError):
        store.checkpoint_message("nope", "x")
    with pytest.raises(ValueError, match="role"):
        store.add_message(conv.id, {"content": "no role"})
    assert store.count_messages(conv.id) == 0


def test_a_message_from_another_conversation_cannot_be_a_parent(store: Store) -> None:
    a = store.create_conversation()
    b = store.create_conversation()
    m = store.add_message(a.id, {"role": "user", "content": "x"})
    with pytest.raises(NotFoundError):
        store.add_message(b.id, {"role": "user", "content": "y"}, parent_id=m.id)


def test_a_prompt_stored_with_the_lease_is_all_or_nothing(store: Store) -> None:
    """A turn's start: the lease and the prompt in one write, neither without the other."""
    conv = store.create_conversation()
    first = store.add_message(conv.id, {"role": "user", "content": "first"})
    # Held elsewhere: refused, and the prompt is not stored.
    with store.turn_lease(conv.id, "server:other"):
        refused = store.turn_lease(conv.id, "window")
        with pytest.raises(ConversationBusyError):
            store.add_message(conv.id, {"role": "user", "content": "lost"},
                              expected_parent=first.id, lease=refused)
        assert not refused.held
    assert [m.message["content"] for m in store.active_path(conv.id)] == ["first"]
    # The branch moved meanwhile: refused, and no lease is left behind.
    stale = store.turn_lease(conv.id, "window")
    with pytest.raises(StaleParentError):
        store.add_message(conv.id, {"role": "user", "content": "late"},
                          expected_parent=None, lease=stale)
    assert not stale.held and store.turn_lease_holder(conv.id) is None
    # A reply left streaming by a turn cut off is marked interrupted as the lease is taken.
    cut = StreamingReplyWriter(store, conv.id, interval=60.0)
    cut.append_text("half")
    cut.flush()
    lease = store.turn_lease(conv.id, "window")
    prompt = store.add_message(conv.id, {"role": "user", "content": "second"},
                               expected_parent=cut.message_id, lease=lease)
    try:
        assert lease.held and store.turn_lease_holder(conv.id) == "window"
        path = store.active_path(conv.id)
        assert [(m.message.get("content"), m.status) for m in path] == [
            ("first", "complete"), ("half", "interrupted"), ("second", "complete")]
        assert path[-1].id == prompt.id
    finally:
        lease.release()
    with pytest.raises(ValueError, match="another conversation"):
        store.add_message(store.create_conversation().id, {"role": "user", "content": "x"},
                          lease=store.turn_lease(conv.id, "window"))


def test_a_conversation_is_read_with_its_active_branch(store: Store) -> None:
    conv = store.create_conversation("with a branch", settings={"model": "m"})
    assert store.conversation_with_path(conv.id) == (store.get_conversation(conv.id), [])
    first = store.add_message(conv.id, {"role": "user", "content": "a"})
    store.add_message(conv.id, {"role": "assistant", "content": "b"})
    store.add_message(conv.id, {"role": "assistant", "content": "c"}, parent_id=first.id)
    record, path = store.conversation_with_path(conv.id)
    assert record == store.get_conversation(conv.id) and record.settings == {"model": "m"}
    assert path == store.active_path(conv.id)
    assert [m.message["content"] for m in path] == ["a", "c"]
    assert store.conversation_with_path("nope") is None


def test_a_write_naming_the_wrong_conversation_is_refused(store: Store) -> None:
    a = store.create_conversation()
    b = store.create_conversation()
    reply = store.add_message(a.id, {"role": "assistant", "content": "x"})
    with pytest.raises(NotFoundError):
        store.complete_message(reply.id, {"role": "assistant", "content": "y"},
                               conversation_id=b.id)
    with pytest.raises(NotFoundError):
        store.update_message_metadata(reply.id, {"usage": {}}, conversation_id=b.id)
    done = store.complete_message(reply.id, {"role": "assistant", "content": "y"},
                                  {"model": "m"}, conversation_id=a.id)
    updated = store.update_message_metadata(reply.id, {"usage": {"n": 1}}, conversation_id=a.id)
    assert done.message["content"] == "y"
    assert updated.metadata == {"model": "m", "usage": {"n": 1}}
    assert store.active_path(a.id)[-1].message["content"] == "y"


def test_key_values_are_refused_in_settings_and_redacted_in_metadata(store: Store) -> None:
    with pytest.raises(SecretInSettingsError, match="api_key") as caught:
        store.create_conversation("x", {"api_key": "abcd-1234-efgh"})
    assert "abcd-1234-efgh" not in str(caught.value)
    assert store.count_conversations() == 0
    conv = store.create_conversation("x", {"api_key_name": "api:LM Studio"})
    with pytest.raises(SecretInSettingsError):
        store.update_conversation(conv.id, settings={"extra_body": {"auth": "Bearer abcdefghijkl"}})
    with pytest.raises(SecretInSettingsError):
        store.set_setting("github_token", "ghp_" + "a" * 30)
    m = store.add_message(
        conv.id,
        {"role": "user", "content": "hi"},
        metadata={"request": {"headers": {"Authorization": "Bearer sk-planted-test-key-abcd"}}},
    )
    assert store.get_message(m.id).metadata == {
        "request": {"headers": {"Authorization": "[redacted]"}}
    }


def test_app_settings_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    with Store.open(path) as store:
        assert store.get_setting("open_tabs", []) == []
        store.set_setting("open_tabs", {"ids": ["a", "b"], "current": 1})
        store.set_setting("open_tabs", {"ids": ["b"], "current": 0})
    with Store.open(path) as store:
        assert store.get_setting("open_tabs") == {"ids": ["b"], "current": 0}
        store.delete_setting("open_tabs")
        assert store.get_setting("open_tabs", "gone") == "gone"


def test_a_recent_list_keeps_the_newest_first_once_each_up_to_its_limit(store: Store) -> None:
    for folder in ("/p/a", "/p/b", "/p/c", "/p/a", "/p/d"):
        kept = store.remember_recent("recent_folders", folder, 3)
    assert kept == ["/p/d", "/p/a", "/p/c"]
    assert store.get_setting("recent_folders") == kept


def test_a_failed_write_says_so_and_changes_nothing(sqlite_store: Store) -> None:
    conv = sqlite_store.create_conversation()
    sqlite_store.add_message(conv.id, {"role": "user", "content": "kept"})
    with sqlite_store._reading() as conn:
        conn.execute("PRAGMA query_only = 1")  # the disk refuses writes from now on
    with pytest.raises(DatabaseAccessError, match="could not be used"):
        sqlite_store.add_message(conv.id, {"role": "user", "content": "lost?"})
    with sqlite_store._reading() as conn:
        conn.execute("PRAGMA query_only = 0")
    assert _texts(sqlite_store.active_path(conv.id)) == ["kept"]
    sqlite_store.add_message(conv.id, {"role": "user", "content": "works again"})
    assert sqlite_store.count_messages(conv.id) == 2


def test_closed_store_says_so(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "x.sqlite3")
    store.close()
    store.close()
    with pytest.raises(StoreClosedError):
        store.list_conversations()


def test_default_location_follows_the_data_dir_variable(data_dir: Path) -> None:
    with Store.open() as store:
        store.create_conversation("here")
        assert store.path == data_dir / "conversations.sqlite3"
    assert (data_dir / "conversations.sqlite3").is_file()
