//! The counting kinds through the real binary: create, add, count, remove, check, info.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use predicates::prelude::*;
use tempfile::TempDir;

mod common;
use common::{bloomery_no_color as bloomery, info_json as info};

const KINDS: &[(&str, &[&str])] = &[
    (
        "counting",
        &["-n", "2000", "-p", "0.01", "--counter-bits", "8"],
    ),
    (
        "blocked-counting",
        &["-n", "2000", "-p", "0.01", "--counter-bits", "8"],
    ),
    (
        "dlcbf",
        &["-n", "2000", "-p", "0.01", "--counter-bits", "8"],
    ),
    ("spectral", &["-n", "2000", "-p", "0.01", "--method", "ms"]),
    ("cms", &["--width", "2000", "--depth", "4"]),
    ("ibf", &["-n", "2000", "-p", "0.01", "--repeat-cap", "100k"]),
    ("scbf", &["-n", "2000", "-p", "0.01", "--groups", "8"]),
];

fn create(dir: &Path, kind: &str, args: &[&str]) -> PathBuf {
    common::create(
        dir,
        &format!("{kind}.bf"),
        &[&["--kind", kind], args].concat(),
    )
}

/// Key i appears (i % 7) + 1 times.
fn multiset() -> (String, HashMap<String, u64>) {
    let mut s = String::new();
    let mut truth = HashMap::new();
    for i in 0..300u32 {
        let k = format!("key-{i}");
        let c = u64::from(i % 7) + 1;
        for _ in 0..c {
            s.push_str(&k);
            s.push('\n');
        }
        truth.insert(k, c);
    }
    (s, truth)
}

fn counts(p: &Path, input: &str) -> HashMap<String, u64> {
    let out = bloomery()
        .arg("count")
        .arg(p)
        .write_stdin(input)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| {
            let (n, k) = l.split_once('\t').expect("estimate<TAB>line");
            (k.to_string(), n.parse().unwrap())
        })
        .collect()
}

#[test]
fn every_kind_creates_adds_counts_and_reports() {
    let dir = TempDir::new().unwrap();
    let (input, truth) = multiset();
    let keys: String = truth.keys().map(|k| format!("{k}\n")).collect();
    for (kind, args) in KINDS {
        let p = create(dir.path(), kind, args);
        bloomery()
            .arg("add")
            .arg(&p)
            .write_stdin(input.clone())
            .assert()
            .success();
        let got = counts(&p, &keys);
        assert_eq!(got.len(), truth.len(), "{kind}");
        // every inserted key is present (no false negatives)
        assert!(got.values().all(|&n| n > 0), "{kind}: a count of 0");
        if matches!(
            *kind,
            "counting" | "blocked-counting" | "cms" | "spectral" | "dlcbf"
        ) {
            for (k, &c) in &truth {
                assert!(got[k] >= c, "{kind}: {k} counted {} < {c}", got[k]);
            }
        }
        // check: present when the count is above 0
        bloomery()
            .args(["check", "-c"])
            .arg(&p)
            .write_stdin(keys.clone())
            .assert()
            .code(0)
            .stdout("300\n");
        let i = info(&p);
        assert_eq!(i["kind"], *kind);
        assert!(i["bits_per_item"].as_f64().unwrap() > 0.0);
        // the rate now, from the contents, for the kinds sized by a rate
        if let Some(now) = i["current_fpr"].as_f64() {
            // every kind sized by -n/-p (cms is sized by its error bounds)
            assert!(*kind != "cms", "{kind}");
            assert!((0.0..1.0).contains(&now), "{kind}: {now}");
            assert_eq!(i["target_fpr"].as_f64(), Some(0.01), "{kind}");
        } else {
            assert!(
                i["current_fpr"].is_null() && i["target_fpr"].is_null(),
                "{kind}"
            );
        }
        match *kind {
            "counting" | "blocked-counting" => {
                assert_eq!(i["saturated_counters"], 0);
                assert_eq!(i["counter_bits"], 8);
            }
            "ibf" => {
                let a = i["distinctness"].as_f64().unwrap();
                assert!(a > 0.0 && a <= 1.0);
            }
            "scbf" => assert_eq!(i["groups"], 8),
            "cms" => {
                assert_eq!(i["width"], 2000);
                assert_eq!(i["depth"], 4);
            }
            "spectral" => assert_eq!(i["method"], "ms"),
            _ => {}
        }
        bloomery()
            .arg("info")
            .arg(&p)
            .assert()
            .success()
            .stdout(predicate::str::contains(*kind));
    }
}

#[test]
fn remove_decrements_and_reports_absent_lines() {
    let dir = TempDir::new().unwrap();
    let (input, truth) = multiset();
    for kind in ["counting", "blocked-counting", "dlcbf", "spectral"] {
        let args = KINDS.iter().find(|(k, _)| *k == kind).unwrap().1;
        let p = create(dir.path(), kind, args);
        bloomery()
            .arg("add")
            .arg(&p)
            .write_stdin(input.clone())
            .assert()
            .success();
        // remove every occurrence of key-6 (7 times) and key-0 once
        let rm = "key-6\n".repeat(7) + "key-0\n";
        bloomery()
            .arg("remove")
            .arg(&p)
            .write_stdin(rm)
            .assert()
            .code(0);
        let got = counts(&p, "key-6\nkey-0\nkey-1\n");
        if kind != "spectral" {
            assert_eq!(got["key-6"], 0, "{kind}");
            assert_eq!(got["key-0"], 0, "{kind}");
        }
        assert!(got["key-1"] >= truth["key-1"], "{kind}");
        // an absent line is refused on stderr, the rest still removed, status 1
        let before = std::fs::read(&p).unwrap();
        bloomery()
            .arg("remove")
            .arg(&p)
            .write_stdin("never-inserted-xyz\nkey-1\n")
            .assert()
            .code(1)
            .stderr(predicate::str::contains("line 1: not present"));
        assert_ne!(
            std::fs::read(&p).unwrap(),
            before,
            "{kind}: key-1 was removed"
        );
        let got = counts(&p, "key-1\n");
        assert!(got["key-1"] >= truth["key-1"] - 1, "{kind}");
    }
}

#[test]
fn remove_is_refused_where_deletion_does_not_exist() {
    let dir = TempDir::new().unwrap();
    let mi = create(
        dir.path(),
        "spectral",
        &["-n", "100", "-p", "0.01", "--method", "mi"],
    );
    let mut files = vec![mi];
    for (kind, args) in KINDS {
        if matches!(*kind, "cms" | "ibf" | "scbf") {
            files.push(create(dir.path(), kind, args));
        }
    }
    files.push({
        let p = dir.path().join("set.bf");
        bloomery()
            .arg("create")
            .arg(&p)
            .args(["-n", "100", "-p", "0.01"])
            .assert()
            .success();
        p
    });
    for p in files {
        bloomery()
            .arg("add")
            .arg(&p)
            .write_stdin("a\n")
            .assert()
            .success();
        let before = std::fs::read(&p).unwrap();
        bloomery()
            .arg("remove")
            .arg(&p)
            .write_stdin("a\n")
            .assert()
            .code(2)
            .stderr(
                predicate::str::contains("cannot remove")
                    .and(predicate::str::is_match("^[^\n]*\n$").unwrap()),
            );
        assert_eq!(std::fs::read(&p).unwrap(), before, "file unchanged");
    }
}

#[test]
fn count_on_a_set_filter_prints_one_or_zero() {
    let dir = TempDir::new().unwrap();
    let p = dir.path().join("set.bf");
    bloomery()
        .arg("create")
        .arg(&p)
        .args(["-n", "1000", "-p", "0.0001"])
        .assert()
        .success();
    bloomery()
        .arg("add")
        .arg(&p)
        .write_stdin("a\nb\n")
        .assert()
        .success();
    bloomery()
        .arg("count")
        .arg(&p)
        .write_stdin("a\nzzz-absent\n")
        .assert()
        .success()
        .stdout("1\ta\n0\tzzz-absent\n");
}

#[test]
fn counting_without_saturation_never_undercounts_and_saturation_is_reported() {
    let dir = TempDir::new().unwrap();
    for kind in ["counting", "blocked-counting"] {
        let p = create(
            dir.path(),
            kind,
            &["-n", "100", "-p", "0.01", "--counter-bits", "2"],
        );
        bloomery()
            .arg("add")
            .arg(&p)
            .write_stdin("x\n".repeat(10))
            .assert()
            .success();
        assert_eq!(counts(&p, "x\n")["x"], 3, "{kind}: saturates at 2^2 - 1");
        assert!(info(&p)["saturated_counters"].as_u64().unwrap() > 0);
        // saturated counters are never decremented: x stays present after 10 removes
        bloomery()
            .arg("remove")
            .arg(&p)
            .write_stdin("x\n".repeat(10))
            .assert()
            .code(0);
        assert_eq!(counts(&p, "x\n")["x"], 3, "{kind}");
    }
}

#[test]
fn blocked_counting_refuses_huge_sizes_and_bad_widths() {
    let dir = TempDir::new().unwrap();
    for args in [
        &["-n", "1000000000000000", "-p", "0.0001"][..],
        &["-n", "10", "-p", "0.1", "--counter-bits", "33"][..],
        &["--bits", "100"][..],
    ] {
        let p = dir.path().join("huge.bf");
        let out = bloomery()
            .arg("create")
            .arg(&p)
            .args(["--kind", "blocked-counting"])
            .args(args)
            .assert()
            .code(2);
        let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(!p.exists(), "{args:?}");
    }
}

#[test]
fn bad_parameters_fail_with_one_line_and_status_2() {
    let dir = TempDir::new().unwrap();
    let cases: &[&[&str]] = &[
        &["--kind", "cms", "--width", "0", "--depth", "3"],
        &["--kind", "cms", "--width", "10"],
        &["--kind", "cms"],
        &["--kind", "cms", "--epsilon", "0.01"],
        &[
            "--kind",
            "counting",
            "-n",
            "10",
            "-p",
            "0.1",
            "--counter-bits",
            "0",
        ],
        &[
            "--kind",
            "counting",
            "-n",
            "10",
            "-p",
            "0.1",
            "--counter-bits",
            "33",
        ],
        &[
            "--kind", "counting", "-n", "10", "-p", "0.1", "--width", "10",
        ],
        &["--kind", "scbf", "-n", "10", "-p", "0.1", "--groups", "0"],
        &[
            "--kind", "spectral", "-n", "10", "-p", "0.1", "--method", "xx",
        ],
        &["--kind", "counting"],
        &[
            "--kind",
            "blocked",
            "-n",
            "10",
            "-p",
            "0.1",
            "--counter-bits",
            "4",
        ],
    ];
    for (i, args) in cases.iter().enumerate() {
        let p = dir.path().join(format!("bad{i}.bf"));
        let out = bloomery()
            .arg("create")
            .arg(&p)
            .args(*args)
            .assert()
            .code(2);
        let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
        assert!(!p.exists(), "{args:?}");
        if !args.contains(&"xx") {
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(err.starts_with("bloomery: error: "), "{args:?}: {err}");
        }
    }
}

/// `flatten` (alias `summary`) writes the plain filter of a counting file: it answers `check`
/// exactly as the counting file counts above 0, present and absent lines alike, after removals;
/// kinds without a plain counterpart, plain inputs and an existing output are refused.
#[test]
fn flatten_writes_the_plain_filter_that_answers_alike() {
    let dir = TempDir::new().unwrap();
    let (input, truth) = multiset();
    let p = create(dir.path(), "counting", &["-n", "2000", "-p", "0.01"]);
    bloomery()
        .arg("add")
        .arg(&p)
        .write_stdin(input)
        .assert()
        .success();
    let gone: String = (0..50).map(|i| format!("key-{i}\n")).collect();
    bloomery()
        .arg("remove")
        .arg(&p)
        .write_stdin(gone.clone())
        .assert()
        .success();
    let out = dir.path().join("plain.bloom");
    bloomery()
        .arg("flatten")
        .arg(&p)
        .arg(&out)
        .assert()
        .success();
    assert_eq!(info(&out)["kind"], "classic");
    // the same lines answer "maybe": all kept keys, and the same false positives
    let queries: String = truth
        .keys()
        .map(|k| format!("{k}\n"))
        .chain((0..5000).map(|i| format!("absent-{i}\n")))
        .collect();
    let counted: std::collections::BTreeSet<String> = counts(&p, &queries)
        .into_iter()
        .filter(|&(_, n)| n > 0)
        .map(|(k, _)| k)
        .collect();
    let checked = bloomery()
        .arg("check")
        .arg(&out)
        .write_stdin(queries)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let checked: std::collections::BTreeSet<String> = String::from_utf8(checked)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(checked, counted);
    assert!(checked.len() >= truth.len() - 50);
    // the alias, and an existing output without --force
    bloomery()
        .arg("summary")
        .arg(&p)
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("already exists"));
    bloomery()
        .args(["summary", "--force"])
        .arg(&p)
        .arg(&out)
        .assert()
        .success();
    // no plain counterpart; not a counting file
    let b = create(
        dir.path(),
        "blocked-counting",
        &["-n", "2000", "-p", "0.01"],
    );
    let none = dir.path().join("none.bloom");
    bloomery()
        .arg("flatten")
        .arg(&b)
        .arg(&none)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no plain counterpart"));
    bloomery()
        .arg("flatten")
        .arg(&out)
        .arg(&none)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "classic structures have no plain Bloom filter counterpart (flatten) (kinds that do: counting)",
        ));
    assert!(!none.exists());
}

/// `add` and `count` read keys ahead of the one they insert or count (a prefetch pipeline of
/// 16 lines): the file and every estimate equal those of one-by-one library calls, and the
/// output keeps the input's order, also in the last lines (drained at the end) and for
/// inputs shorter than the pipeline.
#[test]
fn pipelined_add_and_count_equal_one_by_one() {
    let dir = TempDir::new().unwrap();
    let (stream, _) = multiset();
    let query: String = (0..400u32)
        .map(|i| format!("key-{}\n", i * 3 % 450))
        .collect();
    for (kind, args) in KINDS {
        let p = create(dir.path(), kind, args);
        let mut lib = bloomery::AnyCounter::load(&p).unwrap();
        bloomery()
            .arg("add")
            .arg(&p)
            .write_stdin(stream.as_str())
            .assert()
            .success();
        let hasher = *lib.hasher();
        for line in stream.lines() {
            lib.insert_hashed(hasher.hash_bytes(line.as_bytes()))
                .unwrap();
        }
        let saved = bloomery::AnyCounter::load(&p).unwrap();
        assert!(saved.to_bytes() == lib.to_bytes(), "{kind}: add");
        for input in [query.as_str(), "key-1\nkey-2\nnot-a-key\n"] {
            let out = bloomery()
                .arg("count")
                .arg(&p)
                .write_stdin(input)
                .assert()
                .success()
                .get_output()
                .stdout
                .clone();
            let out = String::from_utf8(out).unwrap();
            let want: Vec<String> = input
                .lines()
                .map(|l| format!("{}\t{l}", lib.count_hashed(hasher.hash_bytes(l.as_bytes()))))
                .collect();
            assert_eq!(out.lines().collect::<Vec<_>>(), want, "{kind}: count");
        }
    }
}

/// A full d-left filter stops `add` at the line of the first key that found no room (the
/// pipeline inserts 16 lines behind the reader, yet names the right line) and saves nothing.
#[test]
fn a_full_dlcbf_names_the_line_and_saves_nothing() {
    let dir = TempDir::new().unwrap();
    let p = create(dir.path(), "dlcbf", &["-n", "40", "-p", "0.01"]);
    let before = std::fs::read(&p).unwrap();
    let keys: Vec<String> = (0..5000u32).map(|i| format!("k{i}")).collect();
    let mut lib = bloomery::AnyCounter::load(&p).unwrap();
    let hasher = *lib.hasher();
    let first_full = keys
        .iter()
        .position(|k| lib.insert_hashed(hasher.hash_bytes(k.as_bytes())).is_err())
        .expect("5000 keys overfill a filter sized for 40")
        + 1;
    assert!(
        first_full > 16,
        "the failing key is past the pipeline's depth"
    );
    bloomery()
        .arg("add")
        .arg(&p)
        .write_stdin(keys.join("\n"))
        .assert()
        .failure()
        .stderr(predicate::str::contains(format!(
            "line {first_full}: the d-left filter is full"
        )));
    assert_eq!(std::fs::read(&p).unwrap(), before, "nothing saved");
}

/// `remove` reads 16 lines ahead too: the file equals one-by-one library removes, and each
/// absent line is named with its own number and text, in input order.
#[test]
fn pipelined_remove_equals_one_by_one_and_names_absent_lines() {
    let dir = TempDir::new().unwrap();
    let (stream, _) = multiset();
    // every present key once, with an absent key on every 25th line (lines 25, 50, …)
    let mut lines = Vec::new();
    for i in 0..300u32 {
        if lines.len() % 25 == 24 {
            lines.push(format!("absent-{i}"));
        }
        lines.push(format!("key-{i}"));
    }
    let input = lines.join("\n") + "\n";
    for kind in ["counting", "blocked-counting", "dlcbf", "spectral"] {
        let args = KINDS.iter().find(|(k, _)| *k == kind).unwrap().1;
        let p = create(dir.path(), kind, args);
        bloomery()
            .arg("add")
            .arg(&p)
            .write_stdin(stream.as_str())
            .assert()
            .success();
        let mut lib = bloomery::AnyCounter::load(&p).unwrap();
        let hasher = *lib.hasher();
        let mut want_warnings = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if lib.remove_hashed(hasher.hash_bytes(l.as_bytes())).is_err() {
                want_warnings.push(format!("line {}: not present, not removed: {l}", i + 1));
            }
        }
        assert!(
            want_warnings.len() >= 12,
            "{kind}: the absent lines are refused"
        );
        let out = bloomery()
            .arg("remove")
            .arg(&p)
            .write_stdin(input.as_str())
            .assert()
            .code(1)
            .get_output()
            .stderr
            .clone();
        let got: Vec<String> = String::from_utf8(out)
            .unwrap()
            .lines()
            .filter_map(|l| l.find("line ").map(|at| l[at..].to_string()))
            .filter(|l| l.contains("not present"))
            .collect();
        assert_eq!(got, want_warnings, "{kind}");
        let saved = bloomery::AnyCounter::load(&p).unwrap();
        assert!(saved.to_bytes() == lib.to_bytes(), "{kind}: remove");
    }
}
