#!/usr/bin/env bash
# Run the sandbox tests as a normal user, after .ci/run ran them as root.
#
# The escapes of the sandbox differ by who starts it: as root the command must
# be moved to a non-zero uid without capabilities, as a normal user bubblewrap
# makes an unprivileged user namespace. Both must hold, so CI runs these tests
# twice. So do the tests of writes into the working folder racing a program
# that swaps folders for links: what a write may reach differs by who writes, and so
# do restores raced by /commands that swap a folder for a link (the lease keeps them
# apart). As root this makes a throwaway account (sandbox-ci) and runs them as it; as a
# normal user it runs them directly.
set -euo pipefail
cd "$(dirname "$0")/.."
TESTS=(tests/tools/test_sandbox.py tests/server/test_sandbox_serve.py
       tests/server/test_command_sandbox.py tests/store/test_import_safety.py
       tests/workspace/test_restore_race.py tests/workspace/test_folder_writer.py
       tests/server/test_command_lease.py
       tests/tools/test_command_preview.py tests/workspace/test_preview_apply.py
       tests/session/test_command_previews.py tests/server/test_command_previews_api.py)
PYTHON=.venv/bin/python
SITE=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
VERSION=$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')

if [ "$(id -u)" -ne 0 ]; then
    exec env QT_QPA_PLATFORM=offscreen "$PYTHON" -m pytest -q -x -p no:cacheprovider "${TESTS[@]}"
fi

USER_NAME=sandbox-ci
id "$USER_NAME" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$USER_NAME"
HOME_DIR=$(getent passwd "$USER_NAME" | cut -d: -f6)
# The venv's interpreter often lives under /root (pyenv, uv), which the user
# cannot enter: then use the system's python of the same version with the
# venv's packages (compiled extensions share the ABI within a minor version).
if runuser -u "$USER_NAME" -- "$PYTHON" -c 'pass' 2>/dev/null; then
    RUN=("$PYTHON")
    EXTRA=""
else
    RUN=()
    for candidate in "/usr/local/bin/python$VERSION" "/usr/bin/python$VERSION"; do
        if runuser -u "$USER_NAME" -- "$candidate" -c 'pass' 2>/dev/null; then
            RUN=("$candidate")
            break
        fi
    done
    if [ ${#RUN[@]} -eq 0 ]; then
        echo "no python$VERSION the user $USER_NAME may run; install it system-wide" >&2
        exit 1
    fi
    EXTRA=":$SITE"
fi
# The user needs to read the checkout; pytest's temporary folders are its own.
# A temp folder of the user's own: pytest refuses a /tmp/pytest-of-<name> left by an
# earlier account of the same name with another uid (a machine that is kept between runs).
BASETEMP=$(mktemp -d /tmp/sandbox-ci-tests.XXXXXX)
chown "$USER_NAME" "$BASETEMP"
exec runuser -u "$USER_NAME" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME_DIR" \
    PYTHONPATH="$PWD$EXTRA" QT_QPA_PLATFORM=offscreen CI="${CI:-true}" \
    "${RUN[@]}" -m pytest -q -x -p no:cacheprovider --basetemp "$BASETEMP/run" "${TESTS[@]}"
