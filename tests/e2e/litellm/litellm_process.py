"""Start and stop a real LiteLLM proxy (``litellm[proxy]``) on 127.0.0.1.

The proxy lives in its own virtual environment, ``.venv-compat/`` (made by
``.ci/install_compat.sh``), because its dependency pins clash with the app's;
``LITELLM_BIN`` points elsewhere. It runs with a scrubbed environment: no
provider keys, a private HOME, and the bundled model cost map
(``LITELLM_LOCAL_MODEL_COST_MAP``) so it never reaches for the network.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[3]
INSTALL_HINT = "needs `bash .ci/install_compat.sh` (litellm[proxy] in .venv-compat/)"
STARTUP_TIMEOUT = 180.0
#: LiteLLM's default port; ``LITELLM_TEST_PORT`` moves the proxy (0: any free port).
DEFAULT_PORT = 4000


class LiteLLMNotInstalled(RuntimeError):
    """The proxy's virtual environment is missing."""


def litellm_command() -> Path:
    path = Path(os.environ.get("LITELLM_BIN") or REPO / ".venv-compat" / "bin" / "litellm")
    if not path.is_file():
        raise LiteLLMNotInstalled(f"{path} not found; the LiteLLM tier {INSTALL_HINT}")
    return path


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def choose_port() -> int:
    """``LITELLM_TEST_PORT``, else 4000 when free (so default discovery finds it), else any."""
    wanted = int(os.environ.get("LITELLM_TEST_PORT", DEFAULT_PORT))
    if wanted and port_is_free(wanted):
        return wanted
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LiteLLMProxy:
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def write_config(folder: Path, models: list[dict[str, object]]) -> Path:
    """A proxy config (YAML is a superset of JSON, so JSON needs no YAML library)."""
    import json

    config = {"model_list": models,
              "litellm_settings": {"num_retries": 0, "request_timeout": 60}}
    path = folder / "litellm_config.yaml"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return path


def start_proxy(config: Path, folder: Path) -> LiteLLMProxy:
    """Start the proxy with ``config`` and wait until it answers its liveness route."""
    command = litellm_command()
    port = choose_port()
    log_path = folder / f"litellm-{port}.log"
    home = folder / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "LANG": "C.UTF-8", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "LITELLM_TELEMETRY": "False", "PYTHONUNBUFFERED": "1"}
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(command), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            cwd=folder)
    proxy = LiteLLMProxy(port, process, log_path)
    return _when_up(proxy, f"http://127.0.0.1:{port}/health/liveliness", STARTUP_TIMEOUT,
                    "the LiteLLM proxy")


def _when_up(server: LiteLLMProxy, url: str, timeout: float, what: str) -> LiteLLMProxy:
    """``server`` once ``url`` answers 200; stopped, with its log, if it dies or never does."""
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2.0) as http:
        while time.monotonic() < deadline and server.process.poll() is None:
            try:
                if http.get(url).status_code == 200:
                    return server
            except httpx.TransportError:
                pass
            time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"{what} did not start on port {server.port}:\n{server.log_tail()}")


def llmock_command() -> Path:
    path = Path(os.environ.get("LLMOCK_BIN") or REPO / ".venv-compat" / "bin" / "llmock")
    if not path.is_file():
        raise LiteLLMNotInstalled(f"{path} not found; the LLMock tests {INSTALL_HINT}")
    return path


def start_llmock(folder: Path, *flags: str) -> LiteLLMProxy:
    """Start ``llmock serve`` on a free port with ``flags`` (faults to inject)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    log_path = folder / f"llmock-{port}.log"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder),
           "LANG": "C.UTF-8"}
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(llmock_command()), "serve", "--host", "127.0.0.1", "--port", str(port),
             "--log-level", "warning", *flags],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    mock = LiteLLMProxy(port, process, log_path)
    return _when_up(mock, f"{mock.base_url}/models", 60, "LLMock")
