"""A turn's start reads the branch back to its newest compaction, not whole.

Against the real store and the scripted model server: a conversation long
enough to be compacted several times (its model's window is small), then a
session opened on it again. The request a turn sends from the tail it read is
the one the whole branch gives (answered again with the whole branch read,
as Regenerate reads it), its compaction's stored end names the message the
model's view continues from, and the start reads a small part of the branch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from turn_waits import finished

from desktop_agent.core.context.summary_request import SUMMARY_INSTRUCTIONS
from desktop_agent.session import ConversationSession, SessionEnvironment
from desktop_agent.session.branch import branch_pages
from desktop_agent.session.tools.config import AppConfig
from desktop_agent.session.tools.tool_catalog import ToolCatalog
from desktop_agent.store import Store
from desktop_agent.testing import ScriptedServer, script

LONG_ANSWER = " ".join(f"word{i}" for i in range(180))



def is_summary(body: dict[str, Any]) -> bool:
    return body["messages"][0].get("content") == SUMMARY_INSTRUCTIONS


def answers(model_server: ScriptedServer) -> None:
    def respond(body: dict[str, Any]) -> Any:
        if is_summary(body):
            return script.text("The person asked about words.")
        return script.text(LONG_ANSWER)

    model_server.responder = respond


def open_session(store: Store, data_dir: Path, asker: Any,
                 conversation_id: str) -> ConversationSession:
    config = AppConfig(data_dir / "config.json")
    env = SessionEnvironment(tools=ToolCatalog([], include_builtin=False, config=config),
                             config=config)
    return ConversationSession(store, conversation_id, env, asker, owner="test")


class BranchReads:
    """Counts the messages each read of the branch returned (the store's own reads)."""

    def __init__(self, store: Store) -> None:
        self.sizes: list[int] = []
        self._read = store.active_path

    def __call__(self, conversation_id: str, *args: Any, **kwargs: Any) -> Any:
        records = self._read(conversation_id, *args, **kwargs)
        self.sizes.append(len(records))
        return records


async def long_conversation(store: Store, data_dir: Path, asker: Any,
                            model_server: ScriptedServer, mode: str, turns: int) -> str:
    answers(model_server)
    model_server.max_prompt_tokens = 700
    record = store.create_conversation(title="Words", settings={
        "base_url": model_server.base_url, "model": "test-model", "tools": [],
        "context_length": 700, "max_tokens": 100, "compaction": mode})
    live = open_session(store, data_dir, asker, record.id)
    for n in range(turns):
        live.send(f"Question {n}: more words")
        await finished(live)
    await live.close()
    return record.id


async def test_a_reopened_conversation_sends_from_the_tail_what_the_whole_branch_gives(
        store: Store, data_dir: Path, asker: Any, model_server: ScriptedServer,
        monkeypatch: Any) -> None:
    conversation_id = await long_conversation(store, data_dir, asker, model_server,
                                              "summarise", 70)
    whole = store.active_path(conversation_id)
    compacted = [r for r in whole if "compaction" in r.metadata]
    assert len(compacted) >= 2, "the conversation was compacted more than once"
    newest = compacted[-1].metadata["compaction"]
    first_kept = next(r for r in whole if r.id == newest["from"])
    assert first_kept.role == "user"

    reads = BranchReads(store)
    monkeypatch.setattr(store, "active_path", reads)
    store.add_message(conversation_id, {"role": "user", "content": "Question 70: the tail"},
                      parent_id=whole[-1].id)
    reopened = open_session(store, data_dir, asker, conversation_id)
    reopened.run()
    await finished(reopened)
    from_tail = model_server.requests[-1]["messages"]
    assert "The person asked about words." in from_tail[0]["content"]
    assert {"role": "user", "content": ""} not in from_tail, "a stand-in was sent"
    # the start read the branch back to the compaction's end, not all of it
    assert reads.sizes and max(reads.sizes) < len(whole) / 2, (reads.sizes, len(whole))

    reopened.regenerate()  # reads the branch whole
    await finished(reopened)
    from_whole = model_server.requests[-1]["messages"]
    assert from_tail == from_whole
    await reopened.close()


async def test_a_tail_turn_stores_a_compaction_the_next_tail_turn_continues_from(
        store: Store, data_dir: Path, asker: Any, model_server: ScriptedServer) -> None:
    conversation_id = await long_conversation(store, data_dir, asker, model_server,
                                              "drop_oldest", 8)
    session = open_session(store, data_dir, asker, conversation_id)
    for n in range(8, 16):  # each turn reads a tail, and compacts again now and then
        session.send(f"Question {n}: more words")
        await finished(session)
    whole = store.active_path(conversation_id)
    compactions = [r.metadata["compaction"] for r in whole if "compaction" in r.metadata]
    assert len({c["messages"] for c in compactions}) >= 3
    # every compaction names the stored message its view starts at, and the
    # last request started there (after the note of what was left out)
    newest = compactions[-1]
    ids = [r.id for r in whole]
    assert newest["from"] in ids
    sent = model_server.requests[-1]["messages"]
    texts = [m.get("content") for m in sent]
    start = next(r for r in whole if r.id == newest["from"]).message["content"]
    assert start in texts and "were left out to fit the context" in sent[0]["content"]
    assert all(t for t in texts), "no empty message was sent"
    await session.close()


async def test_a_compaction_stored_before_its_end_was_named_reads_the_branch_whole(
        store: Store, data_dir: Path, asker: Any, model_server: ScriptedServer,
        monkeypatch: Any) -> None:
    conversation_id = await long_conversation(store, data_dir, asker, model_server,
                                              "summarise", 36)
    whole = store.active_path(conversation_id)
    for record in whole:  # as a conversation compacted by an older version stored it
        if "compaction" in record.metadata:
            data = {k: v for k, v in record.metadata["compaction"].items()
                    if k not in ("from", "anchor_from", "covered_tokens")}
            store.update_message_metadata(record.id, {"compaction": data})
    reads = BranchReads(store)
    monkeypatch.setattr(store, "active_path", reads)
    session = open_session(store, data_dir, asker, conversation_id)
    session.send("Question 36: more words")
    await finished(session)
    assert len(whole) in reads.sizes, "the branch was read whole"
    sent = model_server.requests[-1]["messages"]
    assert "The person asked about words." in sent[0]["content"]
    assert all(m.get("content") for m in sent)
    await session.close()


def test_the_tail_read_stops_at_the_compactions_end_or_reads_the_rest() -> None:
    from desktop_agent.session.branch.turn_tail import MOST_READ_BACK, tail_enough
    from desktop_agent.store import MessageRecord

    def record(n: int, role: str = "user", **metadata: Any) -> MessageRecord:
        return MessageRecord(id=f"m{n}", conversation_id="c", parent_id=f"m{n - 1}",
                             role=role, message={"role": role, "content": str(n)},
                             metadata=metadata, status="complete", created_at=0.0)

    plain = [record(n) for n in range(10, 20)]
    assert tail_enough(plain) is False  # no compaction yet: one more page
    assert tail_enough([record(n) for n in range(MOST_READ_BACK)]) is None  # read the rest
    named = {"messages": 4, "anchor": None, "from": "m12"}
    assert tail_enough([*plain, record(20, "assistant", compaction=named)]) is True
    assert tail_enough([*plain[3:], record(20, "assistant", compaction=named)]) is False
    unnamed = {"messages": 4, "anchor": None}
    assert tail_enough([*plain, record(20, "assistant", compaction=unnamed)]) is None
    anchored = {"messages": 4, "anchor": 1, "from": "m12", "anchor_from": "m9"}
    assert tail_enough([*plain, record(20, "assistant", compaction=anchored)]) is False
    assert branch_pages.tail_enough is tail_enough


def test_a_tail_with_a_kept_user_message_lines_up_with_the_whole_branch() -> None:
    from desktop_agent.session.branch.turn_tail import STAND_IN, turn_history, whole_history
    from desktop_agent.store import MessageRecord

    roles = ["user", "assistant", "user", "assistant", "assistant", "assistant", "user",
             "assistant"]
    compaction = {"messages": 4, "anchor": 2, "from": "m4", "anchor_from": "m2",
                  "summary": "Earlier: greetings.", "mode": "summarise", "dropped": 0,
                  "covered_tokens": 40}
    branch = [MessageRecord(id=f"m{n}", conversation_id="c",
                            parent_id=f"m{n - 1}" if n else None, role=role,
                            message={"role": role, "content": f"message {n}"},
                            metadata={"compaction": compaction} if n == 7 else {},
                            status="complete", created_at=0.0)
              for n, role in enumerate(roles)]
    whole = whole_history(branch, None)
    tail = turn_history(branch[2:], len(branch) - 2, None)
    assert tail is not None and tail.stand_ins == 2
    assert tail.base[:2] == [STAND_IN, STAND_IN]
    assert tail.base[2:] == whole.base[2:] and tail.ids[2:] == whole.ids[2:]
    assert tail.compaction == whole.compaction and tail.compaction is not None
    assert tail.compaction.anchor == 2 and tail.compaction.covered_tokens == 40
    # a tail that does not reach the kept user message cannot serve
    assert turn_history(branch[3:], len(branch) - 3, None) is None


async def test_a_window_page_shown_and_a_tail_turn_find_nothing_moved_at_the_next_start(
        store: Store, data_dir: Path, asker: Any, model_server: ScriptedServer) -> None:
    from desktop_agent.session import PathReset

    conversation_id = await long_conversation(store, data_dir, asker, model_server,
                                              "drop_oldest", 70)
    session = open_session(store, data_dir, asker, conversation_id)
    events: list[Any] = []
    session.subscribe(events.append)
    session.latest_page(200)  # as a tab shows the conversation
    for n in range(70, 74):  # each turn reads a tail shorter than the shown page
        session.send(f"Question {n}: more words")
        await finished(session)
        session.release_history()  # as the window does after each turn
    assert not [e for e in events if isinstance(e, PathReset)], \
        "the window would have drawn the transcript again after a turn of its own"
    store.add_message(conversation_id, {"role": "user", "content": "From another process"},
                      parent_id=store.active_path(conversation_id, 1)[0].id)
    session.send("Question 74: and now?")  # another process wrote meanwhile: it is seen
    await finished(session)
    assert [e for e in events if isinstance(e, PathReset)]
    await session.close()
