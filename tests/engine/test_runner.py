"""The engine runs a real GGUF with llama.cpp in a child process: start, serve, stop, crash.

Every test starts the real server (``xllamacpp``) with SmolLM2-135M on one thread,
so each takes a second or two; they assert what a person or the app would notice:
a reply through the openai SDK, a 401 without the key, the context the meter shows,
a sentence naming the bad file, the signal that ended a crashed engine.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import openai
import pytest
from runner_fixtures import (
    file_text,
    process_gone,
    scaled,
    smollm2,
    wait_until,
    wait_until_async,
)
from runner_gguf_files import copy_with_chat_template, write_gguf

from desktop_agent.engine.errors import (
    EngineCrashed,
    EngineError,
    EnginePortTaken,
    ModelFileError,
    UnknownArchitecture,
)
from desktop_agent.engine.runner import LocalModel

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


async def ask(model: LocalModel, *, api_key: str | None = None) -> str:
    async with openai.AsyncOpenAI(base_url=model.base_url, max_retries=0,
                                  api_key=model.api_key if api_key is None else api_key,
                                  timeout=scaled(60)) as client:
        reply = await client.chat.completions.create(
            model=model.model, max_tokens=8, temperature=0,
            messages=[{"role": "user", "content": "Say hello."}])
    return reply.choices[0].message.content or ""


async def test_a_running_model_answers_with_its_key_refuses_without_and_stops(
        tmp_path: Path) -> None:
    engine = LocalModel(smollm2(), threads=1, context_length=1024, parallel=2,
                        log_dir=tmp_path)
    await engine.start()
    try:
        assert engine.running and engine.base_url.startswith("http://127.0.0.1:")
        assert engine.model == "SmolLM2-135M-Instruct.Q4_1"
        assert (await ask(engine)).strip()
        with pytest.raises(openai.AuthenticationError):
            await ask(engine, api_key="not-the-key")
        # What the context meter shows is what the server applies to each conversation.
        async with httpx.AsyncClient() as http:
            slots = (await http.get(f"{engine.root_url}/slots",
                                    headers={"Authorization": f"Bearer {engine.api_key}"})).json()
        assert engine.context_length == 1024 == slots[0]["n_ctx"]
        assert engine.parallel == 2 == len(slots)
        assert engine.threads == 1
        # The model's own template ignores tools, so the project's tool template serves it.
        assert engine.chat_template_source == "tool template" and engine.supports_tools
        rss = engine.rss_bytes()
        assert rss is not None and rss > 50_000_000  # the model's pages and its KV cache
        pid = engine.pid
        assert pid is not None
        # The key is nowhere another user or a bug report could read it.
        assert engine.api_key not in file_text(Path(f"/proc/{pid}/cmdline"))
        assert engine.log_path is not None
        assert engine.api_key not in file_text(engine.log_path)
    finally:
        await engine.stop()
    assert not engine.running and engine.returncode == 0 and process_gone(pid)
    assert engine.crash is None and engine.describe_exit() == "the engine exited with status 0"
    with pytest.raises(openai.APIConnectionError):
        await ask(engine)


async def test_an_engine_killed_mid_reply_names_the_signal_and_restarts_on_the_same_address(
        tmp_path: Path) -> None:
    crashes: list[EngineCrashed] = []
    async with LocalModel(smollm2(), threads=1, context_length=1024,
                          log_dir=tmp_path) as engine:
        engine.on_crash(crashes.append)
        address, pid = engine.base_url, engine.pid
        assert pid is not None
        async with openai.AsyncOpenAI(base_url=engine.base_url, api_key=engine.api_key,
                                      max_retries=0, timeout=scaled(60)) as client:
            stream = await client.chat.completions.create(
                model=engine.model, max_tokens=400, stream=True, extra_body={"ignore_eos": True},
                messages=[{"role": "user", "content": "Tell a long story."}])
            with pytest.raises(openai.APIError):  # the reply breaks off, as a person sees it
                async for _chunk in stream:
                    # as the system's out-of-memory killer would, while the reply streams
                    if not crashes and not process_gone(pid):
                        os.kill(pid, signal.SIGKILL)
        await wait_until_async(lambda: bool(crashes), "the crash is reported")
        [crash] = crashes
        assert crash is engine.crash and crash.signal_name == "SIGKILL"
        assert "killed by SIGKILL" in str(crash) and not engine.running
        await engine.restart()  # what the card's Restart does
        assert engine.running and engine.base_url == address and engine.crash is None
        assert (await ask(engine)).strip()
    assert len(crashes) == 1  # the stop after a restart is no crash


async def test_a_port_in_use_is_refused_with_its_number(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        engine = LocalModel(smollm2(), threads=1, context_length=1024, port=port,
                            log_dir=tmp_path)
        with pytest.raises(EnginePortTaken) as refused:
            await engine.start()
    assert refused.value.port == port and f"Port {port}" in str(refused.value)
    assert not engine.running


@pytest.mark.parametrize("damage", ["first kilobyte", "not gguf"])
async def test_a_bad_model_file_is_refused_before_anything_starts(tmp_path: Path,
                                                                  damage: str) -> None:
    bad = tmp_path / "qwen3-1.7b-q4_k_m.gguf"
    if damage == "first kilobyte":
        with smollm2().open("rb") as source:
            bad.write_bytes(source.read(1024))
    else:
        bad.write_text("<html>404 Not Found</html>\n" * 20)
    logs = tmp_path / "logs"
    engine = LocalModel(bad, log_dir=logs)
    with pytest.raises(ModelFileError) as refused:
        await engine.start()
    assert refused.value.path == bad and "qwen3-1.7b-q4_k_m.gguf" in str(refused.value)
    assert ("incomplete" if damage == "first kilobyte" else "not a GGUF") in str(refused.value)
    assert not logs.exists() and engine.pid is None and engine.returncode is None


async def test_a_model_kind_this_llama_cpp_does_not_know_is_named(tmp_path: Path) -> None:
    smollm2()
    odd = write_gguf(tmp_path / "future.gguf", metadata={"general.architecture": "nosucharch"},
                     tensors={"token_embd.weight": 64})
    with pytest.raises(UnknownArchitecture) as refused:
        await LocalModel(odd, threads=1, context_length=1024, log_dir=tmp_path).start()
    assert refused.value.architecture == "nosucharch"
    assert "future.gguf" in str(refused.value) and "“nosucharch”" in str(refused.value)


async def test_a_template_that_only_mentions_tools_is_replaced_by_the_tool_template(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # The header's reading sees the template's code read ``tools``; llama.cpp, which
    # renders it with a tool, finds it never shows them: the engine starts again with ours.
    own = ("{% set offered = tools %}"
           "{% for message in messages %}{{ message['content'] }}{% endfor %}")
    model = copy_with_chat_template(smollm2(), tmp_path / "mentions-tools.gguf", own)
    caplog.set_level(logging.INFO, logger="desktop_agent.engine")
    async with LocalModel(model, threads=1, context_length=1024, log_dir=tmp_path) as engine:
        assert "its own template cannot call tools" in caplog.text
        assert engine.chat_template_source == "tool template" and engine.supports_tools
        async with httpx.AsyncClient() as http:
            props = (await http.get(f"{engine.root_url}/props", headers={
                "Authorization": f"Bearer {engine.api_key}"})).json()
        assert "<tool_call>" in props["chat_template"]
        assert (await ask(engine)).strip()


ORPHANING_APP = """
import asyncio, sys
from desktop_agent.engine.runner import LocalModel

async def main():
    engine = LocalModel(sys.argv[1], threads=1, context_length=1024, log_dir=sys.argv[2])
    await engine.start()
    print(engine.pid, flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


def test_an_app_killed_outright_leaves_no_engine_behind(tmp_path: Path) -> None:
    with subprocess.Popen([sys.executable, "-c", ORPHANING_APP, str(smollm2()), str(tmp_path)],
                          stdout=subprocess.PIPE, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}) as app:
        try:
            assert app.stdout is not None
            line = app.stdout.readline()
            assert line.strip().isdigit(), "the app did not start its engine"
            engine_pid = int(line)
            assert not process_gone(engine_pid)
        finally:
            app.kill()  # SIGKILL: no atexit, no stop(); only the kernel and the pipe remain
            app.wait()
    wait_until(lambda: process_gone(engine_pid), "the orphaned engine has stopped")


def children_of_this_thread() -> set[int]:
    """Processes this (main, event-loop) thread started, from Linux's /proc."""
    pid = os.getpid()
    return {int(child) for child in
            file_text(Path(f"/proc/{pid}/task/{pid}/children")).split()}


async def test_stopping_a_model_still_loading_abandons_its_start(tmp_path: Path) -> None:
    engine = LocalModel(smollm2(), threads=1, context_length=1024, log_dir=tmp_path)
    before = children_of_this_thread()
    starting = asyncio.create_task(engine.start())
    await wait_until_async(lambda: bool(children_of_this_thread() - before),
                           "the engine process exists")
    [child] = children_of_this_thread() - before
    os.kill(child, signal.SIGSTOP)  # frozen mid-load, as a huge model on a slow disk would be
    await engine.stop(grace=0.2)  # the app quits: it must not wait for the load
    with pytest.raises(EngineError, match="was stopped before it was ready"):
        await starting
    assert not engine.running and engine.crash is None and process_gone(child)
