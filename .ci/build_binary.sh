#!/usr/bin/env bash
# CI: build the one binary with build.spec and prove it works frozen.
# Runs `--version` and `--smoke-test` on dist/desktop-agent and fails on a non-zero
# exit or on any traceback written to stderr. Called from .ci/run inside its venv;
# works standalone too (it installs PyInstaller from the `build` extra).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
elapsed() { echo "$(( $(date +%s) - started ))s"; }

python -m pip install -q -e ".[build]"

# PyInstaller's cache of collected libraries is per user (~/.cache/pyinstaller), and
# `--clean` empties it: two builds at once (another checkout's) pulled files from
# under each other ("No such file: .../bincache.../libbz2.so.1.0"). Each checkout
# keeps its own.
export PYINSTALLER_CONFIG_DIR="${PYINSTALLER_CONFIG_DIR:-$PWD/build/pyinstaller-config}"
echo "== build.spec -> dist/desktop-agent ($(elapsed))"
rm -rf build/desktop-agent dist/desktop-agent
# Without column positions in code objects: less memory (build.spec says how much).
PYTHONNODEBUGRANGES=1 python -m PyInstaller --noconfirm --clean --log-level WARN build.spec
binary=dist/desktop-agent
[ -x "$binary" ] || { echo "build_binary: $binary was not built" >&2; exit 1; }
echo "== built $binary: $(( $(stat -c %s "$binary") / 1000000 )) MB ($(elapsed))"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export DESKTOP_AGENT_DATA_DIR="$scratch/data"
# The one file unpacks the app once per build into this folder (~/.cache/desktop-agent/
# bundles by default); --version does it here, --smoke-test runs from what it left.
export DESKTOP_AGENT_BUNDLE_CACHE="$scratch/bundles"

run_checked() {  # run the binary, show its output, fail on a bad status or a traceback
    local name=$1; shift
    local status=0
    "$binary" "$@" >"$scratch/$name.out" 2>"$scratch/$name.err" || status=$?
    cat "$scratch/$name.out"
    cat "$scratch/$name.err" >&2
    if [ "$status" -ne 0 ]; then
        echo "build_binary: '$binary $*' exited with status $status" >&2; exit 1
    fi
    if grep -q "Traceback (most recent call last)" "$scratch/$name.err"; then
        echo "build_binary: '$binary $*' printed a traceback on stderr" >&2; exit 1
    fi
}

echo "== $binary --version ($(elapsed))"
run_checked version --version
expected=$(python -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
grep -qx "desktop-agent $expected" "$scratch/version.out" \
    || { echo "build_binary: --version does not say $expected" >&2; exit 1; }

count_unpacked() { find "$scratch/bundles" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l; }
[ "$(count_unpacked)" -eq 0 ] \
    || { echo "build_binary: --version unpacked the app (the stub answers it)" >&2; exit 1; }

echo "== $binary --smoke-test: its first launch unpacks the app ($(elapsed))"
QT_QPA_PLATFORM=offscreen run_checked smoke --smoke-test
[ "$(count_unpacked)" -eq 1 ] \
    || { echo "build_binary: expected one unpacked app, found $(count_unpacked)" >&2; exit 1; }
grep -q "preparing version $expected for its first start" "$scratch/smoke.err" \
    || { echo "build_binary: the first launch did not say it was unpacking" >&2; exit 1; }
echo "== frozen binary OK ($(elapsed))"
