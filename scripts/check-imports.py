#!/usr/bin/env python3
"""Report import cycles between the top-level modules of each crate.

A top-level module is a file `src/<m>.rs` or a folder `src/<m>/` of a crate. An edge m -> n is
a `use crate::n...` (or `crate::Name` that the crate root re-exports from n) in any file of m.
Prints every strongly connected group of more than one module, per crate; exits 1 if any.
Usage: scripts/check-imports.py [crate dirs...]   (default: crates/*)
"""
import glob
import os
import re
import sys

USE = re.compile(r"\buse\s+crate::(\{.*?\}|[^;]*);", re.S)
ROOT_USE = re.compile(r"^\s*pub(?:\([a-z]+\))?\s+use\s+([^;]*);", re.S | re.M)
PATH = re.compile(r"\bcrate::(\w+)")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def split_top(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def heads(tree):
    """First path segments of a use tree (`a::b`, `{a, b::c}`, `self`)."""
    tree = tree.strip()
    if tree.startswith("{"):
        return [h for part in split_top(tree[1:-1]) for h in heads(part)]
    m = re.match(r"(\w+)", tree)
    return [m.group(1)] if m else []


def root_reexports(lib_text, modules):
    """Name re-exported at the crate root -> the top-level module it comes from."""
    out = {}
    for m in ROOT_USE.finditer(lib_text):
        tree = m.group(1).replace("crate::", "").strip()
        first = heads(tree)
        if not first or first[0] not in modules:
            continue
        for name in re.findall(r"(\w+)\s*(?:,|\}|$)", tree):
            out.setdefault(name, first[0])
        for name in re.findall(r"\bas\s+(\w+)", tree):
            out[name] = first[0]
    return out


def crate_graph(src):
    modules = {}
    for entry in sorted(os.listdir(src)):
        path = os.path.join(src, entry)
        if entry in ("lib.rs", "main.rs"):
            continue
        if entry.endswith(".rs"):
            modules[entry[:-3]] = [path]
        elif os.path.isdir(path):
            files = glob.glob(os.path.join(path, "**", "*.rs"), recursive=True)
            modules.setdefault(entry, []).extend(files)
    lib = os.path.join(src, "lib.rs")
    if not os.path.exists(lib):
        lib = os.path.join(src, "main.rs")
    reexp = root_reexports(strip_comments(open(lib).read()), modules) if os.path.exists(lib) else {}
    graph = {m: set() for m in modules}
    for m, files in modules.items():
        for f in files:
            text = strip_comments(open(f, encoding="utf-8").read())
            names = set()
            for u in USE.finditer(text):
                names.update(heads(u.group(1)))
            names.update(PATH.findall(text))
            for n in names:
                target = n if n in modules else reexp.get(n)
                if target and target != m:
                    graph[m].add(target)
    return graph


def cycles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    crates = sys.argv[1:] or sorted(glob.glob("crates/*")) + ["benches"]
    found = False
    for c in crates:
        src = os.path.join(c, "src")
        if not os.path.isdir(src):
            continue
        graph = crate_graph(src)
        for comp in cycles(graph):
            found = True
            edges = [f"{a} -> {b}" for a in comp for b in sorted(graph[a]) if b in comp]
            print(f"{c}: cycle among {', '.join(comp)}: {'; '.join(edges)}")
    if not found:
        print("no import cycles between top-level modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
