"""Driver of benches/scripts/parquet_bench.sh: times the runs (best of REPEATS, the
competitors alternated within each repeat, warm page cache) and prints a Markdown table."""

import os
import random
import re
import subprocess
import time

import duckdb

LAKE = os.environ["LAKE"]
FILES = int(os.environ["FILES"])
ROWS = int(os.environ["ROWS"])
KEYS = int(os.environ.get("KEYS", "1000000"))
REPEATS = int(os.environ.get("REPEATS", "3"))
BIN = "target/release/bloomery"
# OLD: another build of bloomery to compare with, its prunes alternated with this one's
OLD = os.environ.get("OLD")
TOTAL = FILES * 4 * ROWS

rng = random.Random(7)
keys_path = f"{LAKE}.keys.txt"
with open(keys_path, "w") as f:
    # about half the keys are ids of the lake, half are not
    f.write("\n".join(str(rng.randrange(2 * TOTAL)) for _ in range(KEYS)) + "\n")
few_path = f"{LAKE}.keys1000.txt"
with open(few_path, "w") as f:
    f.write("\n".join(str(rng.randrange(2 * TOTAL)) for _ in range(1000)) + "\n")

# warm the page cache
for name in os.listdir(LAKE):
    with open(os.path.join(LAKE, name), "rb") as fh:
        while fh.read(1 << 20):
            pass


ranges_path = f"{LAKE}.ranges.txt"
subprocess.run(["target/release/parquet_lake", "ranges", LAKE, ranges_path], check=True)


def run(args):
    t = time.perf_counter()
    r = subprocess.run(args, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if r.returncode not in (0, 1):
        raise SystemExit(f"{args}: {r.returncode} {r.stderr}")
    return dt, r


def floor():
    r = subprocess.run(["target/release/parquet_lake", "floor", LAKE, "5"],
                       capture_output=True, text=True, check=True)
    m = dict(zip(r.stdout.split()[::2], r.stdout.split()[1::2]))
    return float(m["floor_read_s"]), float(m["floor_read_decode_s"]), int(m["bytes"])


def duck_per_key(n):
    con = duckdb.connect()
    glob = f"{LAKE}/*.parquet"
    t = time.perf_counter()
    for k in range(n):
        v = rng.randrange(2 * TOTAL)
        con.execute(
            "SELECT count(*) FILTER (WHERE NOT bloom_filter_excludes) FROM parquet_bloom_probe(?, 'id', ?::BIGINT)",
            [glob, v]).fetchone()
    return (time.perf_counter() - t) / n


res = {}
for rep in range(REPEATS):
    for name, args in [
        ("prune_1m", [BIN, "-q", "parquet", "prune", LAKE, "--column", "id", "--keys", keys_path]),
        ("prune_1k", [BIN, "-q", "parquet", "prune", LAKE, "--column", "id", "--keys", few_path]),
        ("prune_1", [BIN, "-q", "parquet", "prune", LAKE, "--column", "id", "-k", "12345"]),
        ("check_c_1k", [BIN, "-q", "parquet", "check", "-c", LAKE, "--column", "id", "--keys", few_path]),
    ] + ([] if not OLD else [
        ("old_prune_1m", [OLD, "-q", "parquet", "prune", LAKE, "--column", "id", "--keys", keys_path]),
        ("old_prune_1k", [OLD, "-q", "parquet", "prune", LAKE, "--column", "id", "--keys", few_path]),
        ("old_prune_1", [OLD, "-q", "parquet", "prune", LAKE, "--column", "id", "-k", "12345"]),
    ]):
        dt, r = run(args)
        res.setdefault(name, []).append(dt)
        if name.startswith("old_") and r.stdout != res[name[4:] + "_out"]:
            raise SystemExit(f"{name}: the two builds list different files")
        res[name + "_out"] = r.stdout
    fr, frd, fbytes = floor()
    res.setdefault("floor", []).append(fr)
    res.setdefault("floor_decode", []).append(frd)
    # the same reads as a command of their own, timed as the prunes are
    dt, _ = run(["target/release/parquet_lake", "read", ranges_path])
    res.setdefault("floor_command", []).append(dt)
    # what any command pays before and after its work: a process started and waited for
    dt, _ = run([BIN, "--version"])
    res.setdefault("process", []).append(dt)
# the full cross product once: every key against every row group
dt, r = run([BIN, "-q", "parquet", "check", "-c", LAKE, "--column", "id", "--keys", keys_path])
res["check_c_1m"] = [dt]
duck = duck_per_key(20)

b = {k: min(v) for k, v in res.items() if not k.endswith("_out")}
pruned_files_1m = len(res["prune_1m_out"].splitlines())
pruned_files_1k = len(res["prune_1k_out"].splitlines())
pruned_files_1 = len(res["prune_1_out"].splitlines())
cpu = re.search(r"model name\s*:\s*(.*)", open("/proc/cpuinfo").read()).group(1)
print(f"machine: {cpu}, {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}")
print(f"lake: {FILES} files × 4 row groups × {ROWS} rows, {fbytes:,} bytes of footers + filters; "
      f"best of {REPEATS}, warm page cache\n")
fp = b["floor"] + b["process"]
fc = b["floor_command"]
print("| run | time | keys/s | files/s | vs floor | vs floor + process | vs floor as a command | files listed |")
print("|---|---|---|---|---|---|---|---|")
print(f"| I/O floor: read footers + filter bytes (parallel preads, timed in-process) | {b['floor']*1e3:.1f} ms | | "
      f"{FILES/b['floor']:,.0f} | 1.00× | | | |")
print(f"| … plus decoding the footers (parquet crate) | {b['floor_decode']*1e3:.1f} ms | | "
      f"{FILES/b['floor_decode']:,.0f} | {b['floor_decode']/b['floor']:.2f}× | | | |")
print(f"| a process started and waited for (`bloomery --version`) | {b['process']*1e3:.1f} ms | | | "
      f"| | | |")
print(f"| the floor's reads as a command (`parquet_lake read`, timed as the prunes are) | {fc*1e3:.1f} ms | | "
      f"{FILES/fc:,.0f} | {fc/b['floor']:.2f}× | {fc/fp:.2f}× | 1.00× | |")
for name, keys, label in [("prune_1m", KEYS, "prune, 1M keys"), ("prune_1k", 1000, "prune, 1,000 keys"),
                          ("prune_1", 1, "prune, 1 key"), ("check_c_1k", 1000, "check -c, 1,000 keys"),
                          ("check_c_1m", KEYS, "check -c, 1M keys (all 4·10⁹ probes)")]:
    t = b[name]
    listed = {"prune_1m": pruned_files_1m, "prune_1k": pruned_files_1k, "prune_1": pruned_files_1}.get(name, "")
    print(f"| bloomery parquet {label} | {t*1e3:.1f} ms | {keys/t:,.0f} | {FILES/t:,.0f} | "
          f"{t/b['floor']:.2f}× | {t/fp:.2f}× | {t/fc:.2f}× | {listed} |")
if OLD:
    for name, keys, label in [("old_prune_1m", KEYS, "prune, 1M keys"),
                              ("old_prune_1k", 1000, "prune, 1,000 keys"),
                              ("old_prune_1", 1, "prune, 1 key")]:
        t = b[name]
        print(f"| previous build ({OLD}): {label} | {t*1e3:.1f} ms | {keys/t:,.0f} | {FILES/t:,.0f} | "
              f"{t/b['floor']:.2f}× | {t/fp:.2f}× | {t/fc:.2f}× | |")
print(f"| DuckDB parquet_bloom_probe('lake/*.parquet', 'id', v), per key (20 keys) | "
      f"{duck*1e3:.1f} ms | {1/duck:,.1f} | {FILES/duck:,.0f} | | | | |")
print(f"\nload average at the end: {os.getloadavg()}")
print(f"\nper key: DuckDB {duck*1e3:.1f} ms; bloomery check -c {b['check_c_1m']/KEYS*1e6:.2f} µs "
      f"(all row groups), prune 1 key {b['prune_1']*1e3:.1f} ms")
