#!/usr/bin/env bash
# bubblewrap: the sandbox around the bash tool and REST /commands (Linux).
# Idempotent: does nothing when a working bwrap is already installed.
set -euo pipefail

if command -v bwrap >/dev/null 2>&1; then
    echo "bubblewrap already installed: $(bwrap --version)"
else
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends bubblewrap
fi

# The tests fail (never skip) without a working sandbox: check it here so the
# CI log names the cause. Non-root needs unprivileged user namespaces.
if ! bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr \
        --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin \
        --proc /proc --dev /dev -- /usr/bin/true; then
    echo "bubblewrap is installed but cannot create a sandbox here;" >&2
    echo "on Ubuntu 24.04+ runners: sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0" >&2
    exit 1
fi
echo "bubblewrap sandbox works"
