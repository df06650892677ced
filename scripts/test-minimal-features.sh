#!/usr/bin/env bash
# The library without its default features (no rayon, memmap2, tempfile or serde): lints and
# tests. What a user with `default-features = false` builds; the `parquet` module's tests run
# too (the crate's dev-dependency on itself turns on `parquet` only).
# Usage: bash scripts/test-minimal-features.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo clippy -p bloomery --all-targets --no-default-features -- -D warnings
cargo test -p bloomery --no-default-features
