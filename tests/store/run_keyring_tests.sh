#!/usr/bin/env bash
# Run the keyring tests against a real Secret Service (and the no-keyring path).
#
# The tests start their own private D-Bus session bus and an unlocked
# gnome-keyring-daemon with a throwaway HOME (see the secret_service_bus fixture
# in tests/store/conftest.py), so nothing here touches a real login keyring.
# This script only makes sure the programs exist, installing them with apt-get
# when it runs as root on Debian/Ubuntu (as CI does).
set -euo pipefail
cd "$(dirname "$0")/../.."

need_install=0
for tool in dbus-daemon gnome-keyring-daemon; do
    command -v "$tool" >/dev/null 2>&1 || need_install=1
done
if [ "$need_install" = 1 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gnome-keyring dbus libsecret-tools
    else
        echo "gnome-keyring-daemon/dbus-daemon missing: the Secret Service tests will be skipped." >&2
        echo "Install them with: sudo apt-get install gnome-keyring dbus libsecret-tools" >&2
    fi
fi
exec python3 -m pytest tests/store/test_secrets.py -q -rs "$@"
