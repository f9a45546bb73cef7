#!/usr/bin/env bash
# The system libraries the window needs on Linux, installed with the system's package
# manager. Qt's xcb platform plugin loads these at start-up; without them the app
# cannot open a window (Qt's own message blames xcb-cursor0 and aborts). Also
# bubblewrap: without it the model's commands would run with the account's full
# rights (the header then says "No sandbox: bubblewrap is not installed").
#
#   bash scripts/install-system-libraries.sh            # the window's libraries
#   bash scripts/install-system-libraries.sh --tests    # plus what the test tiers use
#
# Debian and Ubuntu (apt-get) are handled; elsewhere it prints the list and exits 0.
# It asks for sudo only when it is not root and something is missing.
set -euo pipefail

WINDOW_PACKAGES=(
    libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0
    libxcb-render-util0 libxcb-shape0 libxcb-xinerama0 libxcb-xkb1 libxkbcommon-x11-0
    libegl1 libgl1 libfontconfig1 libdbus-1-3 bubblewrap
)
# Test tiers: a real Secret Service (gnome-keyring under a private D-Bus), a virtual
# screen for screenshots, and node + npm for the MCP reference servers
# (.ci/install_mcp_servers.sh). bubblewrap comes with the window's packages.
TEST_PACKAGES=(gnome-keyring dbus libsecret-tools xvfb xauth nodejs)

packages=("${WINDOW_PACKAGES[@]}")
[ "${1:-}" = "--tests" ] && packages+=("${TEST_PACKAGES[@]}")
# Debian's npm only when no npm is on the PATH: a NodeSource nodejs ships its own npm
# and conflicts with Debian's package.
[ "${1:-}" = "--tests" ] && ! command -v npm >/dev/null 2>&1 && packages+=(npm)

if [ "$(uname -s)" != Linux ]; then
    exit 0  # macOS and Windows: Qt's wheels carry everything the window needs
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-system-libraries: no apt-get here; install these with your package" \
         "manager (names as on Debian): ${packages[*]}" >&2
    exit 0
fi

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

as_root=()
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
        echo "install-system-libraries: run as root to install: ${missing[*]}" >&2; exit 1; }
    as_root=(sudo)
fi
echo "install-system-libraries: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
