#!/usr/bin/env python3
"""bloomery-redis beside RedisBloom, on one machine in one run.

Starts two redis-servers on free loopback ports, one with bloomery's module (release build),
one with a RedisBloom module you built yourself (this script does not build or fetch it), and
measures:

1. throughput (requests/s) of BF.ADD, BF.EXISTS, TDIGEST.ADD and TDIGEST.QUANTILE with
   `redis-benchmark -P 16 -c 50` on random items, in ROUNDS rounds that alternate between the
   two servers (so background load hits both alike); the median of each and their ratio;
2. memory of BF.RESERVE'd filters (1M and 10M items at 1% and 0.1%, scaling and not) and of a
   filter created by BF.ADD and grown by 1M adds: MEMORY USAGE and the change of used_memory
   (what Redis counts against maxmemory), and the false-positive rate measured on 500,000 items
   never added, after filling the 1M filters to capacity.

Prints markdown tables for docs/BENCHMARKS.md.

Usage: REDISBLOOM=/path/to/redisbloom.so python3 scripts/compare-redisbloom.py
Environment: N (requests per benchmark run, 1000000), ROUNDS (5), BIG=1 to fill the 10M
filters too, MODULE (bloomery's module to use instead of a release build made here), ONLY
(commands to measure, comma-separated, e.g. `BF.ADD,BF.EXISTS`; all four by default),
MEMORY=0 to skip the memory part, PIN=1 to run both servers on CPU 1 and redis-benchmark on
CPU 0 (on a 2-CPU machine the client and the server otherwise take turns on both, and that
scheduling moves the rounds more than the modules do). Besides requests/s, each round reads
the server's CPU time (user + system, /proc) before and after: the server's CPU µs per
request is what a server-bound deployment pays, and is less disturbed by other load than
the wall clock. Needs redis-server, redis-benchmark and the redis Python package.
"""

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N = int(os.environ.get("N", "1000000"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))
BIG = os.environ.get("BIG") == "1"
MEMORY = os.environ.get("MEMORY") != "0"
PIN = os.environ.get("PIN") == "1"


# The throughput rounds: (name, redis-benchmark command line). `__rand_int__` is a random
# integer below 1,000,000 (`-r`); the t-digest gets random values, then is queried (each
# round's QUANTILE runs after that round's ADDs, so both modules answer with values waiting
# in their buffers).
COMMANDS = [
    ("BF.ADD", "BF.ADD bf key:__rand_int__"),
    ("BF.EXISTS", "BF.EXISTS bf key:__rand_int__"),
    ("TDIGEST.ADD", "TDIGEST.ADD td __rand_int__"),
    ("TDIGEST.QUANTILE", "TDIGEST.QUANTILE td 0.5 0.99"),
]
if os.environ.get("ONLY"):
    _only = {c.strip().upper() for c in os.environ["ONLY"].split(",")}
    COMMANDS = [c for c in COMMANDS if c[0] in _only]
    if not COMMANDS:
        raise SystemExit(f"ONLY names none of the commands measured: {os.environ['ONLY']}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(module, workdir):
    port = free_port()
    log = open(os.path.join(workdir, f"redis-{port}.log"), "w")
    proc = subprocess.Popen(
        (["taskset", "-c", "1"] if PIN else []) +
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", workdir,
         "--save", "", "--appendonly", "no", "--latency-tracking", "no",
         "--slowlog-log-slower-than", "-1", "--loadmodule", module],
        stdout=log, stderr=subprocess.STDOUT)
    r = redis.Redis(port=port)
    for _ in range(200):
        try:
            r.ping()
            return proc, port, r
        except redis.ConnectionError:
            time.sleep(0.05)
    raise SystemExit(f"redis-server with {module} did not start")


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench(pid, port, command):
    """(requests/s, the server's CPU µs per request) of N requests of `command`."""
    before = cpu_seconds(pid)
    out = subprocess.run(
        (["taskset", "-c", "0"] if PIN else []) +
        ["redis-benchmark", "-p", str(port), "-P", "16", "-c", "50", "-n", str(N),
         "-r", "1000000", "--csv"] + command.split(),
        capture_output=True, text=True, check=True).stdout
    cpu = (cpu_seconds(pid) - before) / N * 1e6
    return float(out.splitlines()[1].split('","')[1]), cpu


def used(r):
    info = r.info("memory")
    return info["used_memory"] - info["mem_clients_normal"]


def fill(r, key, n):
    pipe = r.pipeline(transaction=False)
    for start_ in range(0, n, 1000):
        pipe.execute_command("BF.MADD", key, *[f"item:{j}" for j in range(start_, min(n, start_ + 1000))])
        if start_ // 1000 % 50 == 49:
            pipe.execute()
    pipe.execute()


def rate(r, key, probes=500_000):
    pipe = r.pipeline(transaction=False)
    for start_ in range(0, probes, 1000):
        pipe.execute_command("BF.MEXISTS", key, *[f"absent:{j}" for j in range(start_, start_ + 1000)])
    return sum(sum(1 for x in res if x) for res in pipe.execute()) / probes


def main():
    rb = os.environ.get("REDISBLOOM")
    if not rb or not os.path.exists(rb):
        raise SystemExit("set REDISBLOOM to the path of a RedisBloom module (redisbloom.so)")
    ours = os.environ.get("MODULE")
    if not ours:
        subprocess.run(["cargo", "build", "--release", "-p", "bloomery-redis", "--lib"],
                       cwd=ROOT, check=True, stdout=sys.stderr)
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
        ours = os.path.join(target, "release", "libbloomery_redis.so")
    work = tempfile.mkdtemp()
    servers = {}
    for name, module in [("bloomery", ours), ("RedisBloom", rb)]:
        servers[name] = start(module, work)
    try:
        machine = subprocess.run(["sh", "-c", "lscpu | grep 'Model name' | sed 's/.*: *//'"],
                                 capture_output=True, text=True).stdout.strip()
        print(f"Machine: {machine}, {os.cpu_count()} CPUs; load before "
              f"{open('/proc/loadavg').read().split()[:3]}; {time.strftime('%Y-%m-%d')}\n")
        # 1. throughput, alternating
        for _, _, r in servers.values():
            r.execute_command("BF.RESERVE", "bf", "0.01", str(2 * N))
            r.execute_command("TDIGEST.CREATE", "td", "COMPRESSION", "100")
        rps = {(name, cmd): [] for name in servers for cmd, _ in COMMANDS}
        cpu = {(name, cmd): [] for name in servers for cmd, _ in COMMANDS}
        for rnd in range(ROUNDS):
            order = list(servers) if rnd % 2 == 0 else list(reversed(servers))
            for cmd, line in COMMANDS:
                for name in order:
                    v, c = bench(servers[name][0].pid, servers[name][1], line)
                    rps[(name, cmd)].append(v)
                    cpu[(name, cmd)].append(c)
                    print(f"round {rnd}: {name} {cmd} {v:.0f} req/s, {c:.3f} CPU µs/req",
                          file=sys.stderr)
        print(f"| command | bloomery (req/s, median of {ROUNDS}) | RedisBloom | ratio | "
              f"server CPU µs/req, bloomery : RedisBloom (median) | throughput per server CPU "
              f"(ratio) | runs |")
        print("|---|---|---|---|---|---|---|")
        for cmd, _ in COMMANDS:
            a, b = (statistics.median(rps[(n, cmd)]) for n in servers)
            ca, cb = (statistics.median(cpu[(n, cmd)]) for n in servers)
            runs = " / ".join(f"{x:.0f}:{y:.0f}" for x, y in zip(rps[("bloomery", cmd)], rps[("RedisBloom", cmd)]))
            ratios = [x / y for x, y in zip(rps[("bloomery", cmd)], rps[("RedisBloom", cmd)])]
            print(f"| {cmd} | {a:,.0f} | {b:,.0f} | {a / b:.3f} | {ca:.3f} : {cb:.3f} | "
                  f"{cb / ca:.3f} | {runs} |")
            print(f"{cmd}: ratio per round {min(ratios):.2f}-{max(ratios):.2f}, median "
                  f"{statistics.median(ratios):.2f}", file=sys.stderr)
        print()
        if not MEMORY:
            return
        # 2. memory
        cases = [("BF.RESERVE 1M 1%", ["0.01", "1000000"], 1_000_000),
                 ("BF.RESERVE 1M 0.1%", ["0.001", "1000000"], 1_000_000),
                 ("BF.RESERVE 1M 1% NONSCALING", ["0.01", "1000000", "NONSCALING"], 1_000_000),
                 ("BF.RESERVE 10M 1%", ["0.01", "10000000"], 10_000_000),
                 ("BF.RESERVE 10M 0.1%", ["0.001", "10000000"], 10_000_000)]
        for _, _, r in servers.values():
            r.delete("bf")
            r.execute_command("BF.RESERVE", "w", "0.01", "1000")
            r.execute_command("BF.MADD", "w", "a", "b")
            r.delete("w")
        print("| filter | module | MEMORY USAGE | used_memory change | ratio (used_memory) | rate measured |")
        print("|---|---|---|---|---|---|")
        for label, args, n in cases:
            row = {}
            for name, (_, _, r) in servers.items():
                before = used(r)
                r.execute_command("BF.RESERVE", "k", *args)
                grew = used(r) - before
                usage = r.memory_usage("k")
                measured = "—"
                if n <= 1_000_000 or BIG:
                    fill(r, "k", n)
                    measured = f"{rate(r, 'k'):.5f}"
                row[name] = (usage, grew, measured)
                r.delete("k")
            for name, (usage, grew, measured) in row.items():
                ratio = grew / row["RedisBloom"][1]
                print(f"| {label} | {name} | {usage:,} | {grew:,} | {ratio:.4f} | {measured} |")
        row = {}
        for name, (_, _, r) in servers.items():
            before = used(r)
            fill(r, "auto", 1_000_000)
            grew = used(r) - before
            row[name] = (r.memory_usage("auto"), grew, f"{rate(r, 'auto'):.5f}")
        for name, (usage, grew, measured) in row.items():
            ratio = grew / row["RedisBloom"][1]
            print(f"| BF.ADD-created, 1M adds | {name} | {usage:,} | {grew:,} | {ratio:.4f} | {measured} |")
    finally:
        for proc, _, _ in servers.values():
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
