#!/usr/bin/env bash
# A/B of two commits in release: the library (`quick`), the CLI (`add`/`check`) and the Redis
# module (BF.ADD/BF.EXISTS through redis-benchmark), each commit built from `git archive` into
# its own source and target dir, the two run alternately ROUNDS times; the minimum of each row
# is kept and the ratio new/old printed (times: < 1 is faster; Redis is requests per second,
# turned into µs per request so that the ratio reads the same way).
#
# Usage: benches/scripts/house-ab.sh [OLD] [NEW]
#   OLD  default: the last commit before 2026-11-28 12:00 UTC (`git log --before=... -1`)
#   NEW  default: HEAD
# Environment:
#   WORK=/tmp/house-ab   sources, target dirs, keys and raw outputs (reused when present;
#                        the new target dir is seeded from the old one, so the dependencies
#                        compile once)
#   PARTS="build lib cli redis"   which parts to run (build: the library bench and the CLI;
#                        redis builds the module of each side first)
#   N=200000             keys of the library run (`quick N 0.01 3`)
#   CLI_N=1000000        lines of the CLI run (/usr/share/dict/words if present, else key-1..N)
#   REDIS_N=200000       requests per redis-benchmark run (pipeline 32, keyspace 1e6)
#   ROUNDS=3             alternations (min of ROUNDS per row)
#   SERVER               valkey/redis-server to load the module into (default: redis-server)
set -euo pipefail
repo=$(git rev-parse --show-toplevel)
old=$(git -C "$repo" rev-parse --short "${1:-$(git -C "$repo" log --format=%H --before=2026-11-28T12:00 -1)}")
new=$(git -C "$repo" rev-parse --short "${2:-HEAD}")
work=${WORK:-/tmp/house-ab}
parts=${PARTS:-build lib cli redis}
n=${N:-200000} cli_n=${CLI_N:-1000000} redis_n=${REDIS_N:-200000} rounds=${ROUNDS:-3}
server=${SERVER:-redis-server}
mkdir -p "$work"
has() { [[ " $parts " == *" $1 "* ]]; }
now() { date +%s.%N; }

build() { # $1 = old|new, $2 = commit
  local src=$work/$1-src target=$work/$1-target
  if [ "$(cat "$src.commit" 2>/dev/null)" != "$2" ]; then
    rm -rf "$src" && mkdir -p "$src"
    git -C "$repo" archive "$2" | tar -x -C "$src"
    echo "$2" >"$src.commit"
  fi
  if [ "$1" = new ] && [ ! -d "$target" ] && [ -d "$work/old-target" ]; then
    cp -a "$work/old-target" "$target"
  fi
  (cd "$src" && CARGO_TARGET_DIR=$target cargo build --release -q \
    -p bloomery-benches --bin quick -p bloomery-cli --bin bloomery)
}
build_redis() { # $1 = old|new (after `build`)
  (cd "$work/$1-src" && CARGO_TARGET_DIR=$work/$1-target cargo build --release -q -p bloomery-redis)
}
bin() { echo "$work/$1-target/release/$2"; }

if has build; then
  echo "building $old (old) and $new (new) in release under $work" >&2
  build old "$old"
  build new "$new"
fi

echo "# old $old ($(git -C "$repo" log -1 --format=%ad --date=short "$old")), new $new" \
  "($(git -C "$repo" log -1 --format=%ad --date=short "$new")); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
raw=$work/raw
rm -rf "$raw" && mkdir -p "$raw"

# Rows are "name value" lines in $raw/<old|new>.<part>.<round>; the report takes the minimum
# per row and side.
report() {
  python3 - "$raw" "$1" <<'EOF'
import glob, os, sys
raw, part = sys.argv[1], sys.argv[2]
best = {}
for side in ("old", "new"):
    for f in glob.glob(os.path.join(raw, f"{side}.{part}.*")):
        for line in open(f):
            name, value = line.rsplit(None, 1)
            key = (name, side)
            best[key] = min(best.get(key, float("inf")), float(value))
names = sorted({k[0] for k in best}, key=lambda s: s)
for name in names:
    o, w = best.get((name, "old")), best.get((name, "new"))
    if o is None or w is None:
        continue
    print(f"| {part} | {name} | {o:.3f} | {w:.3f} | {w / o:.2f} |")
EOF
}

if has lib; then
  for r in $(seq "$rounds"); do
    for v in old new; do
      # "    blocked:  12.34  5.67  8.90" -> three rows (ns/op)
      "$(bin $v quick)" "$n" 0.01 3 | awk -v OFS=' ' '
        /^ *[a-z]+: +[0-9.]+ +[0-9.]+ +[0-9.]+$/ {
          sub(":", "", $1); print $1 " insert ns/op", $2; print $1 " query-pos ns/op", $3;
          print $1 " query-neg ns/op", $4 }' >"$raw/$v.lib.$r"
    done
  done
  report lib
fi

if has cli; then
  keys=$work/keys.txt
  if [ -r /usr/share/dict/words ]; then cp /usr/share/dict/words "$keys"; else seq 1 "$cli_n" | sed 's/^/key-/' >"$keys"; fi
  lines=$(wc -l <"$keys")
  for r in $(seq "$rounds"); do
    for v in old new; do
      b=$(bin $v bloomery) f=$work/$v.bloom
      rm -f "$f"
      "$b" create "$f" -n "$lines" -p 0.01 >/dev/null 2>&1
      s=$(now); "$b" add "$f" "$keys" >/dev/null 2>&1; m=$(now)
      "$b" check "$f" "$keys" >/dev/null; e=$(now)
      { echo "add $lines lines s $(echo "$m - $s" | bc)"; echo "check $lines lines s $(echo "$e - $m" | bc)"; } \
        >"$raw/$v.cli.$r"
    done
  done
  rm -f "$work/old.bloom" "$work/new.bloom"
  report cli
fi

if has redis; then
  build_redis old
  build_redis new
  port_old=6391 port_new=6392
  for v in old new; do
    p=port_$v
    "$server" --port "${!p}" --save '' --appendonly no --daemonize no \
      --loadmodule "$(bin $v libbloomery_redis.so)" >"$work/$v.server.log" 2>&1 &
    echo $! >"$work/$v.server.pid"
  done
  trap 'for v in old new; do kill "$(cat "$work/$v.server.pid")" 2>/dev/null || true; done' EXIT
  for v in old new; do
    p=port_$v
    for _ in $(seq 50); do redis-cli -p "${!p}" ping >/dev/null 2>&1 && break; sleep 0.1; done
  done
  rps() { # port command... -> requests per second
    redis-benchmark -p "$1" -n "$redis_n" -P 32 -r 1000000 -q "${@:2}" | tr '\r' '\n' |
      awk '/requests per second/ { for (i = 1; i <= NF; i++) if ($(i+1) == "requests") v = $i } END { print v }'
  }
  for r in $(seq "$rounds"); do
    for v in old new; do
      p=port_$v
      redis-cli -p "${!p}" del bf >/dev/null
      redis-cli -p "${!p}" bf.reserve bf 0.01 1000000 >/dev/null
      a=$(rps "${!p}" BF.ADD bf __rand_int__)
      e=$(rps "${!p}" BF.EXISTS bf __rand_int__)
      { echo "BF.ADD us/request $(echo "scale=6; 1000000 / $a" | bc)"
        echo "BF.EXISTS us/request $(echo "scale=6; 1000000 / $e" | bc)"; } >"$raw/$v.redis.$r"
    done
  done
  report redis
fi
