#!/usr/bin/env python3
"""Summarise criterion results of the `counting` bench as Markdown: ns/op (median) per
structure and operation, with the ratios the targets need (counting / classic at the same k).

Usage: python3 benches/scripts/counting_table.py [target/criterion]
"""
import json, os, sys

root = sys.argv[1] if len(sys.argv) > 1 else "target/criterion"
res = {}
for d, _, files in os.walk(root):
    if d.endswith("/new") and "benchmark.json" in files and "estimates.json" in files:
        b = json.load(open(os.path.join(d, "benchmark.json")))
        e = json.load(open(os.path.join(d, "estimates.json")))
        g, f = b["group_id"], b["function_id"] or ""
        if not g.startswith("counting/") or "." not in f:
            continue
        s, op = f.split(".", 1)
        res.setdefault(g, {}).setdefault(s, {})[op] = e["median"]["point_estimate"]

order = ["classic", "counting", "blocked_counting", "dlcbf", "spectral", "cms_eps", "cms_eps_cu",
         "pc_cms_eps", "cms", "cms_cu", "pc_cms", "ibf", "scbf", "pc_bloom"]
ops = ["insert", "insert_batch", "count", "remove"]
for g in sorted(res, key=lambda g: float(g.split("/")[1].split("@")[0].rstrip("MK")) *
                (1e3 if "K@" in g else 1e6)):
    r = res[g]
    print(f"\n#### {g} — ns/op (criterion median)\n")
    print("| structure | " + " | ".join(ops) +
          " | insert / classic | count / classic | remove / classic insert |")
    print("|---" + "|---:" * (len(ops) + 3) + "|")
    c = r.get("classic", {})
    unknown = sorted(set(r) - set(order))
    for s in order + unknown:
        if s not in r:
            continue
        cells = [f"{r[s][o]:.1f}" if o in r[s] else "–" for o in ops]
        ratio = lambda o, by: f"{r[s][o] / c[by]:.2f}" if o in r[s] and by in c else "–"
        print(f"| {s} | " + " | ".join(cells) +
              f" | {ratio('insert', 'insert')} | {ratio('count', 'count')} | "
              f"{ratio('remove', 'insert')} |")
