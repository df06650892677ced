#!/usr/bin/env python3
"""Check the import graph of each crate: between its top-level modules, and between the
submodules of each folder module.

A top-level module is a file `src/<m>.rs` or a folder `src/<m>/` of a crate. An edge m -> n is
a path `crate::n...` in any file of m, or a path through the crate root's re-exports
(`crate::Name`, or `crate::facade::Name` where `facade` is a module written inline in lib.rs
that only re-exports) resolved to the module that defines `Name`. Test code (`#[cfg(test)]`
items and the files of `#[cfg(test)] mod x;`) is left out: tests may use any layer, as
dev-dependencies may.

Inside a folder module `d/` (at any depth: `src/io/`, `src/io/compress/`) the nodes are its
submodules, the files `d/<s>.rs` and folders `d/<s>/` beside `d/mod.rs` (or `d.rs`). An edge
s -> t is a path from a file of s to t: `crate::...::d::t`, `super::t`, `super::super::...`,
`self::t` resolved against the file's own module path, or `d::Name` (`super::Name`) where d's
root imports `Name` from t (`pub use t::Name`, or a private `use`, which submodules see
too). The root file itself is no node (as lib.rs is none). Inline modules other than test
modules are read as part of their file (a `super::` inside one is resolved as if outside).

Checks, per crate:
- cycles between the top-level modules, and between the submodules of every folder: each
  strongly connected group of more than one module is printed with its edges and one cycle
  through it (`a -> b -> a`);
- paths through the root: a module that names an item by its re-export (`crate::Name`,
  `crate::facade::Name`) instead of its defining module is printed (it hides the real edge).
Exits 1 if any of these finds anything outside the exempted crates.

Usage: scripts/check-imports.py [--exempt CRATE_DIR]... [--why] [crate dirs...]
  (default: crates/* and benches)
  --exempt DIR   report DIR's findings but do not fail on them
  --why          print, for each edge of a cycle, the lines that make it
Its own test: scripts/check-imports-test.py (fixture crates in a temporary directory).
"""
import glob
import os
import re
import sys

PATH = re.compile(r"\bcrate::((?:\w+::)*)(\w+|\{)")
USE = re.compile(r"\buse\s+crate::(\{.*?\}|[^;]*);", re.S)
ROOT_USE = re.compile(r"(?m)^\s*pub(?:\([a-z]+\))?\s+use\s+([^;]*);")
INLINE_MOD = re.compile(r"(?m)^\s*pub\s+mod\s+(\w+)\s*\{")
# `#[cfg(test)]`, `#[cfg(all(test, feature = ".."))]`: test-only (not `not(test)`, not `any(..)`);
# `#[cfg(doc)]`: what only documentation links name, not a dependency of the code.
TEST_ATTR = r"#\[cfg\((?:test|doc|all\((?:[^()\]]|\([^()]*\))*?(?<!not\()\btest\b(?:[^()\]]|\([^()]*\))*\))\)\]"
CFG_TEST = re.compile(TEST_ATTR + r"\s*(?:#\[[^\]]*\]\s*)*")
TEST_MOD_DECL = re.compile(TEST_ATTR + r"\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([a-z]+\))?\s+)?mod\s+(\w+)\s*;")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def strip_comments_and_literals(text):
    """Comments, strings and char literals out, so that braces and `crate::` in them do not count."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            out.append('""')
            i = n if j < 0 else j + len(end)
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            out.append('""')
            i += 1
        elif c == "'":
            m = re.match(r"'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'", text[i:])
            if m:
                out.append("' '")
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def item_end(text, start):
    """End of the item that begins at `start`: its `;` or its matching `}`."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == ";" and depth == 0:
            return i + 1
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def strip_test_items(text):
    out, pos = [], 0
    for m in CFG_TEST.finditer(text):
        if m.start() < pos:
            continue
        out.append(text[pos:m.start()])
        pos = item_end(text, m.end())
    out.append(text[pos:])
    return "".join(out)


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


def use_paths(tree, prefix=()):
    """Every full path of a use tree: `a::{b, c::d}` -> (a, b), (a, c, d)."""
    tree = tree.strip()
    if not tree:
        return []
    if tree.startswith("{"):
        return [p for part in split_top(tree[1:-1]) for p in use_paths(part, prefix)]
    tree = re.sub(r"\s+as\s+\w+$", "", tree)
    m = re.match(r"(\w+|\*)\s*(::\s*)?(.*)$", tree, re.S)
    if not m:
        return []
    head, rest = m.group(1), m.group(3)
    if m.group(2) and rest:
        return use_paths(rest, prefix + (head,))
    return [prefix + (head,)]


def root_names(lib_text, modules):
    """Re-exports of the crate root and of its inline facade modules.

    Returns {name: module} for `crate::Name` and {facade: {name: module}} for
    `crate::facade::Name` (a glob re-export maps the facade's every name to its module, "*").
    """
    def exports(text):
        out = {}
        for m in ROOT_USE.finditer(text):
            tree = m.group(1).replace("crate::", "")
            for path in use_paths(tree):
                if path[0] not in modules:
                    continue
                alias = re.findall(r"\b" + re.escape(path[-1]) + r"\s+as\s+(\w+)", tree)
                out[alias[0] if alias else path[-1]] = path[0]
        return out

    facades, spans = {}, []
    for m in INLINE_MOD.finditer(lib_text):
        end = item_end(lib_text, m.end() - 1)
        facades[m.group(1)] = exports(lib_text[m.end():end])
        spans.append((m.start(), end))
    top = lib_text
    for a, b in reversed(spans):
        top = top[:a] + top[b:]
    return exports(top), facades


def module_files(src):
    modules = {}
    for entry in sorted(os.listdir(src)):
        path = os.path.join(src, entry)
        if entry in ("lib.rs", "main.rs"):
            continue
        if entry.endswith(".rs"):
            modules.setdefault(entry[:-3], []).append(path)
        elif os.path.isdir(path):
            files = glob.glob(os.path.join(path, "**", "*.rs"), recursive=True)
            modules.setdefault(entry, []).extend(sorted(files))
    return modules


def test_files(files):
    """Files declared `#[cfg(test)] mod x;` by another file of the list."""
    out = set()
    for f in files:
        text = strip_comments_and_literals(read(f))
        base = os.path.dirname(f)
        stem = os.path.basename(f)[:-3]
        if stem not in ("mod", "lib", "main"):
            base = os.path.join(base, stem)
        for name in TEST_MOD_DECL.findall(text):
            out.add(os.path.join(base, name + ".rs"))
            out.add(os.path.join(base, name, "mod.rs"))
    return out


def crate_graph(src):
    """(graph, why, root_paths): edges, the lines behind each edge, paths through the root."""
    modules = module_files(src)
    lib = os.path.join(src, "lib.rs")
    if not os.path.exists(lib):
        lib = os.path.join(src, "main.rs")
    lib_text = strip_comments_and_literals(read(lib)) if os.path.exists(lib) else ""
    root, facades = root_names(lib_text, modules)
    graph = {m: set() for m in modules}
    why = {}
    root_paths = []
    for m, files in modules.items():
        tests = test_files(files)
        for f in files:
            if f in tests:
                continue
            text = strip_test_items(strip_comments_and_literals(read(f)))
            # A `use crate::{a::x, b::y}` group counts each of its paths.
            paths = []
            for u in USE.finditer(text):
                line = text.count("\n", 0, u.start()) + 1
                paths += [(p, line) for p in use_paths(u.group(1))]
            for p in PATH.finditer(text):
                segs = tuple(s for s in p.group(1).split("::") if s) + (p.group(2),)
                if segs[-1] == "{":
                    segs = segs[:-1]
                if segs:
                    paths.append((segs, text.count("\n", 0, p.start()) + 1))
            for segs, line in paths:
                target, via_root = None, False
                if segs[0] in modules:
                    target = segs[0]
                elif segs[0] in facades and len(segs) > 1:
                    target = facades[segs[0]].get(segs[1])
                    via_root = True
                elif segs[0] in root:
                    target = root[segs[0]]
                    via_root = True
                if via_root and target:
                    root_paths.append(f"{f}:{line}: crate::{'::'.join(segs)}")
                if target and target != m:
                    graph[m].add(target)
                    why.setdefault((m, target), set()).add(f"{f}:{line}")
    return graph, why, sorted(set(root_paths))


REL_USE = re.compile(r"\buse\s+((?:crate|super|self)\s*::[^;]*);", re.S)
REL_PATH = re.compile(r"(?<![\w$])(crate|super|self)((?:\s*::\s*(?:super|\w+))+)")
# any `use` of a folder root: its submodules may name what even a private one imports
REEXPORT = re.compile(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]*);")


def module_path(src, f):
    """The module path of file `f`: src/io/format.rs -> (io, format); src/io/mod.rs -> (io,)."""
    parts = os.path.relpath(f, src)[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def absolute(mod, segs):
    """A `crate::`/`super::`/`self::` path as a path from the crate root (None if above it)."""
    segs = list(segs)
    if segs[0] == "crate":
        return tuple(segs[1:])
    base = list(mod)
    if segs[0] == "self":
        segs = segs[1:]
    while segs and segs[0] == "super":
        if not base:
            return None
        base.pop()
        segs = segs[1:]
    return tuple(base + segs)


def relative_paths(text):
    """(segments, line) of every `crate::`, `super::` and `self::` path of a file's text."""
    out = []
    for u in REL_USE.finditer(text):
        line = text.count("\n", 0, u.start()) + 1
        out += [(p, line) for p in use_paths(u.group(1))]
    for p in REL_PATH.finditer(text):
        segs = (p.group(1),) + tuple(s.strip() for s in p.group(2).split("::") if s.strip())
        out.append((segs, text.count("\n", 0, p.start()) + 1))
    return out


def folders(src):
    """{module path: (root file, {submodule: [files]})} of every folder module under src."""
    out = {}
    for d, dirs, _ in os.walk(src):
        dirs.sort()
        if d == src:
            continue
        root = os.path.join(d, "mod.rs")
        if not os.path.exists(root):
            root = d + ".rs"
        if not os.path.exists(root):
            continue
        subs = {}
        for entry in sorted(os.listdir(d)):
            path = os.path.join(d, entry)
            if entry.endswith(".rs") and entry != "mod.rs":
                subs.setdefault(entry[:-3], []).append(path)
            elif os.path.isdir(path):
                files = glob.glob(os.path.join(path, "**", "*.rs"), recursive=True)
                subs.setdefault(entry, []).extend(sorted(files))
        out[module_path(src, os.path.join(d, "mod.rs"))] = (root, subs)
    return out


def folder_reexports(root_text, folder, subs):
    """{Name: submodule} for the `use` lines of a folder's root that name a submodule."""
    out = {}
    for m in REEXPORT.finditer(root_text):
        tree = m.group(1)
        for path in use_paths(tree):
            if path[0] in ("crate", "super", "self"):
                path = absolute(folder, path)
                if not path or path[: len(folder)] != folder:
                    continue
                path = path[len(folder):]
            if len(path) < 2 or path[0] not in subs or path[-1] == "*":
                continue
            alias = re.findall(r"\b" + re.escape(path[-1]) + r"\s+as\s+(\w+)", tree)
            out[alias[0] if alias else path[-1]] = path[0]
    return out


def folder_graphs(src):
    """{folder: (graph, why)}: the edges between the submodules of each folder module."""
    all_files = glob.glob(os.path.join(src, "**", "*.rs"), recursive=True)
    tests = test_files(all_files)
    texts = {}
    for f in all_files:
        if f not in tests:
            texts[f] = strip_test_items(strip_comments_and_literals(read(f)))
    paths = {f: [(absolute(module_path(src, f), segs), line) for segs, line in relative_paths(t)]
             for f, t in texts.items()}
    out = {}
    for folder, (root, subs) in folders(src).items():
        names = folder_reexports(texts.get(root, ""), folder, subs)
        graph = {s: set() for s in subs}
        why = {}
        k = len(folder)
        for s, files in subs.items():
            for f in files:
                for target, line in paths.get(f, []):
                    if not target or len(target) <= k or target[:k] != folder:
                        continue
                    t = target[k] if target[k] in subs else names.get(target[k])
                    if t and t != s:
                        graph[s].add(t)
                        why.setdefault((s, t), set()).add(f"{f}:{line}")
        out[folder] = (graph, why)
    return out


def one_cycle(graph, comp):
    """A shortest cycle through the first module of a strongly connected group: [a, b, ..., a]."""
    start, members = comp[0], set(comp)
    prev, queue = {start: None}, [start]
    for v in queue:
        for w in sorted(graph[v]):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return path[::-1] + [start]
            if w in members and w not in prev:
                prev[w] = v
                queue.append(w)
    return comp + [start]



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


def report_cycles(where, graph, why, show_why):
    """Print the cycles of one graph; True if there is one."""
    comps = cycles(graph)
    for comp in comps:
        edges = [f"{a} -> {b}" for a in comp for b in sorted(graph[a]) if b in comp]
        print(f"{where}: cycle {' -> '.join(one_cycle(graph, comp))} "
              f"(among {', '.join(comp)}: {'; '.join(edges)})")
        if show_why:
            for a in comp:
                for b in sorted(graph[a]):
                    if b in comp:
                        print(f"  {a} -> {b}: {', '.join(sorted(why[(a, b)]))}")
    return bool(comps)


def main(argv):
    exempt, crates, show_why = set(), [], False
    i = 0
    while i < len(argv):
        if argv[i] == "--exempt":
            exempt.add(os.path.normpath(argv[i + 1]))
            i += 2
        elif argv[i] == "--why":
            show_why = True
            i += 1
        else:
            crates.append(argv[i])
            i += 1
    crates = crates or sorted(glob.glob("crates/*")) + ["benches"]
    failed = False
    for c in crates:
        src = os.path.join(c, "src")
        if not os.path.isdir(src):
            continue
        graph, why, root_paths = crate_graph(src)
        found = report_cycles(f"{c}: top-level modules", graph, why, show_why)
        for folder, (graph, why) in sorted(folder_graphs(src).items()):
            where = f"{c}: submodules of {'::'.join(folder)} ({os.path.join(src, *folder)}/)"
            found |= report_cycles(where, graph, why, show_why)
        for p in root_paths:
            found = True
            print(f"{c}: through the crate root, not the defining module: {p}")
        if found and os.path.normpath(c) in exempt:
            print(f"{c}: exempted (--exempt): reported, not failed")
        elif found:
            failed = True
    if not failed:
        print("no import cycles between the top-level modules of a crate or the submodules of a"
              " folder module, no paths through a crate root"
              + (f" (exempted: {', '.join(sorted(exempt))})" if exempt else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
