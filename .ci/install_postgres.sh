#!/usr/bin/env bash
# PostgreSQL for the tests that run the store and `serve` on it (Debian's `postgresql`).
# The tests start their own private cluster in a temporary folder
# (tests/postgres/postgres_cluster.py); the package's own cluster service is not used.
# As root the tests run the server as the `postgres` account the package creates.
# Idempotent: does nothing when initdb is already installed.
set -euo pipefail

find_initdb() { ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1; }

if [ -z "$(find_initdb)" ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        postgresql postgresql-client >/dev/null
fi
INITDB=$(find_initdb)
if [ -z "$INITDB" ]; then
    echo "install_postgres: postgresql was installed but no initdb was found" >&2
    exit 1
fi
if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
    echo "install_postgres: running as root but there is no 'postgres' account to run" \
         "the test cluster as" >&2
    exit 1
fi
echo "PostgreSQL for the tests: $("$INITDB" --version)"
