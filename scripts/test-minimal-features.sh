#!/usr/bin/env bash
# The library without its default features (no rayon, memmap2, tempfile or serde): lints and
# tests. What a user with `default-features = false` builds; the `parquet` module's tests run
# too (the crate's dev-dependency on itself turns on `parquet` only). Then the CLI without its
# default `lab` feature.
# Usage: bash scripts/test-minimal-features.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo clippy -p bloomery --all-targets --no-default-features -- -D warnings
# The longest tests use no optional feature and ran in the default build: the window filters'
# streams, the AVX2 counting kernel against the scalar path, and the measured rates of tests/fpr.rs.
# cargo-nextest, where installed, runs the test binaries side by side; the documentation's
# examples ran with the default features only (scripts/test.sh).
skip1=sets::window::
skip2=multisets::blocked_counting::avx2::tests::avx2_matches_the_scalar_path
if [ -z "${BLOOMERY_NO_NEXTEST:-}" ] && cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run -p bloomery --no-default-features --no-fail-fast \
    -E "!test(/^sets::window::/) & !test(=$skip2) & !binary(=fpr)"
else
  cargo test -p bloomery --no-default-features -- --skip "$skip1" --skip "$skip2"
fi
# The lean CLI: no `lab` feature, so no bloomery-lab crate; `bloomery lab` says it was left out.
if cargo tree -p bloomery-cli --no-default-features -e normal | grep -q bloomery-lab; then
    echo "bloomery-cli --no-default-features still depends on bloomery-lab" >&2
    exit 1
fi
cargo clippy -p bloomery-cli --all-targets --no-default-features -- -D warnings
cargo test -p bloomery-cli --no-default-features --test lab
