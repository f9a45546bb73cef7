"""Discovery trusts what servers say about their models (type, vision, context) over names."""

import socket

from desktop_agent.core.servers.discovery import KNOWN_SERVERS, discover_servers, probe_server
from desktop_agent.testing import ScriptedServer


def free_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_the_new_llamacpp_port_and_litellm_are_probed():
    urls = {(kind, url) for kind, _, url in KNOWN_SERVERS}
    assert ("llamacpp", "http://127.0.0.1:9931/v1") in urls
    assert ("llamacpp", "http://127.0.0.1:8080/v1") in urls
    assert ("litellm", "http://127.0.0.1:4000/v1") in urls


async def test_lmstudio_type_beats_the_name_and_tells_vision():
    with ScriptedServer() as srv:
        srv.models = ["qwen2.5-vl-7b", "embed-better-llm", "text-embedding-nomic"]
        srv.routes[("GET", "/api/v0/models")] = (200, {"data": [
            {"id": "qwen2.5-vl-7b", "type": "vlm", "loaded_context_length": 4096},
            {"id": "embed-better-llm", "type": "llm", "max_context_length": 32768},
            {"id": "text-embedding-nomic", "type": "embeddings"}]})
        info = await probe_server(srv.base_url, kind="lmstudio")
        by_id = {m.id: m for m in info.models}
        assert [m.id for m in info.chat_models] == ["qwen2.5-vl-7b", "embed-better-llm"]
        assert by_id["qwen2.5-vl-7b"].vision is True
        assert by_id["embed-better-llm"].vision is False
        assert by_id["text-embedding-nomic"].kind == "embedding"


async def test_ollama_capabilities_beat_the_name():
    with ScriptedServer() as srv:
        srv.models = ["llava:7b"]
        srv.routes[("GET", "/api/tags")] = (200, {"models": [{"name": "llava:7b"}]})
        srv.routes[("POST", "/api/show")] = (200, {
            "model_info": {"llama.context_length": 4096},
            "capabilities": ["completion", "vision"]})
        [model] = (await probe_server(srv.base_url, kind="ollama")).models
        assert (model.kind, model.vision, model.context_length) == ("chat", True, 4096)
    with ScriptedServer() as srv:
        srv.models = ["my-model"]  # nothing in the name says "embedding"
        srv.routes[("GET", "/api/tags")] = (200, {"models": [{"name": "my-model"}]})
        srv.routes[("POST", "/api/show")] = (200, {"capabilities": ["embedding"]})
        info = await probe_server(srv.base_url, kind="ollama")
        assert info.models[0].kind == "embedding" and info.chat_models == []


async def test_llamacpp_props_tell_context_and_vision():
    with ScriptedServer() as srv:
        srv.models = ["gemma-3-4b"]
        srv.routes[("GET", "/props")] = (200, {
            "default_generation_settings": {"n_ctx": 8192},
            "modalities": {"vision": True, "audio": False}})
        [model] = (await probe_server(srv.base_url, kind="llamacpp")).models
        assert (model.context_length, model.vision) == (8192, True)


async def test_litellm_model_info_gives_context_mode_and_vision():
    with ScriptedServer() as srv:
        srv.models = ["local-llama", "my-vectors"]
        srv.routes[("GET", "/v1/model/info")] = (200, {"data": [
            {"model_name": "local-llama",
             "model_info": {"max_input_tokens": 2048, "mode": "chat", "supports_vision": False}},
            {"model_name": "my-vectors", "model_info": {"mode": "embedding"}}]})
        info = await probe_server(srv.base_url, kind="litellm")
        assert [(m.id, m.context_length, m.vision) for m in info.chat_models] == [
            ("local-llama", 2048, False)]


async def test_our_own_rest_server_is_left_out():
    with ScriptedServer() as srv:
        # what `desktop-agent serve` answers: /v1/models needs its key, /alive names it
        srv.routes[("GET", "/v1/models")] = (401, {"error": "Missing or wrong API key."})
        srv.routes[("GET", "/alive")] = (200, {"status": "ok", "service": "desktop-agent"})
        info = await probe_server(srv.base_url, kind="vllm", name="vLLM")
        assert info.own and not info.up
        servers = await discover_servers(timeout=1.0, known=[("vllm", "vLLM", srv.base_url)])
        assert servers == []


async def test_one_row_per_server_name_preferring_the_port_that_answers():
    with ScriptedServer() as srv:
        srv.models = ["smollm2"]
        servers = await discover_servers(timeout=1.0, known=[
            ("llamacpp", "llama.cpp", free_url()), ("llamacpp", "llama.cpp", srv.base_url)])
        assert [(s.name, s.base_url, s.up) for s in servers] == [
            ("llama.cpp", srv.base_url, True)]
    down = await discover_servers(timeout=1.0, known=[
        ("llamacpp", "llama.cpp", free_url()), ("llamacpp", "llama.cpp", free_url())])
    assert len(down) == 1 and not down[0].up
