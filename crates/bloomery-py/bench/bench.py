"""bloomery against the Python Bloom-filter packages: per-key add and `in` from a Python loop,
bloomery's batch calls, measured false-positive rate and memory, for N str keys at 1%.

Run through bench/run.sh (its own venv with the competitors from PyPI and bloomery built in
release mode). Rounds alternate the libraries' order; times are medians over rounds. The
pure-Python packages (pybloom-live, pyprobables) run one round. Prints a Markdown table.

    python bench.py --n 1000000 10000000 --rounds 5
"""

import argparse
import gc
import platform
import statistics
import subprocess
import sys
import time
from importlib import metadata

import bloomery

FPR = 0.01
SLOW_MAX = 1_000_000


def make_keys(n, tag):
    # URL-like keys of 30-40 bytes; the queries are disjoint from the keys
    return [f"https://example.org/{tag}/{i:x}/page.html" for i in range(n)]


class Lib:
    """One competitor: how to make a filter, add one key, test one key, and its size."""

    def __init__(self, name, pkg, make, add, contains, nbytes, slow=False, op_in=True):
        self.name, self.pkg, self.make, self.add, self.contains = name, pkg, make, add, contains
        self.nbytes, self.slow, self.op_in = nbytes, slow, op_in


def libs():
    out = [
        Lib(
            "bloomery",
            None,
            lambda n: bloomery.BloomFilter(n, FPR),
            lambda f: f.add,
            lambda f: f.__contains__,
            lambda f: f.nbytes,
        )
    ]
    try:
        import rbloom

        out.append(
            Lib("rbloom", "rbloom", lambda n: rbloom.Bloom(n, FPR), lambda f: f.add,
                lambda f: f.__contains__, lambda f: f.size_in_bits // 8)
        )
    except ImportError:
        pass
    try:
        import fastbloom_rs

        out.append(
            Lib("fastbloom-rs", "fastbloom-rs", lambda n: fastbloom_rs.BloomFilter(n, FPR),
                lambda f: f.add_str, lambda f: f.contains_str, lambda f: len(f.get_bytes()),
                op_in=False)
        )
    except ImportError:
        pass
    try:
        import pybloom_live

        out.append(
            Lib("pybloom-live", "pybloom-live", lambda n: pybloom_live.BloomFilter(n, FPR),
                lambda f: f.add, lambda f: f.__contains__, lambda f: f.num_bits // 8, slow=True)
        )
    except ImportError:
        pass
    try:
        import probables

        out.append(
            Lib("pyprobables", "pyprobables",
                lambda n: probables.BloomFilter(est_elements=n, false_positive_rate=FPR),
                lambda f: f.add, lambda f: f.check, lambda f: f.number_bits // 8, slow=True,
                op_in=False)
        )
    except ImportError:
        pass
    return out


def loop_add(add, keys):
    t = time.perf_counter()
    for k in keys:
        add(k)
    return time.perf_counter() - t


def loop_in(contains, keys):
    hits = 0
    t = time.perf_counter()
    for k in keys:
        if contains(k):
            hits += 1
    return time.perf_counter() - t, hits


def loop_in_operator(f, keys):
    """`k in f`, as users write it (the __contains__ slot, no method call)."""
    hits = 0
    t = time.perf_counter()
    for k in keys:
        if k in f:
            hits += 1
    return time.perf_counter() - t, hits


def timed(fn):
    t = time.perf_counter()
    r = fn()
    return time.perf_counter() - t, r


def run(n, rounds, with_arrow):
    keys, queries = make_keys(n, "k"), make_keys(n, "q")
    res = {}  # name -> dict of lists
    all_libs = libs()
    for r in range(rounds):
        order = all_libs[r % len(all_libs):] + all_libs[: r % len(all_libs)]
        for lib in order:
            if lib.slow and r > 0:
                continue
            gc.collect()
            d = res.setdefault(lib.name, {"add": [], "in": [], "fp": [], "bytes": 0})
            f = lib.make(n)
            # the pure-Python packages cost tens of microseconds a key whatever n (the
            # interpreter dominates): past SLOW_MAX keys they are timed on the first SLOW_MAX
            # keys and queries, and their rate is not measured
            m = SLOW_MAX if lib.slow and n > SLOW_MAX else n
            d["add"].append(loop_add(lib.add(f), keys[:m]) * n / m)
            if lib.op_in:
                t, hits = loop_in_operator(f, queries[:m])
            else:
                t, hits = loop_in(lib.contains(f), queries[:m])
            d["in"].append(t * n / m)
            d["fp"].append(hits / n if m == n else float("nan"))
            d["bytes"] = lib.nbytes(f)
            if lib.name == "bloomery":
                b = bloomery.BloomFilter(n, FPR)
                d.setdefault("add_many", []).append(timed(lambda: b.add_many(keys))[0])
                t, ans = timed(lambda: b.contains_many(queries))
                d.setdefault("contains_many", []).append(t)
                assert int(ans.sum()) == hits  # the batch answers are the loop's
                assert b == f
                if with_arrow:
                    import pyarrow as pa

                    ka, qa = pa.array(keys), pa.array(queries)
                    b = bloomery.BloomFilter(n, FPR)
                    d.setdefault("add_many_arrow", []).append(timed(lambda: b.add_many(ka))[0])
                    d.setdefault("contains_many_arrow", []).append(
                        timed(lambda: b.contains_many(qa))[0]
                    )
                    del ka, qa
            if lib.name == "rbloom":
                g = lib.make(n)
                d.setdefault("update", []).append(timed(lambda: g.update(keys))[0])
            if lib.name == "fastbloom-rs":
                g = lib.make(n)
                d.setdefault("add_str_batch", []).append(timed(lambda: g.add_str_batch(keys))[0])
                d.setdefault("contains_str_batch", []).append(
                    timed(lambda: g.contains_str_batch(queries))[0]
                )
            del f
            print(f"  n={n:,} round {r + 1}: {lib.name} done", file=sys.stderr, flush=True)
    return res


def ns(sec, n):
    return f"{sec / n * 1e9:.0f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-arrow", action="store_true")
    a = ap.parse_args()
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {"bloomery": bloomery.__version__}
    for lib in libs():
        if lib.pkg:
            versions[lib.name] = metadata.version(lib.pkg)
    print(f"- date: {time.strftime('%Y-%m-%d')}; machine: {cpu}, {platform.machine()}, "
          f"{subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores; "
          f"Python {platform.python_version()}")
    print("- versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    print(f"- bloomery's batch queries over arrays (NumPy, Arrow) split large batches over "
          f"{bloomery._native._batch_threads()} threads (BLOOMERY_THREADS); everything else, "
          f"bloomery's queries over lists and its batch inserts included, runs on one thread")
    print(f"- rounds: {a.rounds} (alternating order; medians), pure-Python packages 1 round "
          f"(timed on the first {SLOW_MAX:,} keys when n is larger); keys "
          f"`https://example.org/k/<hex i>/page.html`, queries disjoint; target fpr {FPR}; "
          f"`in` is the operator where the package has it (fastbloom-rs: contains_str, "
          f"pyprobables: check)")
    for n in a.n:
        res = run(n, a.rounds, not a.no_arrow)
        med = {name: {k: statistics.median(v) for k, v in d.items() if isinstance(v, list)}
               for name, d in res.items()}
        rb = med.get("rbloom")
        print()
        print(f"### {n:,} keys at 1%")
        print()
        print("| library | add ns/key | `in` ns/key | add vs rbloom | `in` vs rbloom | measured fpr | fpr / 0.01 | bytes |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name, m in med.items():
            ra = f"{m['add'] / rb['add']:.2f}×" if rb else "-"
            ri = f"{m['in'] / rb['in']:.2f}×" if rb else "-"
            fp = "not measured" if m["fp"] != m["fp"] else f"{m['fp']:.5f}"
            fr = "-" if m["fp"] != m["fp"] else f"{m['fp'] / FPR:.2f}"
            print(f"| {name} | {ns(m['add'], n)} | {ns(m['in'], n)} | {ra} | {ri} | "
                  f"{fp} | {fr} | {res[name]['bytes']:,} |")
        b = med["bloomery"]
        print()
        print("| batch call | ns/key | speed-up over rbloom's per-key loop |")
        print("|---|---:|---:|")
        rows = [("bloomery add_many(list)", b["add_many"], rb and rb["add"]),
                ("bloomery contains_many(list)", b["contains_many"], rb and rb["in"])]
        if "add_many_arrow" in b:
            rows += [("bloomery add_many(pyarrow)", b["add_many_arrow"], rb and rb["add"]),
                     ("bloomery contains_many(pyarrow)", b["contains_many_arrow"], rb and rb["in"])]
        if rb:
            rows.append(("rbloom update(list)", rb["update"], rb["add"]))
        fb = med.get("fastbloom-rs")
        if fb:
            rows += [("fastbloom-rs add_str_batch(list)", fb["add_str_batch"], rb and rb["add"]),
                     ("fastbloom-rs contains_str_batch(list)", fb["contains_str_batch"], rb and rb["in"])]
        for label, t, base in rows:
            print(f"| {label} | {ns(t, n)} | {base / t:.1f}× |" if base else f"| {label} | {ns(t, n)} | - |")


if __name__ == "__main__":
    main()
