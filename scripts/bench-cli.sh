#!/usr/bin/env bash
# CLI benchmarks, all measured in one run on this machine:
#   1. `bloomery dedup` of the 2.76M repository URLs of npm `all-the-package-repos`
#      (`scripts/fetch-data.sh npm` -> target/data/npm-urls.txt, not committed) against
#      `awk '!seen[$0]++'`: wall time and peak memory (/usr/bin/time -v), best of RUNS runs;
#   2. `bloomery add` of 10M generated 32-byte lines with --threads 1 and --threads 2.
# Prints a markdown section for docs/BENCHMARKS.md ("## CLI"). Needs node/npm (first run) and
# GNU time. Usage: [RUNS=5] bash scripts/bench-cli.sh
#        [RUNS=9] bash scripts/bench-cli.sh add    # only the `add --threads` part (no download)
# On a machine shared with other work, PRIO="chrt -f 50" (root) runs every timed command at
# real-time priority, so compiles and tests of others do not take its cores mid-run (the
# kernel still keeps 5% of each core for them; other guests of the host are not affected).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${RUNS:-3}"
cargo build --release -p bloomery-cli >&2
B="$PWD/target/release/bloomery"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT

# run CMD... RUNS times; sets BEST (wall seconds), CPU (user+sys seconds) and RSS (peak KB)
# of the fastest run
measure() {
  BEST=""
  RSS=""
  CPU=""
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -v ${PRIO:-} "$@" > "$W/out.txt" 2> "$W/time.txt" || true
    local wall rss
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0;
      for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$W/time.txt")
    rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$W/time.txt")
    cpu=$(awk -F': ' '/(User|System) time \(seconds\)/ { s += $2 } END { print s }' "$W/time.txt")
    if [ -z "$BEST" ] || awk -v a="$wall" -v b="$BEST" 'BEGIN { exit !(a < b) }'; then
      BEST=$wall
      RSS=$rss
      CPU=$cpu
    fi
  done
}


# `add` of 10M 32-byte lines, --threads 1 and 2, RUNS interleaved runs each: a fresh
# `create -n 10M -p 0.01` before every run (not timed), then `/usr/bin/time -v add`; best wall
# time, and the CPU (user + sys) of that run. Also the fixed cost: the same add of one line.
# Sets T1 C1 T2 C2 TF (seconds) and ADD_LOADS (load averages seen before the runs).
add_bench() {
  if [ ! -s "$W/lines32.txt" ]; then
    echo "generating 10M 32-byte lines ..." >&2
    awk 'BEGIN { for (i = 0; i < 10000000; i++) printf "%031d\n", i }' > "$W/lines32.txt"
  fi
  printf 'x\n' > "$W/one.txt"
  cat "$W/lines32.txt" > /dev/null   # in the page cache, as for every later run
  T1="" T2="" TF="" ADD_LOADS=""
  one_add() { # threads input -> WALL CPU
    "$B" create -q --force "$W/add.bloom" -n 10M -p 0.01
    /usr/bin/time -v ${PRIO:-} "$B" add -q --threads "$1" "$W/add.bloom" "$2" 2> "$W/time.txt"
    WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0;
      for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$W/time.txt")
    CPU=$(awk -F': ' '/(User|System) time \(seconds\)/ { s += $2 } END { print s }' "$W/time.txt")
  }
  better() { [ -z "$1" ] || awk -v a="$2" -v b="$1" 'BEGIN { exit !(a < b) }'; }
  ALL1="" ALL2="" PAIRS=""
  for _ in $(seq "$RUNS"); do
    ADD_LOADS="$ADD_LOADS $(cut -d' ' -f1 /proc/loadavg)"
    one_add 1 "$W/lines32.txt"
    ALL1="$ALL1 $WALL"
    local w1=$WALL
    if better "$T1" "$WALL"; then T1=$WALL; C1=$CPU; fi
    one_add 2 "$W/lines32.txt"
    ALL2="$ALL2 $WALL"
    PAIRS="$PAIRS $(awk -v a="$w1" -v b="$WALL" 'BEGIN{printf "%.2f", a / b}')"
    if better "$T2" "$WALL"; then T2=$WALL; C2=$CPU; fi
    one_add 1 "$W/one.txt"
    if better "$TF" "$WALL"; then TF=$WALL; fi
  done
}

# the median of the numbers in $1
median() { echo $1 | tr ' ' '\n' | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

add_table() {
  local m1 m2
  m1=$(median "$ALL1")
  m2=$(median "$ALL2")
  local mp
  mp=$(median "$PAIRS")
  cat <<MD
**add** of 10M 32-byte lines (\`create -q --force F -n 10M -p 0.01\` before each run, not
timed; then \`/usr/bin/time -v ${PRIO:+$PRIO }bloomery add -q --threads T F lines.txt\`, lines
\`printf "%031d\\n"\`), $RUNS interleaved runs each, load average before each pair:$ADD_LOADS.
The same add of a one-line input (load, save with fsync: the fixed cost) took $TF s.
Speed-up of each pair (1-thread wall / 2-thread wall of the run right after it), in run order:$PAIRS;
**median of the pairs: ${mp}x** (pairs share the machine's state, so this is the steadiest figure
on a shared host).

| threads | best wall (s) | CPU of that run (s) | lines/s (wall) | speed-up (best wall) | median wall (s) | speed-up (median) |
|---:|---:|---:|---:|---:|---:|---:|
| 1 | $T1 | $C1 | $(awk -v t="$T1" 'BEGIN{printf "%.1f", 10 / t}')M | 1.00x | $m1 | 1.00x |
| 2 | $T2 | $C2 | $(awk -v t="$T2" 'BEGIN{printf "%.1f", 10 / t}')M | $(awk -v a="$T1" -v b="$T2" 'BEGIN{printf "%.2f", a / b}')x | $m2 | $(awk -v a="$m1" -v b="$m2" 'BEGIN{printf "%.2f", a / b}')x |
MD
}

if [ "${1:-}" = add ]; then
  LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
  add_bench
  echo "machine: $(lscpu | awk -F': +' '/^Model name/ { print $2; exit }'), $(nproc) cores;" \
    "$(date -u '+%Y-%m-%d %H:%M UTC'); load average at the start: $LOAD0, at the end:" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  add_table
  exit 0
fi

bash scripts/fetch-data.sh npm >&2
D="${BLOOMERY_DATA:-target/data}"
URLS="$D/npm-urls.txt"
VERSION=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' \
  "$D/npm/node_modules/all-the-package-repos/package.json" | head -n1)
LINES=$(wc -l < "$URLS")
DISTINCT=$(LC_ALL=C sort -u "$URLS" | wc -l)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

measure awk '!seen[$0]++' "$URLS"
AWK_T=$BEST; AWK_M=$RSS; AWK_N=$(wc -l < "$W/out.txt")
measure "$B" dedup -q "$URLS"
DEF_T=$BEST; DEF_M=$RSS; DEF_N=$(wc -l < "$W/out.txt")
measure "$B" dedup -q --kind blocked -n 2M -p 1e-4 "$URLS"
SIZ_T=$BEST; SIZ_M=$RSS; SIZ_N=$(wc -l < "$W/out.txt")
measure "$B" dedup -q --kind blocked -n 10M -p 1e-4 "$URLS"
OLD_T=$BEST; OLD_M=$RSS; OLD_N=$(wc -l < "$W/out.txt")

add_bench

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }

MODEL=$(lscpu | awk -F': +' '/^Model name/ { print $2; exit }')
CORES=$(nproc)
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
cat <<MD

## CLI

Measured by \`bash scripts/bench-cli.sh\` on $(date -u +%Y-%m-%d) — $MODEL, $CORES cores
(shared with other jobs; load average at the start of the run: $LOAD0, at the end: $LOAD — wall
times vary by up to 2x between runs, so compare within one run), best of $RUNS runs, wall time,
CPU time and peak RSS from \`/usr/bin/time -v\`.

**dedup** of all-the-package-repos $VERSION: $LINES repository URLs, $DISTINCT distinct.

| command | lines out | wall (s) | peak RSS (MB) | speed vs awk | memory vs awk |
|---|---:|---:|---:|---:|---:|
| \`awk '!seen[\$0]++'\` | $AWK_N | $AWK_T | $(awk -v m="$AWK_M" 'BEGIN{printf "%.1f", m/1024}') | 1.0x | 1.00 |
| \`bloomery dedup\` (defaults: --kind scalable -n 1M -p 1e-4) | $DEF_N | $DEF_T | $(awk -v m="$DEF_M" 'BEGIN{printf "%.1f", m/1024}') | $(ratio "$AWK_T" "$DEF_T")x | $(awk -v a="$DEF_M" -v b="$AWK_M" 'BEGIN{printf "%.2f", a/b}') |
| \`bloomery dedup --kind blocked -n 2M -p 1e-4\` | $SIZ_N | $SIZ_T | $(awk -v m="$SIZ_M" 'BEGIN{printf "%.1f", m/1024}') | $(ratio "$AWK_T" "$SIZ_T")x | $(awk -v a="$SIZ_M" -v b="$AWK_M" 'BEGIN{printf "%.2f", a/b}') |
| \`bloomery dedup --kind blocked -n 10M -p 1e-4\` (old default) | $OLD_N | $OLD_T | $(awk -v m="$OLD_M" 'BEGIN{printf "%.1f", m/1024}') | $(ratio "$AWK_T" "$OLD_T")x | $(awk -v a="$OLD_M" -v b="$AWK_M" 'BEGIN{printf "%.2f", a/b}') |

$(add_table)
MD
