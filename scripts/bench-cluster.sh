#!/usr/bin/env bash
# A filter sharded over a local Redis Cluster of 6 primaries (loopback ports, the bloomery
# module on each), measured in one run:
#   1. `bloomery cluster push` of a blocked filter file of about BYTES bytes in SHARDS shards
#      (made by `bloomery create -n N -p 0.01`: the default layout, salted at 1%; KIND picks
#      another, e.g. KIND=blocked-sectors),
#      against `redis-cli --pipe` pushing the same number of bytes as plain strings (SET of
#      4 MiB values on keys hash-tagged to each node's slots, one `redis-cli --pipe` per node,
#      all six at once): seconds and MB/s of each, and their ratio;
#   2. `bloomery cluster check -c` of QUERIES keys (half members) against the pushed filter,
#      and Python's `ShardedBloomFilter.contains_many` of the same keys through redis-py's
#      RedisCluster: keys per second, and the answers compared with `bloomery check` on the
#      file, key for key;
#   3. the measured false-positive rate of a second filter of RATE_BYTES filled to its
#      capacity (pushed in 8 shards), over QUERIES non-members from Python, against the
#      target and the model;
#   4. the same queries against the same file pushed to a cluster of one primary (every
#      slot on one node: the single-node module's rate through the same clients).
# The six servers are flushed after step 2 and the one-node server stopped before the
# `redis-cli --pipe` run, so that at most one copy of the filter is in memory at a time.
# Persistence is off (no RDB, no AOF). Every file is in a temporary directory deleted at exit.
# Prints a markdown section for docs/BENCHMARKS.md. The machine it runs on is shared by
# whatever else runs there: quote ratios, not absolute figures.
# Needs redis-server and redis-cli (Debian's redis-server, redis-tools), python3, and a Python
# (PY, default python3) with the bloomery package and redis-py installed.
# Usage: BYTES=4G SHARDS=64 PY=venv/bin/python bash scripts/bench-cluster.sh
#        (defaults BYTES=256M SHARDS=16 QUERIES=1000000 RATE_BYTES=16M, KIND unset;
#        BUILD=debug for a quick check of the script itself with the debug builds;
#        PUSH_ONLY=1 measures step 1 alone, the push against `redis-cli --pipe`, and needs no
#        Python package; SKIP_BUILD=1 uses the binaries already built)
set -euo pipefail
cd "$(dirname "$0")/.."

BYTES="${BYTES:-256M}"
SHARDS="${SHARDS:-16}"
QUERIES="${QUERIES:-1000000}"
RATE_BYTES="${RATE_BYTES:-16M}"
KIND="${KIND:-}"
PY="${PY:-python3}"
BUILD="${BUILD:-release}"
target="${CARGO_TARGET_DIR:-$PWD/target}"

if [ -n "${SKIP_BUILD:-}" ]; then
  :
elif [ "$BUILD" = release ]; then
  # (`--lib` would apply to both packages: the CLI's binary is asked for by name)
  cargo build --release -p bloomery-cli --bin bloomery >&2
  cargo build --release -p bloomery-redis --lib >&2
else
  cargo build -p bloomery-cli --bin bloomery >&2
  cargo build -p bloomery-redis --lib >&2
fi
BIN="$target/$BUILD/bloomery"
MODULE="$target/$BUILD/libbloomery_redis.so"

W="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    if p > 55535:
        continue
    t = socket.socket()
    try:
        t.bind(("127.0.0.1", p + 10000)); print(p); break
    except OSError:
        pass'
}

PORTS=()
for i in 0 1 2 3 4 5; do
  port=$(free_port)
  mkdir -p "$W/n$i"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$W/n$i" --save "" --appendonly no \
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
    --proto-max-bulk-len 1gb --client-query-buffer-limit 1gb \
    --loadmodule "$MODULE" > "$W/n$i/redis.log" 2>&1 &
  PIDS+=($!)
  PORTS+=("$port")
done
for port in "${PORTS[@]}"; do
  for _ in $(seq 300); do redis-cli -p "$port" PING > /dev/null 2>&1 && break; sleep 0.1; done
done
redis-cli --cluster create $(printf '127.0.0.1:%s ' "${PORTS[@]}") --cluster-replicas 0 \
  --cluster-yes > /dev/null
for port in "${PORTS[@]}"; do
  until redis-cli -p "$port" CLUSTER INFO | grep -q cluster_state:ok; do sleep 0.1; done
done
NODES="127.0.0.1:${PORTS[0]},127.0.0.1:${PORTS[1]}"

# The filter: sized so that its bits are about BYTES at 1% (in the layout `create -n -p`
# picks, or KIND), filled with as many generated keys as QUERIES / 2 (the members the
# queries ask for).
to_bytes() {
  python3 -c "import re,sys
s='$1'.strip(); m=re.fullmatch(r'([0-9.]+)([KMG]?)', s.upper())
print(int(float(m.group(1)) * {'':1,'K':1<<10,'M':1<<20,'G':1<<30}[m.group(2)]))"
}
kind_args=()
if [ -n "$KIND" ]; then kind_args=(--kind "$KIND"); fi
# keys per byte of this layout at 1%, from a filter of a million keys
"$BIN" -q create "$W/probe.bloom" -n 1000000 -p 0.01 "${kind_args[@]}"
per_million=$(stat -c %s "$W/probe.bloom")
rm -f "$W/probe.bloom"
keys_for() { python3 -c "print(int($1 * 1000000 / $per_million))"; }
bytes=$(to_bytes "$BYTES")
n=$(keys_for "$bytes")
"$BIN" -q create "$W/f.bloom" -n "$n" -p 0.01 "${kind_args[@]}"
layout=$("$BIN" info --json "$W/f.bloom" | python3 -c "import json,sys; print(json.load(sys.stdin)['layout'])")
"$BIN" gen-urls --count $((QUERIES / 2)) --sequential > "$W/members.txt"
"$BIN" -q add "$W/f.bloom" "$W/members.txt"
{ cat "$W/members.txt"
  "$BIN" gen-urls --count $((QUERIES - QUERIES / 2)) --sequential --offset $((QUERIES / 2)); } \
  > "$W/queries.txt"
file_bytes=$(stat -c %s "$W/f.bloom")

t0=$(date +%s.%N)
"$BIN" cluster push "$W/f.bloom" --nodes "$NODES" --name bench --shards "$SHARDS" --no-verify
t1=$(date +%s.%N)
push_s=$(python3 -c "print($t1 - $t0)")

if [ -z "${PUSH_ONLY:-}" ]; then
t0=$(date +%s.%N)
remote=$("$BIN" cluster check bench -c --nodes "$NODES" "$W/queries.txt" || true)
t1=$(date +%s.%N)
query_s=$(python3 -c "print($t1 - $t0)")
local=$("$BIN" check -c "$W/f.bloom" "$W/queries.txt" || true)


# Python: contains_many of the same keys through redis-py's RedisCluster, key for key
"$BIN" check "$W/f.bloom" "$W/queries.txt" > "$W/local-hits.txt" || true
cat > "$W/py-query.py" <<'PY'
import sys, time
from redis.cluster import RedisCluster
from bloomery.cluster import ShardedBloomFilter
port, name, queries, hits = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
keys = open(queries, "rb").read().split(b"\n")
if keys and keys[-1] == b"":
    keys.pop()
c = RedisCluster(host="127.0.0.1", port=int(port))
f = ShardedBloomFilter(c, name)
t = time.perf_counter()
got = f.contains_many(keys)
dt = time.perf_counter() - t
pos = [k for k, a in zip(keys, got) if a]
if hits != "-":
    want = open(hits, "rb").read().split(b"\n")
    if want and want[-1] == b"":
        want.pop()
    same = "identical" if pos == want else f"DIFFERENT ({len(pos)} vs {len(want)} hits)"
else:
    same = "-"
print(f"{len(keys)} {dt:.3f} {len(pos)} {same}")
PY
py_out=$("$PY" "$W/py-query.py" "${PORTS[0]}" bench "$W/queries.txt" "$W/local-hits.txt")
echo "python: $py_out" >&2

# the rate: a filter of RATE_BYTES at 1% filled to its capacity, QUERIES non-members
rbytes=$(to_bytes "$RATE_BYTES")
rn=$(keys_for "$rbytes")
"$BIN" -q create "$W/r.bloom" -n "$rn" -p 0.01 "${kind_args[@]}"
"$BIN" gen-urls --count "$rn" --sequential --offset 1000000000 > "$W/r-members.txt"
"$BIN" -q add "$W/r.bloom" "$W/r-members.txt"
rm -f "$W/r-members.txt"
"$BIN" gen-urls --count "$QUERIES" --sequential --offset 2000000000 > "$W/r-probes.txt"
"$BIN" cluster push "$W/r.bloom" --nodes "$NODES" --name rate --shards 8 --no-verify
rate_out=$("$PY" "$W/py-query.py" "${PORTS[0]}" rate "$W/r-probes.txt" -)
r_model=$("$BIN" info --json "$W/r.bloom" | python3 -c "import json,sys; print(json.load(sys.stdin)['current_fpr'])")
r_items=$("$BIN" info --json "$W/r.bloom" | python3 -c "import json,sys; print(json.load(sys.stdin)['items'])")
r_file_bytes=$(stat -c %s "$W/r.bloom")
echo "rate: $rate_out model $r_model items $r_items" >&2

# free the six servers before the one-node cluster and the --pipe run
for port in "${PORTS[@]}"; do redis-cli -p "$port" FLUSHALL > /dev/null; done

# one primary holding every slot, the same file pushed in the same shards
port1=$(free_port)
mkdir -p "$W/single"
redis-server --port "$port1" --bind 127.0.0.1 --dir "$W/single" --save "" --appendonly no \
  --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
  --proto-max-bulk-len 1gb --client-query-buffer-limit 1gb \
  --loadmodule "$MODULE" > "$W/single/redis.log" 2>&1 &
SINGLE=$!
PIDS+=($SINGLE)
for _ in $(seq 300); do redis-cli -p "$port1" PING > /dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p "$port1" CLUSTER ADDSLOTSRANGE 0 16383 > /dev/null
until redis-cli -p "$port1" CLUSTER INFO | grep -q cluster_state:ok; do sleep 0.1; done
"$BIN" cluster push "$W/f.bloom" --nodes "127.0.0.1:$port1" --name bench --shards "$SHARDS" --no-verify
t0=$(date +%s.%N)
remote1=$("$BIN" cluster check bench -c --nodes "127.0.0.1:$port1" "$W/queries.txt" || true)
t1=$(date +%s.%N)
query1_s=$(python3 -c "print($t1 - $t0)")
py1_out=$("$PY" "$W/py-query.py" "$port1" bench "$W/queries.txt" "$W/local-hits.txt")
echo "single node: $remote1 in $query1_s s; python: $py1_out" >&2
kill "$SINGLE"; wait "$SINGLE" 2>/dev/null || true
else
  for port in "${PORTS[@]}"; do redis-cli -p "$port" FLUSHALL > /dev/null; done
fi

# The same bytes as plain strings: each node gets its share (by slots owned) as SETs of
# 4 MiB values, on keys whose hash tag is one of its slots, through its own redis-cli --pipe.
python3 - "$W" "$file_bytes" "${PORTS[@]}" <<'PY'
import subprocess, sys
w, total, ports = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def crc16(b):
    c = 0
    for x in b:
        c ^= x << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else c << 1
            c &= 0xFFFF
    return c
owners = {}
for p in ports:
    out = subprocess.run(["redis-cli", "-p", p, "CLUSTER", "MYID"], capture_output=True, text=True).stdout.strip()
    owners[out] = p
nodes = subprocess.run(["redis-cli", "-p", ports[0], "CLUSTER", "NODES"], capture_output=True, text=True).stdout
ranges = {}
for line in nodes.splitlines():
    f = line.split()
    for r in f[8:]:
        lo, _, hi = r.partition("-")
        ranges.setdefault(owners[f[0]], []).append((int(lo), int(hi or lo)))
tag_of = {}
i = 0
while len(tag_of) < len(ports):
    t = str(i).encode(); i += 1
    s = crc16(t) % 16384
    for p, rs in ranges.items():
        if p not in tag_of and any(lo <= s <= hi for lo, hi in rs):
            tag_of[p] = t
chunk = 4 << 20
for p in ports:
    share = total * sum(hi - lo + 1 for lo, hi in ranges[p]) // 16384
    with open(f"{w}/pipe-{p}.sh", "w") as f:
        f.write(f"{share} {tag_of[p].decode()}\n")
PY
cat > "$W/gen.py" <<'PY'
import sys
share, tag, chunk = int(sys.argv[1]), sys.argv[2].encode(), 4 << 20
value = b"x" * chunk
out = sys.stdout.buffer
i = 0
while share > 0:
    n = min(chunk, share)
    key = b"{" + tag + b"}blob:%d" % i
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n" % (len(key), key, n))
    out.write(value[:n]); out.write(b"\r\n")
    share -= n; i += 1
PY
t0=$(date +%s.%N)
PIPES=()
for port in "${PORTS[@]}"; do
  read -r share tag < "$W/pipe-$port.sh"
  python3 "$W/gen.py" "$share" "$tag" | redis-cli -p "$port" --pipe > "$W/pipe-$port.log" &
  PIPES+=($!)
done
for p in "${PIPES[@]}"; do wait "$p"; done
t1=$(date +%s.%N)
if grep -q "errors: [1-9]" "$W"/pipe-*.log; then
  echo "redis-cli --pipe reported errors:" >&2; cat "$W"/pipe-*.log >&2; exit 1
fi
pipe_s=$(python3 -c "print($t1 - $t0)")

if [ -n "${PUSH_ONLY:-}" ]; then
  python3 - "$file_bytes" "$push_s" "$pipe_s" "$SHARDS" "$layout" <<'PY'
import sys
b, push, pipe, shards, layout = sys.argv[1:]
b, push, pipe = int(b), float(push), float(pipe)
mb = b / 1e6
print(f"{mb:,.0f} MB in {shards} shards ({layout} layout, target 1%); one machine, shared.\n")
print("| what | seconds | MB/s |")
print("|---|---:|---:|")
print(f"| `bloomery cluster push` | {push:.1f} | {mb / push:,.0f} |")
print(f"| `redis-cli --pipe`, same bytes as SETs of 4 MiB (6 in parallel) | {pipe:.1f} | {mb / pipe:,.0f} |")
print(f"\npush / pipe rate: {pipe / push:.2f}×")
PY
  exit 0
fi

python3 - "$file_bytes" "$push_s" "$pipe_s" "$QUERIES" "$query_s" "$remote" "$local" "$SHARDS" \
  "$py_out" "$rate_out" "$r_model" "$r_items" "$r_file_bytes" "$query1_s" "$remote1" "$py1_out" \
  "$layout" <<'PY'
import math, sys
(b, push, pipe, q, qs, remote, local, shards, py_out, rate_out, r_model, r_items, r_bytes,
 q1s, remote1, py1_out, layout) = sys.argv[1:]
b, push, pipe, q, qs, q1s = int(b), float(push), float(pipe), int(q), float(qs), float(q1s)
mb = b / 1e6
pk, pdt, ppos, psame = py_out.split(" ", 3)
p1k, p1dt, p1pos, p1same = py1_out.split(" ", 3)
rk, rdt, rpos, _ = rate_out.split(" ", 3)
rk, rpos = int(rk), int(rpos)
measured = rpos / rk
sigma = math.sqrt(0.01 * 0.99 / rk)
print("## Sharded filter on a local Redis Cluster (6 primaries)\n")
print(f"{mb:,.0f} MB in {shards} shards ({layout} layout, target 1%); one machine, shared.\n")
print("| what | seconds | MB/s |")
print("|---|---:|---:|")
print(f"| `bloomery cluster push` | {push:.1f} | {mb / push:,.0f} |")
print(f"| `redis-cli --pipe`, same bytes as SETs of 4 MiB (6 in parallel) | {pipe:.1f} | {mb / pipe:,.0f} |")
print(f"\npush / pipe rate: {pipe / push:.2f}×\n")
print("| queries of {:,} keys (half members) | 6 primaries: keys/s | 1 primary: keys/s | answers |".format(q))
print("|---|---:|---:|---|")
print(f"| `bloomery cluster check -c` | {q / qs:,.0f} | {q / q1s:,.0f} | {remote} and {remote1} (the file: {local}){'' if remote == local == remote1 else ' — DIFFERENT'} |")
print(f"| Python `contains_many` (redis-py RedisCluster) | {int(pk) / float(pdt):,.0f} | {int(p1k) / float(p1dt):,.0f} | {psame}, {p1same} with the file, key for key |")
print(f"\nRate: a {int(r_bytes) / 1e6:,.0f} MB filter at 1% holding {int(r_items):,} keys (its capacity), 8 shards: "
      f"{rpos:,} false positives of {rk:,} non-members from Python = {measured:.5f} "
      f"(target 0.01, model at this fill {float(r_model):.5f}, binomial σ at 1% {sigma:.5f}).")
PY
