#!/usr/bin/env bash
# Install the built binary, its .desktop entry and the icon set for the current user
# (or system-wide with PREFIX=/usr/local, run as root), so the app shows up in menus.
#   bash packaging/linux/install_desktop_entry.sh [path/to/desktop-agent]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
binary="${1:-$repo/dist/desktop-agent}"
prefix="${PREFIX:-$HOME/.local}"
[ -x "$binary" ] || { echo "no binary at $binary (build it: bash packaging/build.sh)" >&2; exit 1; }

install -Dm755 "$binary" "$prefix/bin/desktop-agent"
install -Dm644 "$here/desktop-agent.desktop" "$prefix/share/applications/desktop-agent.desktop"
for size in 16 24 32 48 64 128 256 512; do
    install -Dm644 "$repo/resources/icons/desktop-agent-$size.png" \
        "$prefix/share/icons/hicolor/${size}x${size}/apps/desktop-agent.png"
done
install -Dm644 "$repo/resources/icons/desktop-agent.svg" \
    "$prefix/share/icons/hicolor/scalable/apps/desktop-agent.svg"
command -v update-desktop-database >/dev/null && update-desktop-database -q "$prefix/share/applications" || true
command -v gtk-update-icon-cache >/dev/null && gtk-update-icon-cache -q -t "$prefix/share/icons/hicolor" || true
echo "installed desktop-agent to $prefix/bin (make sure it is on PATH)"
