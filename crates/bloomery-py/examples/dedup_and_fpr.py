# %% [markdown]
# # Deduplicate a real list, then check the false-positive rate
#
# A notebook-style script (cells marked `# %%` run in Jupyter, VS Code or plain Python):
#
#     python examples/dedup_and_fpr.py                 # the identifiers of Python's own source
#     python examples/dedup_and_fpr.py --lines FILE    # any list, one key per line
#     python examples/dedup_and_fpr.py --plot fpr.png  # also plot (needs matplotlib)
#
# The default list is real and on every machine: every identifier in the `.py` files of the
# Python standard library, in file order, a few million tokens with heavy repetition
# (`self`, `if`, `return`, ...). A word list works as well, e.g. the one
# `bash scripts/fetch-data.sh words` puts in `target/data/words`.

# %%
import argparse
import re
import sys
import sysconfig
import time
from pathlib import Path

import bloomery

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--lines", type=Path, help="a file with one key per line")
parser.add_argument("--limit", type=int, default=3_000_000, help="keys read at most")
parser.add_argument("--plot", type=Path, help="write the measured vs target plot here")
args = parser.parse_args([] if "ipykernel" in sys.modules else None)


def stdlib_identifiers(limit):
    """Identifiers of the standard library's source, in order, repeats included."""
    word = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
    out = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        try:
            out.extend(word.findall(path.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
        if len(out) >= limit:
            break
    return out[:limit]


if args.lines:
    keys = args.lines.read_text(encoding="utf-8", errors="surrogateescape").splitlines()[: args.limit]
    source = str(args.lines)
else:
    keys = stdlib_identifiers(args.limit)
    source = "identifiers of the Python standard library"
print(f"{len(keys):,} keys from {source}")

# %% [markdown]
# ## Deduplicate: first occurrences, in order, in bounded memory
#
# `add()` returns True when the key was new. A key that is a false positive of the filter
# returns False and is dropped: with a scalable filter that happens to fewer than `fpr` of the
# distinct keys however long the list, and the memory follows the distinct keys seen.

# %%
fpr = 1e-4
seen = bloomery.ScalableBloomFilter(10_000, fpr)
t0 = time.perf_counter()
unique = [k for k in keys if seen.add(k)]
took = time.perf_counter() - t0
exact = list(dict.fromkeys(keys))  # the exact answer, for comparison (holds every key)
dropped = len(exact) - len(unique)
print(
    f"kept {len(unique):,} of {len(keys):,} keys in {took:.2f} s; exact distinct: "
    f"{len(exact):,}; wrongly dropped {dropped} ({dropped / len(exact):.2e}, bound {fpr:g})"
)
print(f"filter: {seen.nbytes / 2**20:.2f} MiB in {seen.filters} sub-filters; {seen!r}")
assert dropped <= len(exact) * fpr * 3 + 3

# %% [markdown]
# ## Measured vs target false-positive rate
#
# Half of the distinct keys go into a filter sized for them; the other half and variants of
# it (upper case, `_` prefix, `2` suffix), never inserted, are the queries: every True is a
# false positive. `contains_many` answers them all in one
# call, with the GIL released.

# %%
half = len(exact) // 2
inserted = exact[:half]
members = set(inserted)
# more queries than keys, all real-looking and none inserted: the other half, and variants
queries = [q for k in exact[half:] for q in (k, k.upper(), "_" + k, k + "2") if q not in members]
targets = [0.1, 0.03, 0.01, 0.003, 0.001, 3e-4, 1e-4]
rows = []
for kind in ("blocked", "classic"):
    for p in targets:
        f = bloomery.BloomFilter(len(inserted), p, kind=kind)
        f.add_many(inserted)
        assert f.contains_many(inserted).all()  # no false negatives, ever
        measured = float(f.contains_many(queries).mean())
        rows.append((kind, p, measured, f.nbytes * 8 / len(inserted)))
print(f"{'kind':8} {'target':>8} {'measured':>9} {'ratio':>6} {'bits/key':>8}")
for kind, p, m, bpk in rows:
    print(f"{kind:8} {p:8.0e} {m:9.2e} {m / p:6.2f} {bpk:8.2f}")
print(f"({len(queries):,} queries each: a rate below ~{10 / len(queries):.0e} rests on few hits)")

# %%
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    plt = None
    print("matplotlib is not installed: no plot (pip install matplotlib)")
if plt is not None:
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    for kind, marker in (("blocked", "o"), ("classic", "s")):
        pts = [(p, m) for k, p, m, _ in rows if k == kind]
        ax.loglog([p for p, _ in pts], [m for _, m in pts], marker=marker, label=kind)
    ax.loglog(targets, targets, "k--", lw=1, label="target")
    ax.set_xlabel("target false-positive rate")
    ax.set_ylabel("measured false-positive rate")
    ax.set_title(f"{len(inserted):,} keys, {len(queries):,} queries")
    ax.legend()
    out = args.plot or Path("fpr.png")
    fig.savefig(out, dpi=120, bbox_inches="tight")
    print(f"plot: {out}")
