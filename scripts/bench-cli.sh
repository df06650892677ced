#!/usr/bin/env bash
# CLI benchmarks of issue 3, all measured in one run on this machine:
#   1. `bloomery dedup` of the 2.76M repository URLs of npm `all-the-package-repos`
#      (`scripts/fetch-data.sh npm` -> target/data/npm-urls.txt, not committed) against
#      `awk '!seen[$0]++'`: wall time and peak memory (/usr/bin/time -v), best of RUNS runs;
#   2. `bloomery add` of 10M generated 32-byte lines with --threads 1 and --threads 2.
# Prints a markdown section for docs/BENCHMARKS.md ("## CLI"). Needs node/npm (first run) and
# GNU time. Usage: [RUNS=5] bash scripts/bench-cli.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${RUNS:-3}"
cargo build --release -p bloomery-cli >&2
B="$PWD/target/release/bloomery"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT

bash scripts/fetch-data.sh npm >&2
D="${BLOOMERY_DATA:-target/data}"
URLS="$D/npm-urls.txt"
VERSION=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' \
  "$D/npm/node_modules/all-the-package-repos/package.json" | head -n1)
LINES=$(wc -l < "$URLS")
DISTINCT=$(LC_ALL=C sort -u "$URLS" | wc -l)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

# run CMD... RUNS times; sets BEST (wall seconds), CPU (user+sys seconds) and RSS (peak KB)
# of the fastest run
measure() {
  BEST=""
  RSS=""
  CPU=""
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -v "$@" > "$W/out.txt" 2> "$W/time.txt" || true
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

measure awk '!seen[$0]++' "$URLS"
AWK_T=$BEST; AWK_M=$RSS; AWK_N=$(wc -l < "$W/out.txt")
measure "$B" dedup -q "$URLS"
DEF_T=$BEST; DEF_M=$RSS; DEF_N=$(wc -l < "$W/out.txt")
measure "$B" dedup -q --kind blocked -n 2M -p 1e-4 "$URLS"
SIZ_T=$BEST; SIZ_M=$RSS; SIZ_N=$(wc -l < "$W/out.txt")
measure "$B" dedup -q --kind blocked -n 10M -p 1e-4 "$URLS"
OLD_T=$BEST; OLD_M=$RSS; OLD_N=$(wc -l < "$W/out.txt")

echo "generating 10M 32-byte lines ..." >&2
awk 'BEGIN { for (i = 0; i < 10000000; i++) printf "%031d\n", i }' > "$W/lines32.txt"
add_run() {
  "$B" create -q --force "$W/add.bloom" -n 10M -p 0.01
  "$B" add -q --threads "$1" "$W/add.bloom" "$W/lines32.txt"
}
export -f add_run
export B W
measure bash -c "add_run 1"
T1=$BEST; C1=$CPU
measure bash -c "add_run 2"
T2=$BEST; C2=$CPU
# the create alone, to subtract
measure "$B" create -q --force "$W/c.bloom" -n 10M -p 0.01
TC=$BEST

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
rate() { awk -v n="$1" -v t="$2" -v c="$3" 'BEGIN { printf "%.1f", n / (t - c) / 1e6 }'; }

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

**add** of 10M 32-byte lines (\`create -n 10M -p 0.01\` then \`add --threads N\`, blocked
filter; the create alone takes ${TC} s and is subtracted for the rate):

| threads | wall (s) | CPU (s) | lines/s (wall) | lines per CPU-second | speed-up (wall) |
|---:|---:|---:|---:|---:|---:|
| 1 | $T1 | $C1 | $(rate 10000000 "$T1" "$TC")M | $(rate 10000000 "$C1" 0)M | 1.0x |
| 2 | $T2 | $C2 | $(rate 10000000 "$T2" "$TC")M | $(rate 10000000 "$C2" 0)M | $(awk -v a="$T1" -v b="$T2" -v c="$TC" 'BEGIN{printf "%.2f", (a-c)/(b-c)}')x |
MD
