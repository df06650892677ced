#!/usr/bin/env python3
"""Server-side time of the BF.ADDs that make a sub-filter of a filter created by BF.ADD.

Starts a redis-server with the given module on a free loopback port, adds N items one BF.ADD
each (pipelined by 50, with BF.INFO FILTERS after each batch), and reads SLOWLOG (threshold
40 µs): for each batch in which the filter's sub-filter count changed, the slowest BF.ADD of
the batch is the one that made the sub-filter. Prints those times (µs), their median, max and
sum. Needs redis-server and the redis Python package.

Usage: python3 scripts/redis-growth-latency.py path/to/module.so [N=1000000]
"""
import socket
import statistics
import subprocess
import sys
import time

import redis


def main():
    mod = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                          "--save", "", "--appendonly", "no",
                          "--slowlog-log-slower-than", "40", "--slowlog-max-len", "100000",
                          "--loadmodule", mod], stdout=subprocess.DEVNULL)
    try:
        r = redis.Redis(port=port)
        for _ in range(100):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.1)
        r.slowlog_reset()
        grows, filters, chunk = [], 0, 50
        for i in range(0, n, chunk):
            pipe = r.pipeline(transaction=False)
            for j in range(i, min(i + chunk, n)):
                pipe.execute_command("BF.ADD", "bf", f"item:{j}")
            pipe.execute_command("BF.INFO", "bf", "FILTERS")
            out = pipe.execute()
            f = out[-1]  # redis-py answers a dict, a list or an int by version
            if isinstance(f, dict):
                f = next(iter(f.values()))
            elif isinstance(f, list):
                f = f[-1]
            if f != filters:
                grows.append(i)
                filters = f
        by_item = {}
        for e in r.slowlog_get(100000):
            cmd = e["command"]
            cmd = cmd.decode() if isinstance(cmd, bytes) else cmd
            parts = cmd.split()
            if parts and parts[0].upper() == "BF.ADD":
                by_item[int(parts[2].split(":")[1])] = e["duration"]
        out = [max([d for k, d in by_item.items() if start <= k < start + chunk] or [0])
               for start in grows]
        print(f"{filters} sub-filters; µs of the BF.ADD making each:", out)
        print("median", statistics.median(out), "max", max(out), "sum", sum(out))
    finally:
        p.terminate()
        p.wait()


if __name__ == "__main__":
    main()
