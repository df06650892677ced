#!/usr/bin/env bash
# Instructions per request of BF.ADD and BF.EXISTS on bloomery's module and on RedisBloom,
# counted by callgrind inside redis-server: exact and independent of the machine's load, where
# throughput on a shared machine moves by ±25% (scripts/compare-redisbloom.py measures that).
#
# For each module and command: a server under `valgrind --tool=callgrind` with instrumentation
# off, `BF.RESERVE bf 0.01 600000` and 200,000 `BF.ADD`s of random items, 5,000 requests of the
# command as warm-up, then instrumentation on for N requests (`redis-benchmark -P 16 -c 1`,
# random items below 1,000,000). Prints, per request, the instructions of Redis's `call()` (the
# command with its dispatch, key lookup and reply: what the module changes), of the whole
# server (also parsing and networking), and of the whole server less `serverCron`. The cron
# runs on the clock (its memory-statistics refresh ten times a second, ~116,000 instructions
# each with Debian's jemalloc), not per request: under valgrind it adds a share to each request
# that depends on how fast the machine runs that minute (65 to 262 instructions in the runs of
# docs/BENCHMARKS.md), so only the last column compares runs and modules.
#
# Usage: REDISBLOOM=/path/to/redisbloom.so bash benches/scripts/redis-instructions.sh
# Environment: N (requests counted, default 50000), MODULE (bloomery's module; default: a
# release build made here), SERVER (default redis-server), COMMANDS (default "BF.ADD
# BF.EXISTS"), KEEP (a directory to keep the profiles in, `<module>-<command>.1`, for
# `callgrind_annotate` per function). Other commands: SETUP (the command that makes the key,
# default `BF.RESERVE bf 0.01 600000`), FILL (sent 200,000 times first, default `BF.ADD bf
# key:__rand_int__`), ARGS (each command's arguments, default `bf key:__rand_int__`); and
# OTHER_NAME to call the second module something else than RedisBloom (e.g. bloomery's module
# of an older commit, to compare two builds). Needs valgrind, redis-server, redis-cli,
# redis-benchmark.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-50000}
: "${REDISBLOOM:?set REDISBLOOM to a RedisBloom module (.so) built from its source}"
if [ -z "${MODULE:-}" ]; then
  cargo build --release -p bloomery-redis --lib >&2
  MODULE="${CARGO_TARGET_DIR:-$PWD/target}/release/libbloomery_redis.so"
fi
SERVER=${SERVER:-redis-server}
COMMANDS=${COMMANDS:-BF.ADD BF.EXISTS}
SETUP=${SETUP:-BF.RESERVE bf 0.01 600000}
FILL=${FILL:-BF.ADD bf key:__rand_int__}
ARGS=${ARGS:-bf key:__rand_int__}
OTHER_NAME=${OTHER_NAME:-RedisBloom}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP"
  KEEP=$(cd "$KEEP" && pwd)
fi

# measure MODULE OUT COMMAND...: the callgrind profile of N requests of COMMAND in OUT.1
measure() {
  local mod=$1 out=$2
  shift 2
  local port
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" \
    "$SERVER" --port "$port" --bind 127.0.0.1 --dir "$W" --save "" --appendonly no \
    --loadmodule "$mod" > "$out.log" 2>&1 &
  local pid=$!
  for _ in $(seq 200); do
    redis-cli -p "$port" PING > /dev/null 2>&1 && break
    sleep 0.5
  done
  # shellcheck disable=SC2086 # SETUP and FILL are command lines, split into words
  redis-cli -p "$port" $SETUP > /dev/null
  # shellcheck disable=SC2086
  redis-benchmark -p "$port" -P 16 -c 1 -n 200000 -r 1000000 -q $FILL > /dev/null
  redis-benchmark -p "$port" -P 16 -c 1 -n 5000 -r 1000000 -q "$@" > /dev/null
  callgrind_control -i on "$pid" > /dev/null 2>&1
  redis-benchmark -p "$port" -P 16 -c 1 -n "$N" -r 1000000 -q "$@" > /dev/null
  callgrind_control -i off "$pid" > /dev/null 2>&1
  callgrind_control -d "$pid" > /dev/null 2>&1
  redis-cli -p "$port" SHUTDOWN NOSAVE > /dev/null 2>&1 || true
  wait "$pid" || true
}

# per_request FILE PATTERN: instructions per request of the function matching PATTERN
# (inclusive), or of the whole profile for PATTERN "total"
per_request() {
  local ir
  if [ "$2" = total ]; then
    ir=$(callgrind_annotate "$1" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }')
  else
    ir=$(callgrind_annotate --inclusive=yes --threshold=100 "$1" | awk -v f="$2" '$0 ~ f { gsub(",", "", $1); print $1; exit }')
  fi
  python3 -c "print(round(${ir:-0} / $N))"
}

echo "| command | module | \`call()\` per request | whole server per request | less \`serverCron\` |"
echo "|---|---|---:|---:|---:|"
for cmd in $COMMANDS; do
  for m in bloomery "$OTHER_NAME"; do
    mod=$MODULE
    [ "$m" = "$OTHER_NAME" ] && mod=$REDISBLOOM
    out="$W/$m-$cmd"
    # shellcheck disable=SC2086 # ARGS is the command's arguments, split into words
    measure "$mod" "$out" "$cmd" $ARGS
    whole=$(per_request "$out.1" total)
    cron=$(per_request "$out.1" '\?\?\?:serverCron ')
    echo "| \`$cmd\` | $m | $(per_request "$out.1" '\?\?\?:call ') | $whole | $((whole - cron)) |"
    if [ -n "${KEEP:-}" ]; then
      cp "$out.1" "$KEEP/$m-$cmd.1"
    fi
  done
done
