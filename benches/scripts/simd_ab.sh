#!/usr/bin/env bash
# The blocked counting filter's AVX2 path against its portable path, and both against the
# classic filter at the same k: `line_probe lib N ROUNDS`, alternating the two paths
# (BLOOMERY_NO_SIMD=1 is the portable one) PAIRS times per size, each run printing the
# dependent-load latency at both filters' sizes before and after.
# Usage: [P=rate] benches/scripts/simd_ab.sh [PAIRS] [SIZES...]
#   (default 3 pairs; 20000 1000000 10000000; P = 0.01, so k = 7; P=0.001 gives k = 10)
set -euo pipefail
cd "$(dirname "$0")/../.."
pairs=${1:-3}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(20000 1000000 10000000)
cargo build --release -q -p bloomery-benches --bin line_probe
bin=target/release/line_probe
run() { if command -v chrt >/dev/null && chrt -f 50 true 2>/dev/null; then chrt -f 50 "$@"; else "$@"; fi; }
for n in "${sizes[@]}"; do
  rounds=20
  [ "$n" -ge 1000000 ] && rounds=5
  [ "$n" -ge 10000000 ] && rounds=3
  for _ in $(seq "$pairs"); do
    run "$bin" lib "$n" "$rounds" "${P:-0.01}" | sed -n '1p;$p' | paste -sd' ' -
    BLOOMERY_NO_SIMD=1 run "$bin" lib "$n" "$rounds" "${P:-0.01}" | sed -n '1p;$p' | paste -sd' ' -
  done
done
