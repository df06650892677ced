//! `bloomery xml index|query` through the real binary: Breadth and Depth Bloom filters over
//! small XML documents written here (Salman §6-7).

use std::path::{Path, PathBuf};

use predicates::prelude::*;
use tempfile::TempDir;

mod common;
use common::bloomery_no_color as bloomery;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, text).unwrap();
    p
}

/// Salman §7's tree (paths /A/B/D and /A/C/E) and a second document with a/b/c/d and a/x/m/n.
fn corpus(dir: &Path) -> PathBuf {
    let docs = dir.join("docs");
    write(
        &docs,
        "one.xml",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE A SYSTEM \"a.dtd\">\n\
         <A id=\"1\"><B><D>x</D><D/></B><C><E/></C></A>\n",
    );
    write(
        &docs,
        "sub/two.xml",
        "<a><b><c><d/></c></b><x><m><n/></m></x></a>",
    );
    write(&docs, "notes.txt", "not xml, not indexed <");
    docs
}

fn index(dir: &Path, kind: &str) -> PathBuf {
    let out = dir.join(format!("idx.{kind}"));
    bloomery()
        .args(["xml", "index"])
        .arg(corpus(dir))
        .arg("-o")
        .arg(&out)
        .args(["--kind", kind, "-p", "1e-6"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "indexed 2 documents: 13 elements, 4 distinct root-to-leaf paths, depth 4",
        ));
    out
}

fn query(f: &Path, paths: &[&str]) -> (Option<i32>, Vec<String>) {
    let out = bloomery()
        .args(["xml", "query"])
        .arg(f)
        .args(paths)
        .output()
        .unwrap();
    let lines = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    (out.status.code(), lines)
}

/// Queries true of the corpus: root, partial and ancestor-descendant paths.
const TRUE: &[&str] = &[
    "/A", "/A/B/D", "/A/C/E", "B/D", "C", "//E", "A//E", "/A//D", "/a/b/c/d", "b/c", "a//n",
    "/a/x//n", "x/m/n", "a//b//d",
];

#[test]
fn bbf_matches_every_true_path_and_shows_the_level_false_positive() {
    let dir = TempDir::new().unwrap();
    let f = index(dir.path(), "bbf");
    let (code, lines) = query(&f, TRUE);
    assert_eq!(
        (code, lines),
        (Some(0), TRUE.iter().map(|s| s.to_string()).collect())
    );
    // Salman §7: C is at level 2 and D at level 3, so the BBF accepts /A/C/D (and a/b//m/n)
    let (_, lines) = query(&f, &["/A/C/D", "a/b//m/n"]);
    assert_eq!(lines, ["/A/C/D", "a/b//m/n"]);
    // what it rejects for certain: exit 1, nothing printed
    let absent = ["/B", "/A/D", "D/A", "Z", "/A/B/D/E", "n//a", "B//C"];
    assert_eq!(query(&f, &absent), (Some(1), vec![]));
    // -v prints them, -c counts
    let out = bloomery()
        .args(["xml", "query", "-v"])
        .arg(&f)
        .args(["/B", "/A/B"])
        .assert()
        .success();
    out.stdout("/B\n");
    bloomery()
        .args(["xml", "query", "-c"])
        .arg(&f)
        .args(["/A", "/B", "C"])
        .assert()
        .success()
        .stdout("2\n");
    bloomery()
        .args(["info"])
        .arg(&f)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bbf"));
}

#[test]
fn dbf_matches_every_true_path_and_shows_the_split_false_positive() {
    let dir = TempDir::new().unwrap();
    let f = index(dir.path(), "dbf");
    let (code, lines) = query(&f, TRUE);
    assert_eq!(
        (code, lines),
        (Some(0), TRUE.iter().map(|s| s.to_string()).collect())
    );
    // Salman §7: a/b//m/n is split into a/b and m/n, both present: a false match
    assert_eq!(query(&f, &["a/b//m/n"]), (Some(0), vec!["a/b//m/n".into()]));
    // the DBF does not mix levels: /A/C/D is rejected (the BBF's false positive)
    assert_eq!(
        query(&f, &["/A/C/D", "/B/D", "b/m", "/x/m"]),
        (Some(1), vec![])
    );
    // a capped DBF (paths of at most one edge) still has no false negative
    let capped = dir.path().join("capped.dbf");
    bloomery()
        .args(["xml", "index"])
        .arg(dir.path().join("docs"))
        .arg("-o")
        .arg(&capped)
        .args(["--kind", "dbf", "--max-path-length", "1", "-p", "1e-6"])
        .assert()
        .success();
    assert_eq!(query(&capped, TRUE).1.len(), TRUE.len());
}

#[test]
fn errors_exit_2() {
    let dir = TempDir::new().unwrap();
    let good = write(dir.path(), "good.xml", "<r><s/></r>");
    let bad = write(dir.path(), "bad.xml", "<r>\n  <s></t>\n</r>");
    let out = dir.path().join("o.bbf");
    // malformed XML names the file and the position; nothing is written
    bloomery()
        .args(["xml", "index"])
        .arg(&good)
        .arg(&bad)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("bad.xml")
                .and(predicate::str::contains("not well-formed"))
                .and(predicate::str::contains("2:")),
        );
    assert!(!out.exists());
    for (args, what) in [
        (vec![dir.path().join("missing.xml")], "cannot read"),
        (vec![dir.path().join("empty")], "no *.xml"),
    ] {
        std::fs::create_dir_all(dir.path().join("empty")).unwrap();
        bloomery()
            .args(["xml", "index"])
            .args(&args)
            .arg("-o")
            .arg(&out)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(what));
    }
    bloomery()
        .args(["xml", "index"])
        .arg(&good)
        .arg("-o")
        .arg(&out)
        .args(["-p", "1.5"])
        .assert()
        .code(2);
    bloomery()
        .args(["xml", "index", "--kind", "bbf", "--max-path-length", "2"])
        .arg(&good)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2);
    bloomery()
        .args(["xml", "index"])
        .arg(&good)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    // no overwrite without --force
    bloomery()
        .args(["xml", "index"])
        .arg(&good)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--force"));
    // malformed path queries: an error before any output
    for q in ["a///b", "", "a/", "/"] {
        bloomery()
            .args(["xml", "query"])
            .arg(&out)
            .args(["/r", q])
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains("bad path query"));
    }
    // not a path filter
    let blocked = dir.path().join("b.bloom");
    bloomery()
        .arg("create")
        .arg(&blocked)
        .args(["-n", "10", "-p", "0.01"])
        .assert()
        .success();
    bloomery()
        .args(["xml", "query"])
        .arg(&blocked)
        .arg("/r")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("needs a bbf or dbf file"));
    // a corrupted filter file
    let mut bytes = std::fs::read(&out).unwrap();
    let n = bytes.len();
    bytes[n - 20] ^= 1;
    std::fs::write(&out, bytes).unwrap();
    bloomery()
        .args(["xml", "query"])
        .arg(&out)
        .arg("/r")
        .assert()
        .code(2);
}
