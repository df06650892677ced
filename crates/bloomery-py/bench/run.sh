#!/usr/bin/env bash
# The Python benchmark (docs/BENCHMARKS.md, "Python package"): a venv of its own with the
# competitors from PyPI (rbloom, pybloom-live, pyprobables, fastbloom-rs, and pyarrow) and
# bloomery built in release mode by `pip install`, then bench.py. Arguments go to bench.py:
#
#   bash crates/bloomery-py/bench/run.sh                      # 1M and 10M keys, 5 rounds
#   bash crates/bloomery-py/bench/run.sh --n 1000000 --rounds 3
#
# Environment: PYTHON (default python3), BLOOMERY_BENCH_VENV (default target/py-bench).
set -euo pipefail
cd "$(dirname "$0")/../../.."
py=${PYTHON:-python3}
venv=$(realpath -m "${BLOOMERY_BENCH_VENV:-target/py-bench}")
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
    rbloom pybloom-live pyprobables fastbloom-rs numpy pyarrow
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps ./crates/bloomery-py
cd target
exec "$venv/bin/python" ../crates/bloomery-py/bench/bench.py "$@"
