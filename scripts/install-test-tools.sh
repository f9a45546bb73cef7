#!/usr/bin/env bash
# Install everything the test suite runs against, on top of scripts/install.sh: the
# test extra (pytest, pytest-qt, linters), the system services the real-parts tiers use
# (Secret Service, Xvfb, bubblewrap), and the real model server for the llama.cpp tier.
# CI runs this same script; a tier whose parts fail to install fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/python ] || bash scripts/install.sh
bash scripts/install-system-libraries.sh --tests
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"
bash .ci/install_sandbox.sh
PYTHON=.venv/bin/python bash .ci/install_llama.sh
echo "install-test-tools: done"
