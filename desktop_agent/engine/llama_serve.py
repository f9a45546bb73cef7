"""Serve one GGUF file with llama.cpp's own HTTP server, in this process, until told to stop.

llama.cpp comes from the ``xllamacpp`` wheel (its server compiled into a Python
extension, built for any x86-64 CPU with AVX2), so no separate binary is shipped.
The engine's child process, ``desktop-agent try-model`` (through the engine) and
the end-to-end tests' launcher all serve through :func:`serve`, so the tests run
what people run. Only the standard library is imported at the top: the 100 MB
extension loads when :func:`serve` runs, in the process that serves.
"""

from __future__ import annotations

import importlib.util
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from desktop_agent.engine.errors import EngineNotInstalled

#: What pip installs (the version the end-to-end tests were measured against).
SERVER_PACKAGE = "xllamacpp==2026.10.11549"

#: The chat template that gives a model whose own template ignores tools Hermes-style
#: ``<tool_call>`` calls, which llama.cpp turns into OpenAI ``tool_calls``.
TOOL_TEMPLATE_NAME = "models/hermes_tools.jinja"

EXIT_OK = 0

#: llama.cpp's flash attention settings (``-fa``): auto uses it where the backend has it.
FLASH_ATTENTION = {"auto": -1, "on": 1, "off": 0}


def require_server_package() -> None:
    """Check that ``xllamacpp`` is installed, without loading its 100 MB library.

    Raises:
        EngineNotInstalled: It is not; the message says how to add it.
    """
    if importlib.util.find_spec("xllamacpp") is not None:
        return
    if getattr(sys, "frozen", False):  # no pip inside the one-file binary
        raise EngineNotInstalled(
            "This build of the app has no llama.cpp engine; install the app from its "
            "repository (bash scripts/install.sh) to run models itself, or start LM Studio "
            "or Ollama.")
    raise EngineNotInstalled(
        f"llama.cpp's server is not installed ({SERVER_PACKAGE}); install it with: "
        f"{sys.executable} -m pip install {SERVER_PACKAGE}")


def tool_chat_template() -> str:
    """The project's tool-calling chat template (``resources/models/hermes_tools.jinja``)."""
    from desktop_agent.appdata.resource_files import resource_path

    return resource_path(TOOL_TEMPLATE_NAME).read_text(encoding="utf-8")


def serve(model: Path, *, port: int, alias: str, template: str | None = None,
          context_size: int = 8192, parallel: int = 1, threads: int = 1,
          gpu_layers: int | None = None, api_key: str | None = None, flash_attn: str = "auto",
          ready: str | Callable[[str], None] = "listening on {address}") -> int:
    """Serve ``model`` on 127.0.0.1 until SIGINT or SIGTERM reaches this process (blocking).

    Args:
        model: The GGUF file (memory-mapped by llama.cpp, so loading is fast and
            the pages are shared with the page cache).
        port: The port; 0 lets the system choose a free one (race-free), and the
            address given to ``ready`` names the one chosen.
        alias: The model name the server answers to in ``/v1/models``.
        template: A Jinja chat template, or None for the model's own.
        context_size: llama.cpp's ``n_ctx``: the tokens shared by all slots.
        parallel: Slots (requests served at once); each gets ``context_size / parallel``.
        threads: CPU threads for generation and for prompt processing.
        gpu_layers: Layers offloaded to a GPU; None lets llama.cpp fit them itself.
        api_key: The bearer token the chat routes demand, or None for none.
        flash_attn: ``auto``, ``on`` or ``off``.
        ready: Printed (``{address}`` filled in) or called with the address once the
            model is loaded and the server listens.

    Returns:
        0 after a stop by signal.

    Raises:
        RuntimeError: llama.cpp could not start (port in use, a model it cannot
            load); its log, on this process's stderr, says why.
    """
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.model_alias = {alias}
    params.port = port
    params.hostnames = ["127.0.0.1"]
    params.n_ctx = context_size
    params.n_parallel = parallel
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    if gpu_layers is not None:
        params.n_gpu_layers = gpu_layers
    params.flash_attn_type = FLASH_ATTENTION[flash_attn]
    params.use_jinja = True
    params.ui = False
    if template is not None:
        params.chat_template = template
    if api_key:
        params.api_keys = [api_key]
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)  # the server's threads inherit it
    server = xllamacpp.Server(params)  # serves on its own threads until deleted
    try:
        if callable(ready):
            ready(server.listening_address)
        else:
            print(ready.format(address=server.listening_address), flush=True)  # noqa: T201
        received = signal.sigwait(stop_signals)
        print(f"{signal.Signals(received).name}: stopping the model server", flush=True)  # noqa: T201
    finally:
        del server  # joins the server's threads and frees the model
    return EXIT_OK
