#!/usr/bin/env python3
"""Tests of scripts/check-imports.py: fixture crates written to a temporary directory, with and
without import cycles, and the layers of the library's io/ folder as ARCHITECTURE.md states
them. Run by CI (.ci/run) before the check itself:

    python3 scripts/check-imports-test.py
"""
import importlib.util
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "check-imports.py")
REPO = os.path.dirname(HERE)


def load_script():
    spec = importlib.util.spec_from_file_location("check_imports", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_crate(root, files):
    """A crate `root/c` with `src/<path>` -> text for each entry of `files`."""
    crate = os.path.join(root, "c")
    for path, text in files.items():
        full = os.path.join(crate, "src", path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))
    return crate


class Fixtures(unittest.TestCase):
    def run_check(self, files, *args):
        with tempfile.TemporaryDirectory() as root:
            crate = write_crate(root, files)
            p = subprocess.run([sys.executable, SCRIPT, *args, crate], capture_output=True,
                               text=True, cwd=root)
            return p.returncode, p.stdout + p.stderr

    def assert_cycle(self, files, where, cycle):
        code, out = self.run_check(files)
        self.assertEqual(code, 1, out)
        line = [l for l in out.splitlines() if where in l]
        self.assertEqual(len(line), 1, out)
        self.assertIn(f"cycle {cycle} ", line[0])

    def test_siblings_importing_each_other_fail_naming_the_cycle(self):
        self.assert_cycle({
            "lib.rs": "mod io;\n",
            "io/mod.rs": "mod a;\nmod b;\n",
            "io/a.rs": "use super::b::X;\npub struct A(X);\n",
            "io/b.rs": "pub struct X;\npub fn f() -> crate::io::a::A { todo!() }\n",
        }, "submodules of io", "a -> b -> a")

    def test_the_longer_cycle_is_named_in_order(self):
        self.assert_cycle({
            "lib.rs": "mod io;\n",
            "io/mod.rs": "mod a;\nmod b;\nmod c;\nmod d;\n",
            "io/a.rs": "use super::b::B;\n",
            "io/b.rs": "use self::super::c::C;\n",
            "io/c.rs": "use crate::io::{d::D, a::A};\n",
            "io/d.rs": "pub struct D;\n",
        }, "submodules of io", "a -> b -> c -> a")

    def test_a_path_through_the_folder_root_counts_for_its_defining_submodule(self):
        # b names A by io's re-export, a names X by io's private import of it: the edges are
        # b -> a and a -> b all the same
        self.assert_cycle({
            "lib.rs": "mod io;\n",
            "io/mod.rs": "mod a;\nmod b;\npub use self::a::A;\nuse b::X as Y;\n",
            "io/a.rs": "use super::Y;\npub struct A;\n",
            "io/b.rs": "use super::A;\npub struct X;\n",
        }, "submodules of io", "a -> b -> a")

    def test_nested_folders_and_super_super(self):
        # io/deep/x.rs reaches io/fmt.rs two levels up; io/fmt.rs names io/deep/x.rs
        self.assert_cycle({
            "lib.rs": "mod io;\n",
            "io/mod.rs": "mod deep;\nmod fmt;\n",
            "io/deep/mod.rs": "pub mod x;\n",
            "io/deep/x.rs": "use super::super::fmt::F;\npub struct C;\n",
            "io/fmt.rs": "pub struct F(crate::io::deep::x::C);\n",
        }, "submodules of io", "deep -> fmt -> deep")

    def test_a_folder_beside_its_root_file(self):
        # io.rs + io/ (no mod.rs)
        self.assert_cycle({
            "lib.rs": "mod io;\n",
            "io.rs": "mod a;\nmod b;\n",
            "io/a.rs": "use super::b::B;\n",
            "io/b.rs": "use super::a::A;\n",
        }, "submodules of io", "a -> b -> a")

    def test_top_level_cycles_are_still_found(self):
        self.assert_cycle({
            "lib.rs": "mod x;\nmod y;\n",
            "x.rs": "use crate::y::Y;\npub struct X;\n",
            "y.rs": "pub struct Y(crate::x::X);\n",
        }, "top-level modules", "x -> y -> x")

    def test_layers_tests_comments_and_strings_pass(self):
        code, out = self.run_check({
            "lib.rs": "mod io;\n",
            "io/mod.rs": "mod a;\nmod b;\npub use a::A;\n",
            "io/a.rs": """\
                // super::b is named in a comment, "super::b::X" in a string
                /* crate::io::b::X */
                pub struct A;
                const S: &str = "crate::io::b";
                #[cfg(test)]
                mod tests {
                    use super::super::b::X;
                }
                #[cfg(test)]
                mod more;
                """,
            "io/a/more.rs": "use crate::io::b::X;\n",
            "io/b.rs": "use super::a::A;\npub struct X(A);\n",
        })
        self.assertEqual(code, 0, out)
        self.assertIn("no import cycles", out)

    def test_an_exempted_crate_is_reported_not_failed(self):
        files = {
            "lib.rs": "mod io;\n",
            "io/mod.rs": "mod a;\nmod b;\n",
            "io/a.rs": "use super::b::B;\n",
            "io/b.rs": "use super::a::A;\n",
        }
        with tempfile.TemporaryDirectory() as root:
            crate = write_crate(root, files)
            p = subprocess.run([sys.executable, SCRIPT, "--exempt", crate, "--why", crate],
                               capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("cycle a -> b -> a", p.stdout)
        self.assertIn(os.path.join("io", "a.rs") + ":1", p.stdout)  # --why: the line of the edge
        self.assertIn("exempted", p.stdout)


class LibraryIo(unittest.TestCase):
    # ARCHITECTURE.md: "io/ layered, each module importing only those before it"
    ORDER = ["fs", "temp", "header", "late_head", "stream", "compress", "format", "mapped"]

    def test_io_imports_only_the_layers_before_each_module(self):
        src = os.path.join(REPO, "crates", "bloomery", "src")
        graphs = load_script().folder_graphs(src)
        graph, why = graphs[("io",)]
        rank = {m: i for i, m in enumerate(self.ORDER)}
        # the layers a module of io/ may use: fs, temp and header are the bottom, side by side
        bottom = rank["header"]
        seen = 0
        for a, targets in graph.items():
            for b in targets:
                if a not in rank or b not in rank:
                    continue
                seen += 1
                self.assertTrue(rank[b] < rank[a] or (rank[a] <= bottom and rank[b] <= bottom),
                                f"io: {a} -> {b} goes up the layers ({sorted(why[(a, b)])})")
        self.assertGreater(seen, 5, "the io graph was read (edges between its layers)")


if __name__ == "__main__":
    unittest.main(verbosity=2)
