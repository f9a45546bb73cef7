#!/usr/bin/env bash
# Installs the LiteLLM proxy (and LLMock) for the tests/e2e/litellm tier into its OWN virtual
# environment, .venv-compat/ (litellm[proxy] pins fastapi, uvicorn, pydantic and
# openai to versions that clash with the app's; the tests start it as a subprocess,
# so it never shares an interpreter with the app).
#
# The version is pinned exactly: LiteLLM releases have been hijacked on PyPI before
# (1.82.7 and 1.82.8 carried a credential stealer that ran from a .pth file at every
# interpreter start), so a new release is taken only on purpose, after reading its
# notes. (Releases from 1.103 on require a certifi release the registry does not
# have, so they cannot be installed here.) The proxy runs with no provider keys in its environment; it only fronts the
# local llama.cpp server.
#
#   bash .ci/install_compat.sh          # prints the install time and the version
#
# It fails loudly: in CI a tier that cannot run must not pass by skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
LITELLM_VERSION="1.102.4"
LLMOCK_VERSION="0.2.2"  # a chaos mock of OpenAI-style servers (truncated streams...)
VENV=.venv-compat
PYTHON_BASE="${PYTHON_BASE:-python3}"
start=$(date +%s)

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON_BASE" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    "litellm[proxy]==$LITELLM_VERSION" "llmock==$LLMOCK_VERSION"
# Prove the proxy's entry point loads here (an import error would otherwise show as
# a test that waits for a port).
"$VENV/bin/litellm" --version >/dev/null 2>&1 || "$VENV/bin/python" -c "import litellm.proxy.proxy_server"
installed=$("$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('litellm'))")
[ "$installed" = "$LITELLM_VERSION" ] || { echo "install_compat.sh: got litellm $installed" >&2; exit 1; }
[ -x "$VENV/bin/llmock" ] || { echo "install_compat.sh: llmock missing" >&2; exit 1; }
echo "install_compat.sh: litellm[proxy] $installed, llmock $LLMOCK_VERSION in $VENV ($(( $(date +%s) - start )) s)"
