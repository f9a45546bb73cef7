#!/usr/bin/env bash
# Install everything the test suite runs against, on top of scripts/install.sh: the
# test extra (pytest, pytest-qt, linters), the system services the real-parts tiers use
# (Secret Service, Xvfb, bubblewrap, node, PostgreSQL), the real model server for the
# llama.cpp tier, the LiteLLM proxy and the MCP reference servers.
# CI runs this same script; a tier whose parts fail to install fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/python ] || bash scripts/install.sh
bash scripts/install-system-libraries.sh --tests
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"
bash .ci/install_sandbox.sh
bash .ci/install_postgres.sh
PYTHON=.venv/bin/python bash .ci/install_llama.sh
# LiteLLM proxy in its own venv (.venv-compat/) and the MCP reference servers from npm
# (.mcp-servers/), for tests/e2e/litellm and tests/tools/test_mcp_reference_servers.py.
bash .ci/install_compat.sh
bash .ci/install_mcp_servers.sh
echo "install-test-tools: done"
