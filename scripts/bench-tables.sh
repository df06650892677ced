#!/usr/bin/env bash
# Runs the benchmark commands behind the tables of docs/BENCHMARKS.md, one section per area,
# so the tables can be regenerated. Each section prints a header (date, commit, CPU, load)
# and then what its scripts and binaries print; copy the numbers into the document's table.
#
#   bash scripts/bench-tables.sh --list                  # sections and the commands they run
#   bash scripts/bench-tables.sh [SECTION...]            # the full runs (default: every section)
#   bash scripts/bench-tables.sh --quick [SECTION...]    # tiny sizes: checks that they run
#   bash scripts/bench-tables.sh --quick --list          # the commands of the quick runs
#
# Sections: library counting cli compression redis redisbloom python parquet bigfiles
# structured rates windows. The full runs take minutes to hours each (library at 100M needs ~3 GB of
# RAM; python, parquet and redisbloom install packages into venvs under target/; cli and
# structured need `scripts/fetch-data.sh npm`; redis needs redis-server and redis-tools;
# redisbloom needs REDISBLOOM=/path/to/redisbloom.so). On a shared machine, compare only
# numbers of the same run (docs/BENCHMARKS.md, "Machines"). A section that cannot run here
# (a missing tool or file) says why and the others go on; the exit status is 1 if any failed.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL=(library counting cli compression redis redisbloom python parquet bigfiles structured rates windows)
QUICK=0
LIST=0
WANT=()
for a in "$@"; do
  case "$a" in
    --quick) QUICK=1 ;;
    --list) LIST=1 ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    -*)
      echo "bench-tables.sh: unknown option $a (try --help)" >&2
      exit 2
      ;;
    *)
      if [[ " ${ALL[*]} " != *" $a "* ]]; then
        echo "bench-tables.sh: unknown section '$a'; sections: ${ALL[*]}" >&2
        exit 2
      fi
      WANT+=("$a")
      ;;
  esac
done
[ ${#WANT[@]} -gt 0 ] || WANT=("${ALL[@]}")

BENCH="cargo run --release -q -p bloomery-benches --bin"
REL=target/release
# real-time priority keeps other jobs off the cores during a timed run, where allowed (root)
if command -v chrt > /dev/null && chrt -f 50 true 2> /dev/null; then PRIO="chrt -f 50 "; else PRIO=""; fi

# Sections run in a subshell each: run and need end it with `exit`.
# run CMD: prints it (--list) or prints and runs it; a failing command ends its section
run() {
  if [ "$LIST" = 1 ]; then
    printf '    %s\n' "$*"
    return 0
  fi
  printf '+ %s\n' "$*" >&2
  local rc=0
  eval "$*" || rc=$?
  if [ "$rc" != 0 ]; then
    echo "failed (status $rc): $*" >&2
    exit $((rc == 3 ? 1 : rc))
  fi
}

# need WHAT TEST...: ends the section as skipped (status 3) when TEST fails
need() {
  local what=$1
  shift
  [ "$LIST" = 1 ] && return 0
  if ! "$@" > /dev/null 2>&1; then
    echo "skipped: needs $what" >&2
    exit 3
  fi
}

# instructions per key of one `ops` structure (queries: the hit/miss run minus the fill run)
ops_instructions() {
  local s=$1 n=$2 out fill hit miss
  out=$(mktemp -d)
  for op in fill hit miss; do
    valgrind --tool=callgrind --callgrind-out-file="$out/$op" "$REL/ops" "$s" "$op" "$n" \
      2> "$out/$op.log"
  done
  fill=$(awk '/Collected :/ { print $4 }' "$out/fill.log")
  hit=$(awk '/Collected :/ { print $4 }' "$out/hit.log")
  miss=$(awk '/Collected :/ { print $4 }' "$out/miss.log")
  awk -v s="$s" -v n="$n" -v f="$fill" -v h="$hit" -v m="$miss" 'BEGIN {
    printf "%s: fill run %d instructions; per query: present %.0f, absent %.0f\n", s, f, (h - f) / n, (m - f) / n }'
  rm -rf "$out"
}

section_library() {
  if [ "$QUICK" = 1 ]; then
    run "$BENCH quick -- 100000 0.01 1"
    run "BLOOMERY_BENCH_N=100000 $BENCH bits_table"
    run "cargo run --release -q -p bloomery --example window_check -- speed 10000 0.01 1"
    run "cargo run --release -q -p bloomery --example window_check -- rates 10000 0.01"
    return
  fi
  run "cargo run --release -q -p bloomery --example window_check -- speed 1000000 0.01 5"
  run "cargo run --release -q -p bloomery --example window_check -- rates 1000000,10000000 0.01"
  run "$BENCH quick -- 1000000 0.01 7"
  run "$BENCH quick -- 10000000 0.01 5"
  run "$BENCH quick -- 10000000 0.001 3"
  run "$BENCH quick -- 100000000 0.01 2"
  run "$BENCH bits_table"
  run "$BENCH sizing"
  need valgrind command -v valgrind
  run "cargo build --release -q -p bloomery-benches --bin ops"
  run "for s in blocked sbbf classic fastbloom; do ops_instructions \$s 100000; done"
}

section_counting() {
  if [ "$QUICK" = 1 ]; then
    run "$BENCH counting_quick -- 20000 2"
    run "BLOOMERY_BENCH_N=20000 $BENCH counting_bits"
    return
  fi
  run "cargo build --release -q -p bloomery-benches --bin counting_quick --bin line_probe"
  run "for i in 1 2 3; do ${PRIO}$REL/counting_quick 1000000 10; done"
  run "${PRIO}$REL/counting_quick 10000000 3"
  run "${PRIO}$REL/counting_quick 20000 30"
  run "BLOOMERY_BENCH_N=1M,10M ${PRIO}cargo bench -q -p bloomery-benches --bench counting"
  run "python3 benches/scripts/counting_table.py target/criterion"
  run "BLOOMERY_BENCH_N=1M $BENCH counting_bits"
  run "for p in 0.01 0.001; do ${PRIO}$REL/line_probe lib 10000000 3 \$p; ${PRIO}$REL/line_probe lib 20000 30 \$p; done"
  need valgrind command -v valgrind
  # instructions per key, the run-time choice (AVX2 where available) and the portable paths
  run "for p in 0.01 0.001; do for path in default portable; do env \$( [ \$path = portable ] && echo BLOOMERY_NO_SIMD=1 ) valgrind --tool=cachegrind --cache-sim=no --demangle=no --cachegrind-out-file=target/cg-\$p-\$path.out $REL/line_probe lib 100000 1 \$p > /dev/null 2>&1; echo \"rate \$p, \$path paths:\"; python3 benches/scripts/cg_per_key.py target/cg-\$p-\$path.out 100000; done; done"
}

section_cli() {
  if [ "$QUICK" = 1 ]; then
    run "cargo build --release -q -p bloomery-cli"
    run "KINDS=counting bash benches/scripts/cli_counting_ab.sh $REL/bloomery $REL/bloomery 10000 1"
    return
  fi
  need "GNU time (/usr/bin/time)" test -x /usr/bin/time 
  run "RUNS=3 bash scripts/bench-cli.sh"
  run "RUNS=25 PRIO='$PRIO' bash scripts/bench-cli.sh add"
  run "cargo build --release -q -p bloomery-cli"
  run "KINDS='counting blocked-counting cms dlcbf spectral' bash benches/scripts/cli_counting_ab.sh $REL/bloomery $REL/bloomery 1000000 2"
}

section_compression() {
  if [ "$QUICK" = 1 ]; then
    # criterion's --test runs every benchmark once without measuring; the size table is printed
    run "cargo bench -q -p bloomery-benches --bench compress -- --test"
    return
  fi
  run "cargo bench -q -p bloomery-benches --bench compress"
}

section_redis() {
  need "redis-server and redis-benchmark (Debian: redis-server, redis-tools)" \
    command -v redis-server redis-benchmark 
  if [ "$QUICK" = 1 ]; then
    run "N=10000 ROUNDS=1 FILL=10000 bash scripts/bench-redis.sh"
    return
  fi
  run "N=500000 ROUNDS=5 bash scripts/bench-redis.sh"
}

section_redisbloom() {
  need "REDISBLOOM=/path/to/redisbloom.so" test -f "${REDISBLOOM:-/nonexistent}" 
  need "redis-server" command -v redis-server 
  if [ "$QUICK" = 1 ]; then
    run "N=10000 ROUNDS=1 python3 scripts/compare-redisbloom.py"
    return
  fi
  run "N=300000 ROUNDS=5 python3 scripts/compare-redisbloom.py"
}

section_python() {
  if [ "$QUICK" = 1 ]; then
    run "bash crates/bloomery-py/bench/run.sh --n 20000 --rounds 1"
    return
  fi
  run "bash crates/bloomery-py/bench/run.sh --n 1000000 10000000 --rounds 5"
}

section_parquet() {
  if [ "$QUICK" = 1 ]; then
    run "LAKE=target/parquet-lake-quick FILES=10 ROWS=1000 KEYS=1000 REPEATS=1 bash benches/scripts/parquet_bench.sh"
    return
  fi
  run "FILES=1000 ROWS=10000 KEYS=1000000 REPEATS=3 bash benches/scripts/parquet_bench.sh"
}

section_bigfiles() {
  need "benches/scripts/bigfiles.sh (not in this tree)" test -f benches/scripts/bigfiles.sh 
  if [ "$QUICK" = 1 ]; then
    run "bash benches/scripts/bigfiles.sh target/bigfiles 1000000 1"
    return
  fi
  run "bash benches/scripts/bigfiles.sh"
}

section_structured() {
  if [ "$QUICK" = 1 ]; then
    run "$BENCH structured_quick -- 2000 10000 1"
    run "$BENCH mlbf_quick -- 2000 1 small"
    run "$BENCH static_mem -- 10000"
    return
  fi
  need "target/data/npm-urls.txt or BLOOMERY_DATA (bash scripts/fetch-data.sh npm)" \
    test -f "${BLOOMERY_DATA:-target/data}/npm-urls.txt" 
  run "cargo build --release -q -p bloomery-benches --bin structured_quick --bin mlbf_quick --bin static_mem"
  run "STRUCTURED_PROBE=1 ${PRIO}$REL/structured_quick 200000 1000 7"
  run "${PRIO}$REL/mlbf_quick 200000 7"
  run "${PRIO}$REL/mlbf_quick 200000 7 small"
  run "${PRIO}$REL/structured_quick 200000 1000000 7"
  run "$REL/static_mem 1000000"
  run "$REL/static_mem 10000000"
  run "BLOOMERY_BENCH_URLS=200000 BLOOMERY_BENCH_STATIC_N=1000000 cargo bench -q -p bloomery-benches --bench structured"
}

section_rates() {
  if [ "$QUICK" = 1 ]; then
    run "bash scripts/check-rates.sh 2000 0.01"
    return
  fi
  run "bash scripts/fetch-data.sh words urls npm"
  run "bash scripts/check-rates.sh 100000 0.01"
}

section_windows() {
  if [ "$QUICK" = 1 ]; then
    run "cargo run --release -q -p bloomery-lab --example run -- window-baselines --quick --out target/lab-windows"
    return
  fi
  run "cargo build --release -q -p bloomery-lab --example run"
  run "${PRIO}$REL/examples/run window-baselines --out target/lab-windows"
}

header() {
  local cpu
  cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2> /dev/null || true)
  echo "## $1$([ "$QUICK" = 1 ] && echo ' (quick)')"
  echo "date $(date -u '+%F %H:%M UTC'), commit $(git rev-parse --short HEAD 2> /dev/null || echo '?')," \
    "${cpu:-unknown CPU}, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
}

failed=()
for s in "${WANT[@]}"; do
  if [ "$LIST" = 1 ]; then
    echo "$s"
    "section_$s"
    continue
  fi
  header "$s"
  status=0
  ("section_$s") || status=$?
  if [ "$status" = 3 ]; then
    echo "($s skipped)"
  elif [ "$status" != 0 ]; then
    echo "($s failed, status $status)" >&2
    failed+=("$s")
  fi
  echo
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "bench-tables.sh: failed: ${failed[*]}" >&2
  exit 1
fi
