"""Before a turn the session checks the window the server applies, warns with the fix, and fixes.

Ollama is replayed from its documented shapes (``desktop_agent.testing.server_replays``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from desktop_agent.core.context.tokens import count_text_tokens
from desktop_agent.session import (
    ContextWindowChecked,
    PromptCutReported,
    SessionError,
    TurnFailed,
    context_window_for,
)
from desktop_agent.store import Store
from desktop_agent.testing import ScriptedServer
from desktop_agent.testing.server_replays import ReplayedOllama, lmstudio_model, replay_lmstudio

MODEL = "llama3.2:3b"
PLACES = ["river", "orchard", "harbour", "meadow", "quarry", "forest", "valley", "island"]


def passage(n: int, tokens: int = 700) -> str:
    """About ``tokens`` tokens of plain sentences (other tokenizers count them alike)."""
    sentences: list[str] = []
    while count_text_tokens(" ".join(sentences)) < tokens:
        i = len(sentences)
        sentences.append(f"Note {n}.{i}: the {PLACES[(n + i) % len(PLACES)]} keeps its "
                         "quiet until the first frost of the year.")
    return " ".join(sentences[:-1])


async def finished(session: Any) -> None:
    while session.busy:
        await asyncio.sleep(0.01)


async def turn(session: Any, text: str) -> None:
    session.send(text)
    await asyncio.wait_for(finished(session), timeout=60)
    failed = [e.error for e in session.events if isinstance(e, TurnFailed)]
    assert not failed, failed


def long_history(store: Store, conversation_id: str, turns: int) -> None:
    """A conversation already ``turns`` long (about 700 tokens a turn), as stored."""
    parent = None
    for n in range(turns):
        user = store.add_message(conversation_id, {"role": "user", "content": passage(n)},
                                 parent_id=parent)
        reply = store.add_message(conversation_id, {"role": "assistant", "content": "Noted."},
                                  parent_id=user.id)
        parent = reply.id


def checks(session: Any) -> list[ContextWindowChecked]:
    return [e for e in session.events if isinstance(e, ContextWindowChecked)]


@pytest.fixture
def ollama(model_server: ScriptedServer) -> ReplayedOllama:
    replayed = ReplayedOllama(model_server)
    replayed.add_model(MODEL, trained=131072)
    return replayed


async def test_a_conversation_longer_than_ollamas_window_is_warned_before_sending(
        make_session: Any, store: Store, model_server: ScriptedServer,
        ollama: ReplayedOllama) -> None:
    session = make_session(model=MODEL, context_length=131072)  # the trained length, stored
    long_history(store, session.conversation_id, 8)
    session.refresh()
    await turn(session, "And one more thing.")
    [check] = checks(session)
    assert (check.window.applied, check.window.trained) == (4096, 131072)
    assert check.needed > 4096 and check.fix is not None
    assert check.fix.ollama_model == "llama3.2:3b-ctx16k"
    warning = check.warning or ""
    assert "runs llama3.2:3b with a 4,096-token window" in warning
    # the reply's room is named: a refusal's figure counts the prompt alone
    assert f"needs about {check.needed:,} tokens ({check.reply:,} of them for the reply)" \
        in warning and 0 < check.reply <= 1024
    assert "default" in check.window.source
    assert "Older messages are summarised" in warning
    assert "Make llama3.2:3b-ctx16k" in warning
    # sized by the applied window, not the stored trained length: nothing was cut
    assert max(model_server.prompt_tokens) <= 4096
    assert not any(isinstance(e, PromptCutReported) for e in session.events)


async def test_a_short_conversation_gets_no_warning(
        make_session: Any, ollama: ReplayedOllama) -> None:
    session = make_session(model=MODEL)
    await turn(session, "Hello!")
    [check] = checks(session)
    assert check.window.applied == 4096 and check.warning is None and check.fix is None
    window = await context_window_for(session.settings)
    assert window is not None and window.source.startswith("Ollama")


async def test_the_one_click_fix_makes_a_larger_model_and_switches_to_it(
        make_session: Any, store: Store, ollama: ReplayedOllama) -> None:
    session = make_session(model=MODEL, context_length=131072)
    long_history(store, session.conversation_id, 8)
    session.refresh()
    await turn(session, "And one more thing.")
    [check] = checks(session)
    assert check.fix is not None
    made = await session.make_larger_window(check.fix.tokens)
    assert made == "llama3.2:3b-ctx16k"
    assert session.settings["model"] == made and "context_length" not in session.settings
    assert ollama.created[-1]["parameters"] == {"num_ctx": 16384}
    await turn(session, "Now with room.")
    last = checks(session)[-1]
    assert (last.model, last.window.applied) == (made, 16384)
    assert last.window.source == "Ollama Modelfile num_ctx" and last.warning is None


async def test_a_prompt_ollama_cuts_anyway_marks_the_reply(
        make_session: Any, store: Store, model_server: ScriptedServer) -> None:
    """OLLAMA_CONTEXT_LENGTH=2048, which no endpoint reports: 4096 assumed, 2048 applied."""
    ollama = ReplayedOllama(model_server, default_context=2048)
    ollama.add_model(MODEL, trained=131072)
    session = make_session(model=MODEL, max_tokens=256)
    long_history(store, session.conversation_id, 4)  # ~2,900 tokens: fits 4096, not 2048
    session.refresh()
    await turn(session, "What was the first passage about?")
    [cut] = [e.block for e in session.events if isinstance(e, PromptCutReported)]
    assert cut.kept <= 2048
    reply = session.last_message()
    assert reply.role == "assistant"
    assert reply.metadata["prompt_cut"]["kept"] == cut.kept  # the mark survives reopening

    await turn(session, "Go on.")
    last = checks(session)[-1]
    assert last.window.applied == cut.kept
    assert last.window.source.startswith("learned from a cut prompt")
    assert len([e for e in session.events if isinstance(e, PromptCutReported)]) == 1
    assert model_server.prompt_tokens[-1] <= cut.kept


async def test_only_ollama_makes_a_larger_model(
        make_session: Any, model_server: ScriptedServer) -> None:
    replay_lmstudio(model_server, lmstudio_model(MODEL, max_context=32768, loaded_context=4096))
    session = make_session(model=MODEL)
    with pytest.raises(SessionError, match="LM Studio sets it where the model is loaded"):
        await session.make_larger_window(16384)
    assert session.settings["model"] == MODEL
