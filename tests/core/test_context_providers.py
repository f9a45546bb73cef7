"""Token estimates, safe truncation, and discovery of local servers."""

import socket

from desktop_agent import estimate_tokens, truncate_messages
from desktop_agent.core.context import tokens as context
from desktop_agent.core.servers.discovery import (
    discover_servers,
    list_models,
    preferred_server_and_model,
    probe_server,
)
from desktop_agent.testing import ScriptedServer

S = {"role": "system", "content": "sys"}


def u(n):
    return {"role": "user", "content": f"u{n}"}


def a(n):
    return {"role": "assistant", "content": f"a{n}"}


def call(ids):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        for i in ids]}


def result(i):
    return {"role": "tool", "tool_call_id": i, "content": "r"}


def test_seed_truncation_examples():
    messages = [S, u(1), a(1), u(2), a(2), u(3)]
    assert truncate_messages(messages, keep=2) == [S, a(2), u(3)]
    assert truncate_messages(messages, keep=0) == [S]
    assert truncate_messages(messages, keep=2, preserve_system=False) == [a(2), u(3)]
    assert truncate_messages(messages, keep=2) is not messages


def test_truncation_never_splits_a_tool_chain():
    messages = [S, u(1), call(["x", "y"]), result("x"), result("y"), a(2), u(3)]
    # keep=4 would start at result("y"): the whole chain goes instead
    assert truncate_messages(messages, keep=4) == [S, a(2), u(3)]
    assert truncate_messages(messages, keep=5) == [S, call(["x", "y"]), result("x"),
                                                   result("y"), a(2), u(3)]
    # an assistant call whose results are missing is dropped
    assert truncate_messages([u(1), call(["z"]), u(2)], keep=3) == [u(1), u(2)]


def test_estimate_tokens_uses_the_shipped_tokenizer():
    assert context._encoding() is not None, "cl100k_base.tiktoken must ship with the app"
    assert estimate_tokens("hello world") == 2
    messages = [{"role": "user", "content": "hello world"}]
    assert estimate_tokens(messages, model="anything") == 2 + 4 + 3


def test_estimate_tokens_falls_back_to_characters(monkeypatch, tmp_path):
    monkeypatch.setenv("DESKTOP_AGENT_TOKENIZER_FILE", str(tmp_path / "missing.tiktoken"))
    context._encoding.cache_clear()
    try:
        assert estimate_tokens("x" * 40) == 10
    finally:
        monkeypatch.delenv("DESKTOP_AGENT_TOKENIZER_FILE")
        context._encoding.cache_clear()


async def test_probe_lists_chat_models_and_filters_embeddings():
    with ScriptedServer() as srv:
        srv.models = ["qwen2.5-7b-instruct", "nomic-embed-text-v1.5"]
        info = await probe_server(srv.base_url)
        assert info.up and info.error is None
        assert [m.id for m in info.chat_models] == ["qwen2.5-7b-instruct"]
        models = await list_models(srv.base_url)
        assert {m.kind for m in models} == {"chat", "embedding"}


async def test_image_generation_models_are_not_offered_for_chat():
    # LLMock-style servers list gpt-image-1 next to chat models; choosing it
    # would fail on every message
    with ScriptedServer() as srv:
        srv.models = ["gpt-4o-mini", "gpt-image-1", "dall-e-3"]
        info = await probe_server(srv.base_url)
        assert [m.id for m in info.chat_models] == ["gpt-4o-mini"]
        assert {m.id: m.kind for m in info.models}["gpt-image-1"] == "image"


async def test_lmstudio_and_ollama_details():
    with ScriptedServer() as srv:
        srv.models = ["llama-3.2-3b", "text-embedding-x"]
        srv.routes[("GET", "/api/v0/models")] = (200, {"data": [
            {"id": "llama-3.2-3b", "type": "llm", "max_context_length": 131072,
             "loaded_context_length": 8192},
            {"id": "text-embedding-x", "type": "embeddings"}]})
        info = await probe_server(srv.base_url, kind="lmstudio")
        assert [(m.id, m.context_length) for m in info.chat_models] == [("llama-3.2-3b", 8192)]
    with ScriptedServer() as srv:
        srv.models = ["qwen3:4b", "all-minilm:latest"]
        srv.routes[("GET", "/api/tags")] = (200, {"models": [{"name": "qwen3:4b"},
                                                             {"name": "all-minilm:latest"}]})
        srv.routes[("POST", "/api/show")] = (200, {"model_info": {"qwen3.context_length": 40960},
                                                   "capabilities": ["completion", "tools"]})
        info = await probe_server(srv.base_url, kind="ollama")
        # trained for 40,960, but run with Ollama's default window when nothing else says
        model = info.models[0]
        assert (model.context_length, model.trained_context) == (4096, 40960)
        assert "default" in (model.context_source or "")


async def test_probe_reports_down_and_key_needed():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = await probe_server(f"http://127.0.0.1:{port}/v1")
    assert not down.up and down.error == "not running"
    with ScriptedServer() as srv:
        srv.api_key = "secret-key"
        locked = await probe_server(srv.base_url)
        assert locked.up and locked.error == "needs an API key"
        unlocked = await probe_server(srv.base_url, api_key="secret-key")
        assert unlocked.up and unlocked.models


async def test_discovery_probes_known_ports_and_env_override(monkeypatch):
    with ScriptedServer() as srv:
        srv.models = ["m1", "m2"]
        monkeypatch.setenv("DESKTOP_AGENT_BASE_URL", srv.base_url)
        monkeypatch.setenv("DESKTOP_AGENT_MODEL", "m2")
        servers = await discover_servers(timeout=0.5)
        names = {s.name for s in servers}
        assert {"LM Studio", "Ollama", "llama.cpp", "vLLM"} <= names
        ours = next(s for s in servers if s.base_url == srv.base_url)
        assert ours.up
        chosen = preferred_server_and_model(servers)
        assert chosen is not None and chosen[0].base_url == srv.base_url and chosen[1].id == "m2"


def test_nothing_running_means_no_preference():
    assert preferred_server_and_model([]) is None
