#!/usr/bin/env python3
"""Summarise criterion results of the `filters` bench as Markdown: ns/op (median) per
structure and operation, plus ratios to sbbf-rs-safe, fastbloom and the random-read floor.

Usage: python3 benches/scripts/crit_table.py [target/criterion]
"""
import json, os, sys

root = sys.argv[1] if len(sys.argv) > 1 else "target/criterion"
res = {}
for d, _, files in os.walk(root):
    if d.endswith("/new") and "benchmark.json" in files and "estimates.json" in files:
        b = json.load(open(os.path.join(d, "benchmark.json")))
        e = json.load(open(os.path.join(d, "estimates.json")))
        g, f = b["group_id"], b["function_id"]
        if "." not in (f or ""):
            continue
        s, op = f.split(".", 1)
        res.setdefault(g, {}).setdefault(s, {})[op] = e["median"]["point_estimate"]

def key(g):
    n, p = g.split("@")
    return (float(p.rstrip("%")) < 1, int(n.rstrip("M")))

order = ["blocked", "classic", "split_block", "fastbloom", "sbbf", "bloomfilter", "xorf_bfuse8"]
ops = ["insert", "extend", "query_pos", "query_neg", "count_batch_pos", "count_batch_neg",
       "contains_batch_pos", "contains_batch_neg"]
for g in sorted(res, key=key):
    r = res[g]
    print(f"\n#### {g} — ns/op (criterion median)\n")
    floor = r.get("floor_words", {}).get("read")
    floorv = r.get("floor_vec", {}).get("read")
    if floor:
        print(f"Random-read floor: {floor:.2f} ns (Words::zeroed, huge pages advised), "
              f"{floorv:.2f} ns (plain Vec).\n")
    print("| structure | " + " | ".join(ops) + " |")
    print("|---" * (len(ops) + 1) + "|")
    for s in order:
        if s not in r:
            continue
        print(f"| {s} | " + " | ".join(f"{r[s][o]:.2f}" if o in r[s] else "—" for o in ops) + " |")
    def ratio(a, b):
        return f"{a / b:.2f}×" if a and b else "—"
    b, sb, fb, cl = r.get("blocked", {}), r.get("sbbf", {}), r.get("fastbloom", {}), r.get("classic", {})
    print("\n| ratio | insert | query_pos | query_neg | batched insert (extend) | count_batch pos | count_batch neg |")
    print("|---|---|---|---|---|---|---|")
    print("| blocked / sbbf-rs-safe | " + " | ".join(ratio(b.get(o), sb.get(o2)) for o, o2 in
          [("insert", "insert"), ("query_pos", "query_pos"), ("query_neg", "query_neg"),
           ("extend", "insert"), ("count_batch_pos", "query_pos"),
           ("count_batch_neg", "query_neg")]) + " |")
    print("| classic / fastbloom (same m, k) | " + " | ".join(ratio(cl.get(o), fb.get(o)) for o in
          ["insert", "query_pos", "query_neg"]) + " | — | — | — |")
    if floor:
        print("| blocked / floor (Words) | — | " + " | ".join(ratio(b.get(o), floor) for o in
              ["query_pos", "query_neg"]) + " | — | " + " | ".join(ratio(b.get(o), floor) for o in
              ["count_batch_pos", "count_batch_neg"]) + " |")
