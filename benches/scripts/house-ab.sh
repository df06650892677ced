#!/usr/bin/env bash
# A/B of two commits in release: the library (`quick`), the CLI (`add`/`check`), the Redis
# module (BF/CF/CMS through redis-benchmark) and the Python package (batch and per-key calls),
# each commit built from `git archive` into its own source and target dir, the two run
# alternately ROUNDS times (old first in odd rounds, new first in even ones); each row's
# minimum and median over the rounds are printed with the ratios new/old (times: < 1 is
# faster; redis-benchmark's requests per second are turned into µs per request so that the
# ratio reads the same way) and the spread between rounds.
#
# Usage: benches/scripts/house-ab.sh [OLD] [NEW]
#   OLD  default: the last commit before 2026-11-28 12:00 UTC (`git log --before=... -1`)
#   NEW  default: HEAD
# Redis rows come in two: the client's time per request (redis-benchmark's requests per second,
# inverted: network, parsing and scheduling included) and the server's time inside the command
# (INFO commandstats, reset before each run), which is the module's own.
# Environment:
#   WORK=/tmp/house-ab   sources, target dirs, wheels, venvs, keys and raw outputs (reused when
#                        present: each commit builds once; the new target dir is seeded from
#                        the old one, so the dependencies compile once)
#   PARTS="build lib cli redis python"   which parts to run; `build` builds what the other
#                        listed parts need (lib: `quick`; cli: `bloomery`; redis: the module;
#                        python: a wheel by `maturin build --release` installed into a venv of
#                        each side, $WORK/<old|new>-venv, with numpy from PyPI)
#   N=200000             keys of the library run (`quick N 0.01 3`)
#   CLI_N=1000000        lines of the CLI run (/usr/share/dict/words if present, else key-1..N)
#   REDIS_N=200000       requests per redis-benchmark run (pipeline 32, keyspace 1e6)
#   PY_N=1000000         keys of the Python batch calls (per-key calls: PY_N / 5)
#   ROUNDS=3             alternations (min and median of ROUNDS per row)
#   SERVER               valkey/redis-server to load the modules into (default: redis-server);
#                        one server per side, on ports PORT and PORT+1 (default PORT=6391)
#   PYTHON=python3       the interpreter the wheels are built for and the venvs made from
#   MATURIN              maturin to build the wheels with (default: `maturin` on PATH, else
#                        one installed from PyPI into $WORK/tools-venv)
set -euo pipefail
repo=$(git rev-parse --show-toplevel)
old=$(git -C "$repo" rev-parse --short "${1:-$(git -C "$repo" log --format=%H --before=2026-11-28T12:00 -1)}")
new=$(git -C "$repo" rev-parse --short "${2:-HEAD}")
work=${WORK:-/tmp/house-ab}
parts=${PARTS:-build lib cli redis python}
n=${N:-200000} cli_n=${CLI_N:-1000000} redis_n=${REDIS_N:-200000} rounds=${ROUNDS:-3}
py_n=${PY_N:-1000000} port=${PORT:-6391} python=${PYTHON:-python3}
server=${SERVER:-redis-server}
mkdir -p "$work"
work=$(realpath "$work")
has() { [[ " $parts " == *" $1 "* ]]; }
order() { if (($1 % 2)); then echo old new; else echo new old; fi; } # who goes first in round $1
now() { date +%s.%N; }

maturin() {
  if [ -n "${MATURIN:-}" ]; then "$MATURIN" "$@"; return; fi
  if command -v maturin >/dev/null; then command maturin "$@"; return; fi
  if [ ! -x "$work/tools-venv/bin/maturin" ]; then
    "$python" -m venv "$work/tools-venv"
    "$work/tools-venv/bin/pip" install -q --disable-pip-version-check "maturin>=1.9,<2"
  fi
  "$work/tools-venv/bin/maturin" "$@"
}

build() { # $1 = old|new, $2 = commit: the binaries and packages the listed parts need
  local src=$work/$1-src target=$work/$1-target pkgs=()
  if [ "$(cat "$src.commit" 2>/dev/null)" != "$2" ]; then
    rm -rf "$src" "$work/$1-wheel" "$work/$1-venv" && mkdir -p "$src"
    git -C "$repo" archive "$2" | tar -x -C "$src"
    echo "$2" >"$src.commit"
  fi
  if [ "$1" = new ] && [ ! -d "$target" ] && [ -d "$work/old-target" ]; then
    cp -a "$work/old-target" "$target"
  fi
  # one cargo call per part: a `--bin` selects bin targets in every listed package, which
  # would leave out the module's library
  if has lib; then pkgs+=("-p bloomery-benches --bin quick"); fi
  if has cli; then pkgs+=("-p bloomery-cli --bin bloomery"); fi
  if has redis; then pkgs+=("-p bloomery-redis --lib"); fi
  for p in "${pkgs[@]}"; do
    # shellcheck disable=SC2086 # each entry is a list of cargo arguments
    (cd "$src" && CARGO_TARGET_DIR=$target cargo build --release -q $p)
  done
  if has python; then
    rm -rf "$work/$1-wheel"
    (cd "$src" && CARGO_TARGET_DIR=$target maturin build --release -q -i "$python" \
      -m crates/bloomery-py/Cargo.toml -o "$work/$1-wheel")
    [ -x "$work/$1-venv/bin/python" ] || "$python" -m venv "$work/$1-venv"
    "$work/$1-venv/bin/pip" install -q --disable-pip-version-check numpy
    "$work/$1-venv/bin/pip" install -q --disable-pip-version-check --no-deps --force-reinstall \
      "$work/$1-wheel"/bloomery-*.whl
  fi
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

# Rows are "name value" lines in $raw/<old|new>.<part>.<round> (lines starting with # are notes,
# printed once after the table). The report prints, per row,
# each side's minimum and median over the rounds, new/old of both, and the spread: each side's
# largest value over its smallest, the larger of the two (how far rounds of one build differ).
report() {
  python3 - "$raw" "$1" <<'EOF'
import glob, os, statistics, sys
raw, part = sys.argv[1], sys.argv[2]
runs, notes = {}, set()
for side in ("old", "new"):
    for f in glob.glob(os.path.join(raw, f"{side}.{part}.*")):
        for line in open(f):
            if line.startswith("#"):
                notes.add(line.strip())
                continue
            name, value = line.rsplit(None, 1)
            runs.setdefault((name, side), []).append(float(value))
print(f"| {part} | row | old min | new min | new/old min | old median | new median "
      "| new/old median | spread |")
for name in sorted({k[0] for k in runs}):
    o, w = runs.get((name, "old")), runs.get((name, "new"))
    if not o or not w:
        continue
    mo, mw = statistics.median(o), statistics.median(w)
    spread = max(max(o) / min(o), max(w) / min(w))
    print(f"| {part} | {name} | {min(o):.3f} | {min(w):.3f} | {min(w) / min(o):.2f} "
          f"| {mo:.3f} | {mw:.3f} | {mw / mo:.2f} | {spread:.2f} |")
print("\n".join(sorted(notes)))
EOF
}

if has lib; then
  for r in $(seq "$rounds"); do
    for v in $(order "$r"); do
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
    for v in $(order "$r"); do
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
  servers=()
  stop_servers() { for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done; }
  trap stop_servers EXIT
  port_old=$port port_new=$((port + 1))
  for v in old new; do
    p=port_$v
    if redis-cli -p "${!p}" ping >/dev/null 2>&1; then
      echo "port ${!p} is taken by another server: pick free ones with PORT=" >&2
      exit 1
    fi
    "$server" --port "${!p}" --save '' --appendonly no --daemonize no \
      --loadmodule "$(bin $v libbloomery_redis.so)" >"$work/$v.server.log" 2>&1 &
    servers+=($!)
  done
  for v in old new; do
    p=port_$v up=
    for _ in $(seq 50); do
      if redis-cli -p "${!p}" ping >/dev/null 2>&1; then up=1; break; fi
      sleep 0.1
    done
    if [ -z "$up" ]; then
      echo "the $v server on port ${!p} did not start ($work/$v.server.log):" >&2
      cat "$work/$v.server.log" >&2
      exit 1
    fi
  done
  rps() { # port command... -> requests per second
    redis-benchmark -p "$1" -n "$redis_n" -P 32 -r 1000000 -q "${@:2}" | tr '\r' '\n' |
      awk '/requests per second/ { for (i = 1; i <= NF; i++) if ($(i+1) == "requests") v = $i } END { print v }'
  }
  us() { echo "scale=6; 1000000 / $1" | bc; }
  served() { # port command: µs per call inside the command, from the server's commandstats
    redis-cli -p "$1" info commandstats | tr -d '\r' |
      awk -F '[:,=]' -v c="cmdstat_$2" 'tolower($1) == tolower(c) { printf "%.4f\n", $5 / $3 }'
  }
  row() { # port command args...: both rows of one command
    redis-cli -p "$1" config resetstat >/dev/null
    echo "$2 client us/request $(us "$(rps "$@")")"
    echo "$2 server us/call $(served "$1" "$2")"
  }
  for r in $(seq "$rounds"); do
    for v in $(order "$r"); do
      p=port_$v
      rc() { redis-cli -p "${!p}" "$@" >/dev/null; }
      # A fresh structure of each kind per round; adds run before queries, so that a query
      # finds some of the keyspace's keys.
      rc del bf cf cms
      rc bf.reserve bf 0.01 1000000
      rc cf.reserve cf 1000000
      rc cms.initbyprob cms 0.001 0.01
      {
        row "${!p}" BF.ADD bf __rand_int__
        row "${!p}" BF.EXISTS bf __rand_int__
        row "${!p}" CF.ADD cf __rand_int__
        row "${!p}" CF.EXISTS cf __rand_int__
        row "${!p}" CMS.INCRBY cms __rand_int__ 1
        row "${!p}" CMS.QUERY cms __rand_int__
      } >"$raw/$v.redis.$r"
    done
  done
  report redis
  stop_servers
fi

if has python; then
  # One process per side and round, each timing every row 3 times (the minimum kept); every
  # row is ns per key, in wall time and in the process's CPU time (all its threads: the batch
  # calls split large batches over threads). The keys are URL-like str of 30-40 bytes (as in
  # crates/bloomery-py/bench/bench.py), the negative queries disjoint keys. Two kinds: the
  # default `blocked` (whose layout a commit may have changed: each side prints it) and
  # `classic`.
  cat >"$work/py-ab.py" <<'PY'
import sys, time
import bloomery

n, reps = int(sys.argv[1]), 3
single = max(1, n // 5)
keys = [f"https://example.org/k/{i:x}/page.html" for i in range(n)]
neg = [f"https://example.org/q/{i:x}/page.html" for i in range(n)]
best = {}


def timed(name, count, fn):
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    for clock, ns in (("wall", time.perf_counter() - t), ("CPU", time.process_time() - c)):
        key, ns = f"{name} {clock}", ns * 1e9 / count
        best[key] = min(best.get(key, ns), ns)
    return out


def add_loop(g, ks):
    add = g.add
    for k in ks:
        add(k)


def in_loop(g, ks):
    hits = 0
    for k in ks:
        hits += k in g
    return hits


# warm-up: the first batch call imports numpy (the bool array it returns)
w = bloomery.BloomFilter(1000, 0.01)
w.add_many(keys[:1000])
w.contains_many(keys[:1000])
for _ in range(reps):
    for kind in ("blocked", "classic"):
        f = bloomery.BloomFilter(n, 0.01, kind=kind)
        timed(f"{kind} add_many", n, lambda: f.add_many(keys))
        pos = timed(f"{kind} contains_many pos", n, lambda: f.contains_many(keys))
        timed(f"{kind} contains_many neg", n, lambda: f.contains_many(neg))
        if not all(pos):
            sys.exit("a key added by add_many is missing")
        g = bloomery.BloomFilter(n, 0.01, kind=kind)
        timed(f"{kind} add (one key)", single, lambda: add_loop(g, keys[:single]))
        hits = timed(f"{kind} in pos (one key)", single, lambda: in_loop(g, keys[:single]))
        timed(f"{kind} in neg (one key)", single, lambda: in_loop(g, neg[:single]))
        if hits != single:
            sys.exit("a key added by add is missing")
if sys.argv[3] == "1":
    info = bloomery.BloomFilter(n, 0.01).info()
    print(f"# {sys.argv[2]}: the default blocked filter is {info['layout']}, {info['hash']}")
for name, ns in best.items():
    print(f"{name} ns/key", f"{ns:.3f}")
PY
  for r in $(seq "$rounds"); do
    for v in $(order "$r"); do
      (cd "$work" && "$work/$v-venv/bin/python" "$work/py-ab.py" "$py_n" "$v" "$r") \
        >"$raw/$v.python.$r"
    done
  done
  report python
fi
