"""The engine's child process, and the contract between it and the app that starts it.

The app (:mod:`desktop_agent.engine.runner`) starts ``desktop-agent _engine ...``
(the hidden subcommand; from source ``python -m desktop_agent _engine ...``) and
speaks to it through three channels:

* **argv** carries what anyone may see in a process list: the model file, port,
  context, slots, threads, GPU layers, the parent's pid.
* **stdin** carries one JSON line with what must stay private (the API key) or is
  long (a chat template), then stays open as a watchdog: when it reaches EOF the
  app has gone, however it went (quit, crash, SIGKILL), and the child stops its
  server and exits. On Linux the child also asks the kernel for SIGTERM when its
  parent dies (``PR_SET_PDEATHSIG``); the pipe covers macOS and a parent that died
  before that request was made. (The kernel's signal follows the *thread* that
  started the child, so the app starts engines from its main event-loop thread.)
* **stdout** carries one ready line, :data:`READY_PREFIX` and JSON: the address and
  what llama.cpp really applied (the context per slot and the slots, read back from
  its ``/props``; llama.cpp may fit a smaller context than asked). After it the
  child's stdout joins its stderr, the engine's log, which the app keeps in a file.

Only the standard library is imported at the top: every ``desktop-agent`` command
imports this module to register the hidden subcommand.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import sys
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from desktop_agent.engine.errors import CHILD_ERROR_PREFIX

#: The hidden subcommand (not listed in ``--help``; a person has no use for it).
HIDDEN_COMMAND = "_engine"
#: The start of the ready line on the child's stdout.
READY_PREFIX = "desktop-agent-engine ready "
#: Exit status when the parent was gone before the child could serve.
EXIT_ORPHANED = 3
EXIT_FAILED = 1
#: Linux ``prctl`` option: a signal for this process when its parent dies.
_PR_SET_PDEATHSIG = 1
_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}
_STDIN = 0


@dataclass(frozen=True)
class ChildLaunch:
    """What the app tells a child to serve (argv, plus the private part on stdin).

    Attributes:
        model: The GGUF file.
        port: The port on 127.0.0.1; 0 for one the system chooses.
        alias: The model name the server answers to.
        context_size: llama.cpp's ``n_ctx`` (all slots together).
        parallel: Slots.
        threads: CPU threads.
        gpu_layers: Layers on a GPU, or None for llama.cpp's own fit.
        flash_attn: ``auto``, ``on`` or ``off``.
        api_key: The bearer token (sent on stdin, never on argv).
        chat_template: A Jinja template (stdin), or None for the model's own.
    """

    model: Path
    port: int
    alias: str
    context_size: int
    parallel: int
    threads: int
    gpu_layers: int | None
    flash_attn: str
    api_key: str
    chat_template: str | None

    def command(self, parent_pid: int) -> list[str]:
        """The child's command line: this same program, running the hidden subcommand.

        In the one-file binary ``sys.executable`` is the desktop-agent binary itself;
        from source it is Python, which runs the package.
        """
        if getattr(sys, "frozen", False):
            program = [sys.executable, HIDDEN_COMMAND]
        else:
            program = [sys.executable, "-m", "desktop_agent", HIDDEN_COMMAND]
        return [*program, "--model", str(self.model), "--port", str(self.port),
                "--alias", self.alias, "--ctx-size", str(self.context_size),
                "--parallel", str(self.parallel), "--threads", str(self.threads),
                "--gpu-layers", "auto" if self.gpu_layers is None else str(self.gpu_layers),
                "--flash-attn", self.flash_attn, "--parent-pid", str(parent_pid)]

    def private_line(self) -> bytes:
        """The stdin line: what must not show in a process list, and the long template."""
        return json.dumps({"api_key": self.api_key,
                           "chat_template": self.chat_template}).encode() + b"\n"


@dataclass(frozen=True)
class ReadyFacts:
    """What the child announces once it serves.

    Attributes:
        address: ``http://127.0.0.1:PORT``.
        port: The port it listens on.
        context_length: Tokens per slot, as llama.cpp applied them.
        parallel: Slots, as applied.
        supports_tools: Whether the chat template in use renders tools.
    """

    address: str
    port: int
    context_length: int
    parallel: int
    supports_tools: bool


def parse_ready_line(line: str) -> ReadyFacts | None:
    """The facts in a ready line, or None for any other line."""
    if not line.startswith(READY_PREFIX):
        return None
    try:
        fields: dict[str, Any] = json.loads(line.removeprefix(READY_PREFIX))
        return ReadyFacts(address=str(fields["address"]), port=int(fields["port"]),
                          context_length=int(fields["context_length"]),
                          parallel=int(fields["parallel"]),
                          supports_tools=bool(fields["supports_tools"]))
    except (ValueError, KeyError, TypeError):
        return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The child's options (the hidden subcommand's parser)."""
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--port", required=True, type=int)
    parser.add_argument("--alias", required=True)
    parser.add_argument("--ctx-size", required=True, type=int)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--gpu-layers", default="auto")
    parser.add_argument("--flash-attn", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--parent-pid", required=True, type=int)


def run_child(args: argparse.Namespace) -> int:
    """Serve until the app says stop (SIGTERM), goes away (stdin EOF) or dies (Linux signal)."""
    # Before any thread exists, so that every thread llama.cpp starts inherits the mask and
    # a stop signal always reaches the sigwait in ``serve`` (never a thread that would die).
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    _ask_for_signal_on_parent_death()
    if os.getppid() != args.parent_pid:
        return EXIT_ORPHANED  # the app died before the request above was made
    private = _read_private_line()
    if private is None:
        return EXIT_ORPHANED  # the app closed the pipe before sending anything
    threading.Thread(target=_stop_when_parent_goes, name="engine-watchdog", daemon=True).start()
    from desktop_agent.engine.llama_serve import serve

    api_key = str(private["api_key"])
    template = private.get("chat_template")
    try:
        return serve(args.model, port=args.port, alias=args.alias,
                     template=template if isinstance(template, str) else None,
                     context_size=args.ctx_size, parallel=args.parallel, threads=args.threads,
                     gpu_layers=None if args.gpu_layers == "auto" else int(args.gpu_layers),
                     api_key=api_key, flash_attn=args.flash_attn,
                     ready=lambda address: _announce(address, api_key))
    except Exception as exc:  # noqa: BLE001 - llama.cpp's refusal, said once in the log
        sys.stderr.write(f"{CHILD_ERROR_PREFIX}{exc}\n")
        sys.stderr.flush()
        return EXIT_FAILED


def _ask_for_signal_on_parent_death() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # the stdin watchdog still stops the child


def _read_private_line() -> dict[str, Any] | None:
    # Raw reads of fd 0, never ``sys.stdin``: the watchdog thread blocks on it until the
    # very end, and a daemon thread holding a buffered reader's lock aborts Python's exit.
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(_STDIN, 65536)
        if not chunk:
            return None
        line += chunk
    fields = json.loads(line)
    return fields if isinstance(fields, dict) else None


def _stop_when_parent_goes() -> None:
    """Block on stdin; at EOF the app has gone: stop the server as SIGTERM would."""
    while os.read(_STDIN, 4096):
        pass  # the app writes nothing more; anything read is ignored
    os.kill(os.getpid(), signal.SIGTERM)


def _announce(address: str, api_key: str) -> None:
    """Print the ready line with what llama.cpp applied, then send stdout to the log."""
    props = _read_props(address, api_key)
    settings = props.get("default_generation_settings", {})
    caps = props.get("chat_template_caps", {})
    port = int(address.rsplit(":", 1)[1])
    facts = {"address": address, "port": port, "context_length": int(settings["n_ctx"]),
             "parallel": int(props["total_slots"]),
             "supports_tools": bool(caps.get("supports_tools", False))}
    sys.stdout.write(f"{READY_PREFIX}{json.dumps(facts)}\n")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())


def _read_props(address: str, api_key: str) -> dict[str, Any]:
    # No proxy: a loopback request must never leave the machine, whatever http_proxy says.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(f"{address}/props",
                                     headers={"Authorization": f"Bearer {api_key}"})
    with opener.open(request, timeout=60) as response:
        props: dict[str, Any] = json.loads(response.read())
    return props
