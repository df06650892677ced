#!/usr/bin/env bash
# The Python package's checks, on a fresh virtual environment:
#   1. `pip install ./crates/bloomery-py` (the README's install line: maturin builds the
#      extension in release mode, as for any user),
#   2. the type stubs against the installed module (mypy's stubtest),
#   3. the pytest suite (crates/bloomery-py/tests) against the real `bloomery` CLI binary and,
#      when redis-server is installed, a live Redis server with the bloomery module (and a
#      local cluster of 6 primaries, tests/test_cluster_live.py).
# Needs Rust (cargo) and Python >= 3.9 with venv; installs maturin, pytest, numpy, pyarrow,
# mypy and redis-py (for the live 6-node cluster test) from PyPI into the venv. Environment:
# PYTHON (interpreter, default python3), BLOOMERY_PY_VENV (venv directory, default
# target/py-test-venv; recreated each run).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
py=${PYTHON:-python3}
venv=${BLOOMERY_PY_VENV:-$root/target/py-test-venv}
target=${CARGO_TARGET_DIR:-$root/target}

echo "== python: fresh venv in $venv ($($py --version))"
rm -rf "$venv"
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
    "maturin>=1.9,<2" pytest numpy "pyarrow>=14" mypy typing_extensions "redis==5.2.1"

echo "== python: the CLI (and the Redis module, when redis-server is installed) for interop tests"
# --workspace: the features of the workspace's test build, so after it nothing rebuilds
# (-p bloomery-cli would build the library again with that package's own features)
cargo build -q --workspace
export BLOOMERY_CLI="$target/debug/bloomery"
if command -v redis-server >/dev/null 2>&1; then
    export BLOOMERY_REDIS_MODULE="$target/debug/libbloomery_redis.so"
fi

echo "== python: pip install ./crates/bloomery-py"
"$venv/bin/python" -m pip install -q --disable-pip-version-check ./crates/bloomery-py
# outside the source tree, so that the installed package is the one imported
cd "$target"
"$venv/bin/python" -c "import bloomery, sys; f = bloomery.BloomFilter(1000, 0.01); f.add('x'); assert 'x' in f; print('bloomery', bloomery.__version__, 'on', sys.version.split()[0])"

echo "== python: stubs (mypy stubtest)"
"$venv/bin/python" -m mypy.stubtest bloomery

echo "== python: pytest"
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/crates/bloomery-py/tests"
