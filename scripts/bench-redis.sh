#!/usr/bin/env bash
# Redis module benchmarks, all measured in one run on one server:
#   1. throughput (requests/s) of BF.ADD, BF.EXISTS, CF.ADD, CMS.INCRBY and plain SET/GET with
#      `redis-benchmark -P 16 -c 50 -n N` on random keys (`key:__rand_int__`, -r 1000000);
#      the commands run in ROUNDS round-robin rounds (so background load hits them alike) and
#      the median of each is compared with GET's;
#   2. MEMORY USAGE of a BF.RESERVE'd non-scaling filter (capacity 1M at 1%, filled with 1M
#      distinct items) per item, against the lower bound n·log2(1/ε) bits and the classic
#      filter's optimal size (both from bloomery::params, via the bf_bound example).
# Prints a markdown section for docs/BENCHMARKS.md ("## Redis module").
# Needs redis-server, redis-cli and redis-benchmark (Debian's redis-server, redis-tools).
# Usage: bash scripts/bench-redis.sh        (N=500000 ROUNDS=3 by default)
set -euo pipefail
cd "$(dirname "$0")/.."

N="${N:-500000}"
ROUNDS="${ROUNDS:-3}"
FILL="${FILL:-1000000}"
ERR="${ERR:-0.01}"

cargo build --release -p bloomery-redis --lib --example bf_bound >&2
MODULE="$PWD/target/release/libbloomery_redis.so"
BOUND="$PWD/target/release/examples/bf_bound"
W="$(mktemp -d)"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --dir "$W" --save "" --appendonly no \
  --loadmodule "$MODULE" > "$W/redis.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null; rm -rf "$W"' EXIT
cli() { redis-cli -p "$PORT" "$@"; }
for _ in $(seq 300); do
  cli PING > /dev/null 2>&1 && break
  sleep 0.1
done
cli PING > /dev/null

# Sized so that no filter grows or fills during the run.
cli BF.RESERVE bf 0.01 $((2 * N)) NONSCALING > /dev/null
cli CF.RESERVE cf $((4 * N)) > /dev/null
cli CMS.INITBYPROB cms 0.001 0.01 > /dev/null

declare -A CMD=(
  [GET]="GET key:__rand_int__"
  [SET]="SET key:__rand_int__ value"
  [BF.ADD]="BF.ADD bf key:__rand_int__"
  [BF.EXISTS]="BF.EXISTS bf key:__rand_int__"
  [CF.ADD]="CF.ADD cf key:__rand_int__"
  [CMS.INCRBY]="CMS.INCRBY cms key:__rand_int__ 1"
)
ORDER=(SET GET BF.ADD BF.EXISTS CF.ADD CMS.INCRBY)
declare -A RPS
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$ROUNDS"); do
  for name in "${ORDER[@]}"; do
    # shellcheck disable=SC2086
    rps=$(redis-benchmark -p "$PORT" -P 16 -c 50 -n "$N" -r 1000000 --csv ${CMD[$name]} \
      | awk -F'","' 'NR == 2 { print $2 }')
    RPS[$name]="${RPS[$name]:-} $rps"
    echo "round $r: $name $rps" >&2
  done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
declare -A MED
for name in "${ORDER[@]}"; do
  MED[$name]=$(echo "${RPS[$name]}" | median)
done
GET_RPS=${MED[GET]}

# Memory: a reserved, non-scaling BF filled with FILL distinct items (RESP piped in bulk).
cli BF.RESERVE mem "$ERR" "$FILL" NONSCALING > /dev/null
awk -v n="$FILL" 'BEGIN {
  for (i = 0; i < n; i++) {
    item = "item:" i
    printf "*3\r\n$6\r\nBF.ADD\r\n$3\r\nmem\r\n$%d\r\n%s\r\n", length(item), item
  }
}' | cli --pipe > "$W/pipe.txt"
ITEMS=$(cli BF.CARD mem)
USAGE=$(cli MEMORY USAGE mem)
SIZE=$(cli BF.INFO mem SIZE | tail -n 1)
read -r LB_BITS CLASSIC_BITS CLASSIC_K < <("$BOUND" "$FILL" "$ERR")
FP=$(for i in $(seq 0 9999); do echo "BF.EXISTS mem absent:$i"; done | cli | grep -c '^1$' || true)

CPU=$(lscpu | awk -F': +' '/^Model name/ { print $2; exit }')
CORES=$(nproc)
MEMTOTAL=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
REDIS_VERSION=$(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')

echo "## Redis module"
echo
echo "\`bash scripts/bench-redis.sh\` (N=$N, ROUNDS=$ROUNDS) on $(date -u +%Y-%m-%d): $CPU, $CORES"
echo "cores, $MEMTOTAL, Redis $REDIS_VERSION, module built with \`cargo build --release\`. One"
echo "server, \`redis-benchmark -P 16 -c 50 -n $N -r 1000000\` on \`key:__rand_int__\` per command,"
echo "$ROUNDS round-robin rounds, median shown. Load average $LOAD_BEFORE before, $LOAD_AFTER after"
echo "(the machine is shared; redis-benchmark and the server compete for the same cores)."
echo
echo "| command | requests/s (median) | rounds | vs GET |"
echo "|---|---:|---|---:|"
for name in "${ORDER[@]}"; do
  ratio=$(awk -v a="${MED[$name]}" -v b="$GET_RPS" 'BEGIN { printf "%.2f", a / b }')
  rounds=$(echo "${RPS[$name]}" | awk '{ for (i = 1; i <= NF; i++) printf "%s%.0f", (i > 1 ? ", " : ""), $i }')
  printf '| `%s` | %.0f | %s | %s× |\n' "${CMD[$name]}" "${MED[$name]}" "$rounds" "$ratio"
done
echo
echo "Memory of \`BF.RESERVE mem $ERR $FILL NONSCALING\` after \`BF.ADD\` of $FILL distinct items"
echo "(\`BF.CARD\` $ITEMS: adds that found every bit set are not counted); n = $FILL below:"
echo
awk -v u="$USAGE" -v s="$SIZE" -v n="$FILL" -v lb="$LB_BITS" -v cb="$CLASSIC_BITS" -v ck="$CLASSIC_K" \
  -v fp="$FP" 'BEGIN {
  printf "| measure | bytes | bits per item | vs lower bound |\n|---|---:|---:|---:|\n"
  printf "| lower bound n·log2(1/ε) | %.0f | %.2f | 1.00× |\n", lb / 8, lb / n, 1
  printf "| classic filter, optimal k = %d | %.0f | %.2f | %.2f× |\n", ck, cb / 8, cb / n, cb / lb
  printf "| `BF.INFO SIZE` | %d | %.2f | %.2f× |\n", s, s * 8 / n, s * 8 / lb
  printf "| `MEMORY USAGE` | %d | %.2f | %.2f× |\n", u, u * 8 / n, u * 8 / lb
  printf "\nFalse positives among 10,000 absent items: %d (%.2f%%).\n", fp, fp / 100
}'
