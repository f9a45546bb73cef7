"""``/compact``: the session compacts the model's view when a person asks.

Against the real store and the scripted model server: the summary is asked of
the conversation's model, kept with the last reply, and the next turn (and a
session opened later) sends the summary instead of the old messages.
"""

from __future__ import annotations

from typing import Any

import pytest
from turn_waits import finished

from desktop_agent.core.context.summary_request import SUMMARY_INSTRUCTIONS
from desktop_agent.session import events as ev
from desktop_agent.session.errors import NothingToAnswerError, SessionError
from desktop_agent.store import Store
from desktop_agent.testing import ScriptedServer, script


def is_summary(body: dict[str, Any]) -> bool:
    return body["messages"][0].get("content") == SUMMARY_INSTRUCTIONS


async def test_compact_summarises_all_but_the_last_exchange_and_the_next_turn_uses_it(
        make_session: Any, model_server: ScriptedServer, store: Store) -> None:
    def respond(body: dict[str, Any]) -> Any:
        if is_summary(body):
            return script.text("The person asked about apples, pears and plums.")
        return script.text(f"Answer {len(model_server.requests)}.")

    model_server.responder = respond
    session = make_session(tools=[], context_length=8000)
    for fruit in ("apples", "pears", "plums"):
        session.send(f"Tell me about {fruit}")
        await finished(session)
    block = await session.compact()
    assert block is not None and block.mode == "summarise"
    assert block.summary == "The person asked about apples, pears and plums."
    assert block.tokens_after < block.tokens_before
    assert any(isinstance(e, ev.CompactionReported) for e in session.events)
    last = [r for r in store.active_path(session.conversation_id) if r.role == "assistant"][-1]
    assert last.metadata["compaction"]["summary"] == block.summary

    session.send("And cherries?")
    await finished(session)
    sent = model_server.requests[-1]["messages"]
    assert "apples, pears and plums" in sent[0]["content"]
    texts = [m.get("content") for m in sent]
    assert "Tell me about apples" not in texts  # replaced by the summary
    assert "Tell me about plums" in texts  # the last exchange is kept
    await session.close()


async def test_compact_with_nothing_answered_or_compaction_off_says_why(
        make_session: Any) -> None:
    session = make_session(tools=[], context_length=8000)
    with pytest.raises(NothingToAnswerError, match="nothing to compact"):
        await session.compact()
    off = make_session(tools=[], context_length=8000, compaction="off")
    with pytest.raises(SessionError, match="Compaction is off"):
        await off.compact()
    assert not session.busy
    await session.close()
    await off.close()
