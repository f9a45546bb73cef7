"""The context a server really applies: asked, used to size requests, learned from a cut.

Ollama and LM Studio are replayed from their documented JSON shapes
(:mod:`desktop_agent.testing.server_replays`, each shape with its source); the
scripted server cuts an over-long prompt from the front as Ollama does.
"""

from __future__ import annotations

from typing import Any

import pytest

from desktop_agent import AgentOptions, Client
from desktop_agent.core import errors
from desktop_agent.core.context.prompt_cut import WholePrompt, cut_to
from desktop_agent.core.context.tokens import count_text_tokens
from desktop_agent.core.servers import applied_context
from desktop_agent.core.servers.applied_context import applied_context as ask_window
from desktop_agent.core.servers.discovery import probe_server
from desktop_agent.core.servers.window_fix import (
    create_ollama_model,
    derived_model_name,
    larger_window_fix,
)
from desktop_agent.core.types import CompactionBlock, PromptCutBlock, TextBlock
from desktop_agent.testing import ScriptedServer
from desktop_agent.testing import script as scripts
from desktop_agent.testing.server_replays import (
    ReplayedOllama,
    lmstudio_model,
    replay_lmstudio,
    replay_lmstudio_v1,
)

MODEL = "llama3.2:3b"
WORDS = ["amber", "birch", "cedar", "dune", "ember", "fjord", "grove", "heath", "inlet",
         "jade", "knoll", "larch", "marsh", "north", "oak", "pine"]


def passage(n: int, tokens: int = 600) -> str:
    """About ``tokens`` tokens of text that differ per ``n``."""
    words = [f"{WORDS[(n + i) % len(WORDS)]}{i % 9}" for i in range(tokens)]
    while count_text_tokens(" ".join(words)) > tokens:
        words.pop()
    return " ".join(words)


def summariser(body: dict[str, Any]) -> scripts.Script:
    """A model that answers briefly, and summarises when asked to."""
    first = (body.get("messages") or [{}])[0].get("content") or ""
    if "summar" in str(first).lower():
        return scripts.text("The person shared passages about places; each was noted.")
    return scripts.text("Noted.")


async def talk(client: Client, turns: int, start: int = 0) -> list[Any]:
    items: list[Any] = []
    for turn in range(start, start + turns):
        await client.query(f"Passage {turn}: {passage(turn)}")
        items += [item async for item in client.receive_messages()]
    return items


def options(server: ScriptedServer, **overrides: Any) -> AgentOptions:
    values: dict[str, Any] = {"model": MODEL, "base_url": server.base_url, "max_tokens": 256,
                              "timeout": 10.0}
    values.update(overrides)
    return AgentOptions(**values)


# -- what each server applies ----------------------------------------------------------
async def test_ollama_runs_a_model_with_its_default_not_the_trained_length() -> None:
    with ScriptedServer() as server:
        ollama = ReplayedOllama(server)
        ollama.add_model(MODEL, trained=131072)
        window = await ask_window(server.base_url, MODEL)
        assert (window.applied, window.trained, window.server) == (4096, 131072, "Ollama")
        assert window.assumed and "default" in window.source and "4096" in window.source
        assert window.smaller_than_trained

        ollama.load(MODEL, context=8192)  # what `ollama ps` shows once it runs
        applied_context.forget()
        window = await ask_window(server.base_url, MODEL)
        assert (window.applied, window.source) == (8192, "Ollama /api/ps (loaded)")

        # discovery lists the applied window too, with the trained one beside it
        [model] = (await probe_server(server.base_url, kind="ollama")).chat_models
        assert (model.context_length, model.trained_context) == (8192, 131072)
        assert model.context_source == "Ollama /api/ps (loaded)"


async def test_ollama_modelfile_num_ctx_and_the_default_of_its_version() -> None:
    with ScriptedServer() as server:
        ollama = ReplayedOllama(server, version="0.5.7")
        ollama.add_model(MODEL, trained=131072)
        ollama.add_model("qwen2.5:7b-16k", trained=32768, num_ctx=16384)
        old = await ask_window(server.base_url, MODEL)
        made = await ask_window(server.base_url, "qwen2.5:7b-16k")
    assert (old.applied, old.source) == (2048, "Ollama 0.5.7 default 2048, "
                                                "OLLAMA_CONTEXT_LENGTH unknown")
    assert (made.applied, made.source, made.assumed) == (16384, "Ollama Modelfile num_ctx",
                                                         False)


async def test_lmstudio_uses_the_loaded_context_not_the_maximum() -> None:
    with ScriptedServer() as server:
        replay_lmstudio(server, lmstudio_model("qwen2.5-7b-instruct", max_context=131072,
                                               loaded_context=4096),
                        lmstudio_model("phi-4", max_context=16384))
        loaded = await ask_window(server.base_url, "qwen2.5-7b-instruct")
        idle = await ask_window(server.base_url, "phi-4")
        listed = {m.id: m for m in (await probe_server(server.base_url,
                                                       kind="lmstudio")).models}
    assert (loaded.applied, loaded.trained, loaded.source) == (
        4096, 131072, "LM Studio loaded_context_length")
    assert (idle.applied, idle.assumed) == (4096, True) and "not loaded" in idle.source
    assert listed["qwen2.5-7b-instruct"].context_length == 4096
    assert listed["qwen2.5-7b-instruct"].trained_context == 131072


async def test_lmstudio_v1_list_gives_the_loaded_instance_context() -> None:
    """LM Studio 0.4's ``/api/v1/models``: the loaded instance's config, not the maximum."""
    with ScriptedServer() as server:
        replay_lmstudio_v1(server, "gemma-3-270m-it-qat", max_context=32768,
                           loaded_context=4096)
        loaded = await ask_window(server.base_url, "gemma-3-270m-it-qat")
    assert (loaded.applied, loaded.trained, loaded.server) == (4096, 32768, "LM Studio")
    assert loaded.source == "LM Studio loaded instance context_length"
    with ScriptedServer() as server:
        replay_lmstudio_v1(server, "gemma-3-270m-it-qat", max_context=32768)
        idle = await ask_window(server.base_url, "gemma-3-270m-it-qat")
    assert (idle.applied, idle.assumed) == (4096, True) and "not loaded" in idle.source


async def test_llamacpp_slots_vllm_and_litellm_say_their_applied_window() -> None:
    with ScriptedServer() as server:  # llama.cpp --ctx-size 8192 --parallel 2
        server.models = ["smollm2"]
        server.routes[("GET", "/props")] = (200, {
            "default_generation_settings": {"n_ctx": 4096}, "total_slots": 2})
        server.routes[("GET", "/v1/models")] = (200, {"object": "list", "data": [
            {"id": "smollm2", "owned_by": "llamacpp", "meta": {"n_ctx": 4096,
                                                                "n_ctx_train": 8192}}]})
        llama = await ask_window(server.base_url, "smollm2")
    assert (llama.applied, llama.trained, llama.slots) == (4096, 8192, 2)
    assert "per slot" in llama.source
    assert "--ctx-size 16384" in larger_window_fix(llama, "smollm2", 5000).text
    assert "trained for 8,192 tokens only" in larger_window_fix(llama, "smollm2", 9000).text
    with ScriptedServer() as server:
        server.routes[("GET", "/v1/models")] = (200, {"object": "list", "data": [
            {"id": "Qwen/Qwen2.5-7B", "owned_by": "vllm", "max_model_len": 16384}]})
        vllm = await ask_window(server.base_url, "Qwen/Qwen2.5-7B")
    assert (vllm.applied, vllm.source) == (16384, "vLLM max_model_len")
    with ScriptedServer() as server:
        server.routes[("GET", "/v1/model/info")] = (200, {"data": [
            {"model_name": "local", "model_info": {"max_input_tokens": 6000}}]})
        litellm = await ask_window(server.base_url, "local")
    assert (litellm.applied, litellm.source) == (6000, "LiteLLM max_input_tokens")


# -- sizing a conversation by it ----------------------------------------------------------
async def test_a_conversation_on_ollama_is_sized_by_the_applied_window() -> None:
    """Trained for 128k, run with 4096: every prompt fits 4096, nothing is cut."""
    with ScriptedServer() as server:
        ollama = ReplayedOllama(server)
        ollama.add_model(MODEL, trained=131072)
        server.responder = summariser
        await ask_window(server.base_url, MODEL)  # as the session does before a turn
        async with Client(options(server)) as client:
            items = await talk(client, 10)
    assert any(isinstance(i, CompactionBlock) for i in items)
    assert not any(isinstance(i, PromptCutBlock) for i in items)
    assert max(server.prompt_tokens) <= 4096


async def test_a_conversation_on_lmstudio_is_sized_by_the_loaded_context() -> None:
    """LM Studio refuses a prompt over the loaded context: none is ever sent."""
    with ScriptedServer() as server:
        replay_lmstudio(server, lmstudio_model(MODEL, max_context=131072, loaded_context=4096))
        server.max_prompt_tokens = 4096
        server.responder = summariser
        await ask_window(server.base_url, MODEL)
        async with Client(options(server)) as client:
            items = await talk(client, 10)
    assert any(isinstance(i, CompactionBlock) for i in items)
    assert max(server.prompt_tokens) <= 4096


async def test_a_prompt_cut_from_the_front_is_detected_and_the_next_one_fits() -> None:
    """Nobody asked the window: Ollama cuts silently; the reply is marked, then it fits."""
    with ScriptedServer() as server:
        ollama = ReplayedOllama(server)
        ollama.add_model(MODEL, trained=131072)
        server.responder = summariser
        async with Client(options(server)) as client:
            turn, cuts = 0, []
            while not cuts and turn < 12:
                cuts = [i for i in await talk(client, 1, turn) if isinstance(i, PromptCutBlock)]
                turn += 1
            assert cuts, "the server cut a prompt"
            cut = cuts[0]
            assert cut.kept <= 4096 < cut.sent and cut.window == cut.kept
            assert f"cut the prompt to {cut.kept:,} tokens" in cut.message
            assert client.turn_metadata["prompt_cut"]["kept"] == cut.kept
            read_before = len(server.prompt_tokens)

            later = await talk(client, 4, turn)
            assert not any(isinstance(i, PromptCutBlock) for i in later)
            assert any(isinstance(i, CompactionBlock) for i in later)
            assert "prompt_cut" not in client.turn_metadata
            assert client.history[0]["content"].startswith("Passage 0")  # history is whole
        assert max(server.prompt_tokens[read_before:]) <= cut.window
        window = applied_context.known(server.base_url, MODEL)
        assert window is not None and window.applied == cut.kept
        assert window.source.startswith("learned from a cut prompt")


def test_counting_error_is_not_a_cut() -> None:
    assert cut_to(1000, 930, None, None) is None  # another tokenizer
    assert cut_to(1000, 1400, None, None) is None  # a template adding tokens
    assert cut_to(100, 40, None, None) is None  # too small to tell
    assert cut_to(5000, 2048, None, None) == 2048
    assert cut_to(5000, 4090, None, 4096) == 4090  # over the known window, read within it
    # this model's tokenizer counts 0.7 of ours: a prompt that grew is read whole
    assert cut_to(5000, 3400, WholePrompt(4000, 2800), None) is None
    # the prompt grew by 615 of ours, the server's count by 6: older messages were dropped
    assert cut_to(5530, 4041, WholePrompt(4915, 4035), None) == 4041
    # a pasted text its tokenizer packs at half of ours still grows the count
    assert cut_to(6000, 3500, WholePrompt(4000, 2500), None) is None


# -- a refused prompt, in a sentence ------------------------------------------------------
async def test_a_refused_prompt_names_the_window_and_the_fix() -> None:
    with ScriptedServer() as server:
        server.max_prompt_tokens = 1024
        async with Client(options(server, model="smollm2", compaction="off")) as client:
            await client.query(passage(1, 1500))
            with pytest.raises(errors.ContextTooLongError) as caught:
                async for _ in client.receive_messages():
                    pass
    message = str(caught.value)
    assert caught.value.window == 1024
    assert "1,024 tokens per request" in message
    assert "Turn compaction on" in message
    assert applied_context.learned(server.base_url, "smollm2") == 1024


# -- the one-click fix on Ollama ----------------------------------------------------------
def test_derived_names_say_the_window() -> None:
    assert derived_model_name("qwen2.5:7b", 16384) == "qwen2.5:7b-ctx16k"
    assert derived_model_name("llama3.2", 32768) == "llama3.2-ctx32k"
    assert derived_model_name("llama3.2:latest", 8192) == "llama3.2-ctx8k"
    assert derived_model_name("qwen2.5:7b-ctx16k", 65536) == "qwen2.5:7b-ctx64k"


async def test_ollama_makes_a_model_with_the_larger_window() -> None:
    with ScriptedServer() as server:
        ollama = ReplayedOllama(server)
        ollama.add_model(MODEL, trained=131072)
        window = await ask_window(server.base_url, MODEL)
        fix = larger_window_fix(window, MODEL, 9000)
        assert (fix.tokens, fix.ollama_model) == (16384, "llama3.2:3b-ctx16k")
        assert "OLLAMA_CONTEXT_LENGTH=16384" in fix.text
        made = await create_ollama_model(server.base_url, MODEL, fix.tokens)
        assert ollama.created == [{"model": made, "from": MODEL,
                                   "parameters": {"num_ctx": 16384}, "stream": False}]
        bigger = await ask_window(server.base_url, made)
        assert (bigger.applied, bigger.source) == (16384, "Ollama Modelfile num_ctx")
        with pytest.raises(errors.ServerError) as caught:
            await create_ollama_model(server.base_url, "missing:1b", 8192)
        assert "missing:1b-ctx8k" in str(caught.value)
        async with Client(options(server, model=made)) as client:
            await client.query("hello")
            items = [i async for i in client.receive_messages()]
        assert any(isinstance(i, TextBlock) for i in items)
