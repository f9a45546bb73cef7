"""The context a conversation takes: the server's count when it gave one, else an estimate."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from desktop_agent.core.context import tokens
from desktop_agent.session import (
    AppConfig,
    ConversationSession,
    SessionEnvironment,
    ToolCatalog,
    UsageReported,
    context_after_reply,
    context_when_opened,
    estimated_context,
)
from desktop_agent.store import Store
from desktop_agent.testing import ScriptedServer, script


async def finished(session: Any) -> None:
    while session.busy:
        await asyncio.sleep(0.01)


async def test_after_a_reply_the_servers_count_is_the_figure_and_survives_reopening(
        make_session: Any, model_server: ScriptedServer, store: Store, data_dir: Path,
        asker: Any) -> None:
    model_server.enqueue(script.text("Hello there, friend.", prompt_tokens=321))
    session = make_session(tools=[])
    session.send("Hi")
    await asyncio.wait_for(finished(session), timeout=60)
    (usage,) = [e.usage for e in session.events if isinstance(e, UsageReported)]
    assert context_after_reply(session, usage) == 321 + usage.completion_tokens
    await session.close()
    # Opened again from the store, as the window does after a restart: no tokenizer needed.
    env = SessionEnvironment(tools=ToolCatalog(include_builtin=False),
                             config=AppConfig(data_dir / "config.json"))
    reopened = ConversationSession(store, session.conversation_id, env, asker, owner="again")
    assert await context_when_opened(reopened) == 321 + usage.completion_tokens
    await reopened.close()


async def test_without_a_server_count_the_branch_is_estimated_and_grows_with_it(
        make_session: Any, store: Store) -> None:
    session = make_session()
    assert await context_when_opened(session) is None  # empty: nothing to show
    first = store.add_message(session.conversation_id, {"role": "user", "content": "Hello"})
    store.add_message(session.conversation_id, {"role": "assistant", "content": "Hi."},
                      parent_id=first.id)
    short = await context_when_opened(session)
    assert short is not None and short > 0
    session.refresh()
    last = session.last_message()
    store.add_message(session.conversation_id,
                      {"role": "user", "content": "tell me more " * 200}, parent_id=last.id)
    session.refresh()
    longer = estimated_context(session, own_copy=True)
    assert longer is not None and longer > short + 200
    await session.close()


async def test_a_reopened_conversation_without_a_count_is_guessed_without_the_tokenizer(
        make_session: Any, store: Store) -> None:
    """The window reopens many tabs at start: loading the tokenizer for them cost ~45 MB."""
    session = make_session()
    first = store.add_message(session.conversation_id,
                              {"role": "user", "content": "Summarise the plan, please."})
    store.add_message(session.conversation_id,
                      {"role": "assistant", "content": "Step one: measure. " * 50},
                      parent_id=first.id)
    session.refresh()
    tokens._encoding.cache_clear()  # as in a freshly started app
    guessed = await context_when_opened(session)
    assert tokens._encoding.cache_info().currsize == 0, "the tokenizer was loaded"
    counted = estimated_context(session, own_copy=True)  # the tokenizer's own figure
    assert guessed is not None and counted is not None
    assert abs(guessed - counted) <= 0.12 * counted
    await session.close()
