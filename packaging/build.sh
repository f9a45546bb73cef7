#!/usr/bin/env bash
# Build the one desktop-agent binary from a clean checkout, in its own virtualenv.
#   bash packaging/build.sh            # dist/desktop-agent        (single file)
#   bash packaging/build.sh --onedir   # dist/onedir/desktop-agent/ (folder; faster start)
# Then it runs the binary's --version and --smoke-test, so a broken build never ships.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
python="${PYTHON:-python3}"
venv="$repo/build/venv"
distpath="$repo/dist"

if [ "${1:-}" = "--onedir" ]; then
    export DESKTOP_AGENT_ONEDIR=1
    distpath="$repo/dist/onedir"
elif [ -n "${1:-}" ]; then
    echo "usage: bash packaging/build.sh [--onedir]" >&2; exit 2
fi

"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "build.sh: Python 3.11 or newer is needed ($python)" >&2; exit 1; }
[ -d "$venv" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -e ".[build]"

PYTHONNODEBUGRANGES=1 "$venv/bin/python" -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath "$distpath" --workpath "$repo/build/pyinstaller" build.spec

binary="$distpath/desktop-agent"
[ -d "$binary" ] && binary="$binary/desktop-agent"
case "$(uname -s)" in MINGW*|MSYS*|CYGWIN*) binary="$binary.exe" ;; esac

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export DESKTOP_AGENT_BUNDLE_CACHE="$scratch/bundles"  # the single file unpacks the app here
"$binary" --version
DESKTOP_AGENT_DATA_DIR="$scratch" "$binary" --smoke-test
echo "build.sh: built and smoke-tested $binary"
