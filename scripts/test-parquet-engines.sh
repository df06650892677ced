#!/usr/bin/env bash
# Cross-engine checks of `bloomery parquet`: files written by pyarrow and DuckDB are answered
# as DuckDB's parquet_bloom_probe answers them, and files rewritten by `parquet index
# --rewrite` read back the same in pyarrow and DuckDB, whose bloom probe reads the new filters.
# Installs pyarrow and duckdb from PyPI into a venv (VENV, default target/parquet-venv) and
# builds the CLI. Closes with "N passed, M failed"; exits non-zero on a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-target/parquet-venv}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install -q --disable-pip-version-check pyarrow duckdb
# --workspace: the workspace test build's features, so nothing rebuilds after it
cargo build -q --workspace
BLOOMERY=${BLOOMERY:-target/debug/bloomery} "$VENV/bin/python" scripts/parquet_engines.py
