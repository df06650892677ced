#!/usr/bin/env bash
# Run every cargo-fuzz target in fuzz/ for a fixed time each, from seed corpora made here, so
# that no target rots (a target that fails on its own seeds fails this script at once).
#
#   bash scripts/fuzz.sh                 # every target, 15 s each (CI sets FUZZ_SECONDS=6)
#   bash scripts/fuzz.sh 300             # every target, 5 minutes each (a real fuzzing run)
#   bash scripts/fuzz.sh 600 load_any    # one target
#   FUZZ_SECONDS=60 bash scripts/fuzz.sh
#   FUZZ_SEED=1234 bash scripts/fuzz.sh    # libFuzzer's seed (random and printed otherwise)
#   FUZZ_DEV=1 bash scripts/fuzz.sh     # unoptimised build: minutes less to build, far
#                                       # fewer runs a second (CI's smoke run)
#
# Needs the nightly toolchain (libFuzzer and the sanitizers need it); installs cargo-fuzz
# when it is missing. Without nightly it prints a SKIP line and exits 0, or 1 when CI is set
# (set FUZZ_ALLOW_SKIP=1 to accept the skip there). A crash, a hang (-timeout) or a leak is
# written to fuzz/artifacts/<target>/ and fails the script; reproduce it with
#   cd fuzz && cargo +nightly fuzz run <target> artifacts/<target>/<file>
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

seconds=${1:-${FUZZ_SECONDS:-15}}
shift || true
all_targets=$(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^bloomery-fuzz$')
targets=${*:-$all_targets}

skip() {
  echo "SKIP fuzz: $1"
  if [ -n "${CI:-}" ] && [ -z "${FUZZ_ALLOW_SKIP:-}" ]; then
    echo "fuzz: CI is set, so a skip is a failure (FUZZ_ALLOW_SKIP=1 accepts it)" >&2
    exit 1
  fi
  exit 0
}

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  skip "no nightly toolchain (install it with: rustup toolchain install nightly)"
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install cargo-fuzz --locked || skip "cargo-fuzz could not be installed"
fi
echo "== $(cargo +nightly fuzz --version), $(rustup run nightly rustc --version)"

golden=crates/bloomery/tests/golden/v1
corpus=fuzz/corpus

echo "== seed corpora"
# load_any: one valid file of every kind (and the compressed and delta forms)
mkdir -p "$corpus/load_any" "$corpus/load_mapped" "$corpus/decompress" "$corpus/cli_input" \
  "$corpus/parquet_filter_header" "$corpus/parquet_footer" "$corpus/parquet_scan" \
  "$corpus/redisbloom_chunks" "$corpus/compress_encoder" "$corpus/parquet_index"
cp "$golden"/*.bloom "$golden"/*.delta "$corpus/load_any/"
# load_mapped: the plain (mappable) golden files; compressed ones are refused by the map
for f in "$golden"/*.bloom; do
  case "$f" in *compressed*) ;; *) cp "$f" "$corpus/load_mapped/" ;; esac
done
# decompress: the compressed and delta golden files, and every golden file compressed
cp "$golden"/classic-compressed.bloom "$golden"/classic.delta "$corpus/decompress/"
bin=""
for b in target/release/bloomery target/debug/bloomery; do
  if [ -x "$b" ]; then bin=$b; break; fi
done
if [ -z "$bin" ]; then
  cargo build -q -p bloomery-cli
  bin=target/debug/bloomery
fi
for f in "$golden"/*.bloom; do
  name=$(basename "$f" .bloom)
  # kinds without a compressed form (RedisBloom's own) are only seeds of load_any
  "$bin" -q compress --force "$f" "$corpus/decompress/$name.z" 2>/dev/null ||
    echo "fuzz: $name has no compressed form; not a decompress seed"
done
# cli_input: three control bytes (hex, field, delimiter; field number; wrapping), then lines
printf '\x00\x00\x00a\nb\r\nc' >"$corpus/cli_input/lines"
printf '\x06\x01\x00k1,v1\nk2,v2,x\nnofield\n' >"$corpus/cli_input/fields"
printf '\x01\x00\x00616263\n0a0b\n\n' >"$corpus/cli_input/hex"
printf '\x00\x00\x01one\ntwo\n' >"$corpus/cli_input/gzip-wrapped"
printf '\x00\x00\x02one\ntwo\n' >"$corpus/cli_input/zstd-wrapped"
printf '10M' >"$corpus/cli_input/count"
printf '512MiB' >"$corpus/cli_input/bytes"
# parquet_filter_header: a Thrift header of a 128-byte bitset (then a few bitset bytes), and
# the same header with an unknown field
printf '\x15\x80\x02\x1c\x1c\x00\x00\x1c\x1c\x00\x00\x1c\x1c\x00\x00\x00\x01\x02\x03' \
  >"$corpus/parquet_filter_header/h128"
printf '\x15\x80\x01\x1c\x1c\x00\x00\x1c\x1c\x00\x00\x1c\x1c\x00\x00\x15\x02\x00' \
  >"$corpus/parquet_filter_header/h64-unknown"
# parquet_footer: the Thrift FileMetaData of a file of the benchmark lake (arrow-rs writer, four
# row groups, a bloom filter per column chunk), and forged footers once found here (a schema
# field whose Thrift type is not the format's)
cp fuzz/seeds/parquet_footer/* "$corpus/parquet_footer/"
# parquet_scan: whole Parquet files of a few row groups (arrow-rs writer, `parquet_lake seeds`
# of benches/src/bin/parquet_lake.rs): one with a 4 KiB filter on `id` (a scan reads single
# blocks of it for one key, and a prune doubles its reads for many), one with three row groups
# of 256-byte filters, one without filters (a sidecar is then planted beside it)
cp fuzz/seeds/parquet_scan/* "$corpus/parquet_scan/"
# parquet_index: the same whole files, for the sidecar build and the rewrite of `parquet index`
cp fuzz/seeds/parquet_scan/* "$corpus/parquet_index/"
# compress_encoder: m (two bytes) then bits: sparse, half full, dense
printf '\xff\x0f\x01\x00\x00\x00\x00\x00\x00\x80\x00\x00\x00\x00\x00\x00\x00\x00\x10' \
  >"$corpus/compress_encoder/sparse"
printf '\x00\x02\x5a\xa5\x3c\xc3\x96\x69\x0f\xf0\x12\xed\x34\xcb\x56\xa9\x78\x87' \
  >"$corpus/compress_encoder/half"
printf '\x40\x00\xff\xff\xff\xfe\xff\xff\xff\xff\xff\xff\xef\xff\xff\xff\xff\xff' \
  >"$corpus/compress_encoder/dense"
# redisbloom_chunks: the SCANDUMP chunk files captured from RedisBloom 2.6
cp crates/bloomery/tests/fixtures/redisbloom/*.rbchunks "$corpus/redisbloom_chunks/"
if command -v gzip >/dev/null; then
  { printf '\x00\x00\x00'; printf 'x\ny\n' | gzip -c; } >"$corpus/cli_input/gzip-raw"
fi
if command -v zstd >/dev/null; then
  { printf '\x00\x00\x00'; printf 'x\ny\n' | zstd -q -c; } >"$corpus/cli_input/zstd-raw"
fi

cd fuzz
# (the fuzz targets' lints: the clippy step of .ci/run)
profile=()
if [ -n "${FUZZ_DEV:-}" ]; then
  profile=(--dev)
  echo "== build (unoptimised, address sanitizer)"
else
  echo "== build (release, debug assertions, address sanitizer)"
fi
cargo +nightly fuzz build "${profile[@]}"

# inputs up to 4 KiB, but whole Parquet files: their seeds are up to 5 KiB, and a filter must
# be 4 KiB for a scan to read it one block at a time
max_len() {
  case $1 in
    parquet_scan | parquet_index) echo 8192 ;;
    *) echo 4096 ;;
  esac
}

# libFuzzer's random seed, printed so that a failing run can be repeated (FUZZ_SEED=N)
seed=${FUZZ_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "== libFuzzer seed $seed"
status=0
for t in $targets; do
  echo "== $t: ${seconds}s"
  log=$(mktemp)
  if cargo +nightly fuzz run "${profile[@]}" "$t" "corpus/$t" -- \
      -seed="$seed" -max_total_time="$seconds" -max_len="$(max_len "$t")" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    echo "ok   $t: ${execs:-?} executions, ${cov:-?} edges covered, no crash"
  else
    status=1
    tail -40 "$log"
    echo "FAIL $t (seed $seed): see the log above and fuzz/artifacts/$t/"
  fi
  rm -f "$log"
done
cd "$root"
exit $status
