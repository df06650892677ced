#!/usr/bin/env bash
# The `parquet prune` benchmark of docs/BENCHMARKS.md: 1M keys against a lake of FILES Parquet
# files × 4 row groups (ROWS rows each, INT64 ids with a split-block filter at 1%), warm page
# cache. Measures the I/O floor (footers + filter bytes, read alone), bloomery parquet prune
# and check -c, and DuckDB's parquet_bloom_probe (Python duckdb in a venv) on the same files.
# Env: LAKE (target/parquet-lake), FILES (1000), ROWS (10000), KEYS (1000000), VENV
# (target/parquet-venv), REPEATS (3), OLD (another bloomery binary whose prunes are timed
# alternately with this build's, for A/B comparisons).
set -euo pipefail
cd "$(dirname "$0")/../.."
LAKE=${LAKE:-target/parquet-lake}
FILES=${FILES:-1000}
ROWS=${ROWS:-10000}
VENV=${VENV:-target/parquet-venv}
cargo build -q --release -p bloomery-benches --bin parquet_lake
cargo build -q --release -p bloomery-cli
if [ ! -f "$LAKE/part-$(printf %05d $((FILES - 1))).parquet" ]; then
  rm -rf "$LAKE"
  target/release/parquet_lake gen "$LAKE" "$FILES" 4 "$ROWS"
fi
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install -q --disable-pip-version-check duckdb
LAKE=$LAKE FILES=$FILES ROWS=$ROWS "$VENV/bin/python" benches/scripts/parquet_bench.py
