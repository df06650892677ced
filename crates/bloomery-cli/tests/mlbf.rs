//! The multi-layer URL filter (Cen, Xu & Sun) through the real binary: create (sized and the
//! paper's shape), add, check, count, dedup, info, union, and the errors.

use std::path::{Path, PathBuf};

use predicates::prelude::*;
use tempfile::TempDir;

mod common;
use common::{bloomery_no_color as bloomery, info_json as info, key_lines as lines, stdout_lines};

fn create(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    common::create(dir, name, &[&["--kind", "mlbf"], args].concat())
}

/// `n` URLs on `n / 10` hosts, 1 to 5 path segments, some with a query string.
fn urls(n: usize, tag: &str) -> Vec<String> {
    (0..n)
        .map(|i| {
            let mut u = format!("https://{tag}{}.example.org", i / 10);
            for s in 0..(i % 5) + 1 {
                u.push_str(&format!("/s{s}x{}", i * 7 + s));
            }
            if i % 3 == 0 {
                u.push_str(&format!("?id={i}"));
            }
            u
        })
        .collect()
}

#[test]
fn create_sizes_for_near_misses_and_takes_the_papers_shape() {
    let dir = TempDir::new().unwrap();
    let p = create(
        dir.path(),
        "a.bloom",
        &["--layers", "3", "-n", "10k", "-p", "1e-6"],
    );
    let i = info(&p);
    assert_eq!(i["kind"], "mlbf");
    assert_eq!(i["layers"], 3);
    assert_eq!(i["capacity"], 10_000);
    assert_eq!(i["target_fpr"], 1e-6);
    // a near miss meets one layer and the XOR layer: the near-miss shape, about 15 bits per
    // URL per array (a classic filter at 1e-6: 28.8), 4 arrays
    let bits = i["bits"].as_u64().unwrap();
    assert_eq!(bits % 4, 0);
    let per_layer = bits / 4;
    let s = bloomery::params::mlbf_near_miss_shape(10_000, 1e-6, 64).unwrap();
    assert_eq!(
        (per_layer, i["hashes"].as_u64()),
        (s.m, Some(u64::from(s.k)))
    );
    assert!((145_000..=160_000).contains(&per_layer), "{per_layer}");

    // Cen, Xu & Sun §V: k = 3, m = 16,829,152 bits per layer, L = 4 (default layers)
    let p = create(
        dir.path(),
        "paper.bloom",
        &["--bits", "16829152", "--hashes", "3"],
    );
    let i = info(&p);
    assert_eq!(
        (i["layers"].as_u64(), i["hashes"].as_u64()),
        (Some(4), Some(3))
    );
    assert_eq!(i["bits"], 5 * 16_829_152u64);
    assert_eq!(i["capacity"], 0);
    bloomery()
        .arg("info")
        .arg(&p)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "4 URL layers + 1 XOR layer, 16,829,152 bits each",
        ));
    // blocked files still say nothing about layers
    let b = dir.path().join("b.bloom");
    bloomery()
        .arg("create")
        .arg(&b)
        .args(["-n", "100", "-p", "0.01"])
        .assert()
        .success();
    assert!(info(&b)["layers"].is_null());
}

#[test]
fn add_then_check_has_no_false_negatives_and_few_false_positives() {
    let dir = TempDir::new().unwrap();
    let p = create(dir.path(), "u.bloom", &["-n", "3000", "-p", "1e-4"]);
    let ins = urls(2000, "in");
    bloomery()
        .arg("add")
        .arg(&p)
        .write_stdin(lines(&ins))
        .assert()
        .success()
        .stderr(predicate::str::contains("2,000 new items"));
    assert_eq!(info(&p)["items"], 2000);
    // every inserted URL, and every spelling the normalisation equates with it
    let mut variants = Vec::new();
    for u in &ins {
        variants.push(u.clone());
        variants.push(u.replacen("https://", "http://", 1));
        variants.push(
            u.replacen("https://", "HTTP://", 1)
                .replace(".example.org", ".EXAMPLE.org"),
        );
        variants.push(format!("{u}#frag"));
        if !u.contains('?') {
            variants.push(format!("{u}/"));
        }
    }
    let out = bloomery()
        .args(["check", "-c"])
        .arg(&p)
        .write_stdin(lines(&variants))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(stdout_lines(&out), vec![variants.len().to_string()]);
    // absent URLs on fresh hosts: eq. 4 gives at most 1e-4 each (the filter is below its
    // capacity); 2,000 queries expect ≤ 0.2 false positives, 3σ of a Poisson count ≤ 1.5.
    let out_urls = urls(2000, "out");
    let out = bloomery()
        .args(["check", "-c"])
        .arg(&p)
        .write_stdin(lines(&out_urls))
        .output()
        .unwrap();
    let fp: u64 = stdout_lines(&out)[0].parse().unwrap();
    assert!(fp <= 1, "{fp} false positives");
    assert_eq!(out.status.code(), Some(if fp > 0 { 0 } else { 1 }));
    // -v prints the certainly-absent lines; count prints 1/0 per line
    let out = bloomery()
        .args(["check", "-v"])
        .arg(&p)
        .write_stdin(lines(&out_urls[..50]))
        .output()
        .unwrap();
    assert!(stdout_lines(&out).len() >= 49);
    let out = bloomery()
        .arg("count")
        .arg(&p)
        .write_stdin(format!("{}\nhttps://nowhere.test/a/b\n\n", ins[7]))
        .output()
        .unwrap();
    assert_eq!(
        stdout_lines(&out),
        vec![
            format!("1\t{}", ins[7]),
            "0\thttps://nowhere.test/a/b".into(),
            "0\t".into()
        ]
    );
}

#[test]
fn the_xor_layer_rejects_recombined_segments() {
    // Cen, Xu & Sun §IV.B: every segment of a.com/y/1 is in its layer, only the XOR layer rejects it.
    let dir = TempDir::new().unwrap();
    let p = create(
        dir.path(),
        "x.bloom",
        &["--layers", "3", "--bits", "1M", "--hashes", "3"],
    );
    bloomery()
        .arg("add")
        .arg(&p)
        .write_stdin("http://a.com/x/1\nhttp://b.com/y/2\n")
        .assert()
        .success();
    bloomery()
        .arg("check")
        .arg(&p)
        .write_stdin("a.com/y/1\nb.com/x/2\nhttps://A.COM/x/1/\n")
        .assert()
        .success()
        .stdout("https://A.COM/x/1/\n");
}

#[test]
fn dedup_kind_mlbf_is_a_url_seen_test() {
    let dir = TempDir::new().unwrap();
    let base = urls(1500, "d");
    // each URL, then later a differently spelled duplicate of every third one
    let mut input = base.clone();
    for (i, u) in base.iter().enumerate().filter(|(i, _)| i % 3 == 0) {
        input.push(if i % 2 == 0 {
            u.replacen("https://", "http://", 1)
        } else {
            format!("{u}#top")
        });
    }
    let out = bloomery()
        .args([
            "dedup", "--kind", "mlbf", "--layers", "4", "-n", "2000", "-p", "1e-6",
        ])
        .write_stdin(lines(&input))
        .output()
        .unwrap();
    assert!(out.status.success());
    // n·p = 0.002 expected wrongly dropped lines: with this fixed input, none
    assert_eq!(stdout_lines(&out), base);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("500 dropped (repeats"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // --state: a second run over the same URLs drops them all and keeps new ones
    let state = dir.path().join("seen.bloom");
    bloomery()
        .args([
            "dedup", "--kind", "mlbf", "-n", "4000", "-p", "1e-6", "--state",
        ])
        .arg(&state)
        .write_stdin(lines(&base))
        .assert()
        .success();
    assert_eq!(info(&state)["kind"], "mlbf");
    let fresh = urls(100, "new");
    let mut second = base[..300].to_vec();
    second.extend(fresh.iter().cloned());
    let out = bloomery()
        .args(["dedup", "--state"])
        .arg(&state)
        .write_stdin(lines(&second))
        .output()
        .unwrap();
    assert_eq!(stdout_lines(&out), fresh);
}

#[test]
fn union_of_mlbf_files() {
    let dir = TempDir::new().unwrap();
    let a = create(
        dir.path(),
        "a.bloom",
        &["--layers", "2", "-n", "100", "-p", "0.001"],
    );
    let b = create(
        dir.path(),
        "b.bloom",
        &["--layers", "2", "-n", "100", "-p", "0.001"],
    );
    let c = create(
        dir.path(),
        "c.bloom",
        &["--layers", "3", "-n", "100", "-p", "0.001"],
    );
    bloomery()
        .arg("add")
        .arg(&a)
        .write_stdin("a.org/1\n")
        .assert()
        .success();
    bloomery()
        .arg("add")
        .arg(&b)
        .write_stdin("b.org/2\n")
        .assert()
        .success();
    let u = dir.path().join("u.bloom");
    bloomery()
        .arg("union")
        .arg(&u)
        .arg(&a)
        .arg(&b)
        .assert()
        .success();
    bloomery()
        .args(["check", "-c"])
        .arg(&u)
        .write_stdin("a.org/1\nb.org/2\n")
        .assert()
        .stdout("2\n");
    bloomery()
        .arg("union")
        .arg(dir.path().join("v.bloom"))
        .arg(&a)
        .arg(&c)
        .assert()
        .code(2);
}

#[test]
fn errors_exit_2_and_leave_the_file_alone() {
    let dir = TempDir::new().unwrap();
    for bad in [
        &["--layers", "0", "-n", "10", "-p", "0.01"][..],
        &["--layers", "33", "-n", "10", "-p", "0.01"],
        &["--hashes", "3", "-n", "10", "-p", "0.01"],
        &["-n", "10"],
        &["--bits", "0", "--hashes", "3"],
    ] {
        bloomery()
            .arg("create")
            .arg(dir.path().join("e.bloom"))
            .args(["--kind", "mlbf"])
            .args(bad)
            .assert()
            .code(2)
            .stderr(predicate::str::starts_with("bloomery: error:"));
    }
    bloomery()
        .arg("create")
        .arg(dir.path().join("e.bloom"))
        .args(["--layers", "3", "-n", "10", "-p", "0.01"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--layers applies to --kind mlbf only",
        ));
    bloomery()
        .arg("create")
        .arg(dir.path().join("e.bloom"))
        .args([
            "--kind", "counting", "--layers", "3", "-n", "10", "-p", "0.01",
        ])
        .assert()
        .code(2);
    assert!(!dir.path().join("e.bloom").exists());

    let p = create(dir.path(), "u.bloom", &["-n", "100", "-p", "0.01"]);
    let before = std::fs::read(&p).unwrap();
    bloomery()
        .arg("add")
        .arg(&p)
        .write_stdin("a.org/x\nhttp:///nohost\n")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("line 2").and(predicate::str::contains("no host")));
    assert_eq!(
        std::fs::read(&p).unwrap(),
        before,
        "a failed add saves nothing"
    );
    bloomery()
        .args(["dedup", "--kind", "mlbf"])
        .write_stdin("a.org\n\n")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("line 2"));
    // non-UTF-8 bytes are replaced, deterministically: no error, no false negative
    bloomery()
        .arg("add")
        .arg(&p)
        .write_stdin(b"a.org/caf\xE9\n".to_vec())
        .assert()
        .success();
    bloomery()
        .arg("check")
        .arg(&p)
        .write_stdin(b"a.org/caf\xE9\n".to_vec())
        .assert()
        .success();
}

#[test]
fn skip_invalid_counts_and_skips_keys_that_are_not_urls() {
    let dir = TempDir::new().unwrap();
    // line 3 is the malformed URL of the npm list (line 348,750 there); line 5 has no host
    let input =
        "https://a.org/x\nhttps://b.org/y\nhttps:////.git\nhttp://a.org/x\nhttp:///x\nc.org\n";
    let valid = ["https://a.org/x", "https://b.org/y", "c.org"];

    // dedup: without the flag the first invalid line stops it; with it, it is counted
    bloomery()
        .args(["dedup", "--kind", "mlbf"])
        .write_stdin(input)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("line 3").and(predicate::str::contains("no host")));
    let out = bloomery()
        .args(["dedup", "--kind", "mlbf", "--skip-invalid"])
        .write_stdin(input)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(stdout_lines(&out), valid);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("6 lines read, 3 printed, 1 dropped, 2 skipped as invalid URLs (repeats"),
        "{err}"
    );

    // add: the same, and a failed add leaves the file alone
    let p = create(dir.path(), "s.bloom", &["-n", "100", "-p", "0.01"]);
    let before = std::fs::read(&p).unwrap();
    bloomery()
        .arg("add")
        .arg(&p)
        .write_stdin(input)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("line 3"));
    assert_eq!(std::fs::read(&p).unwrap(), before);
    bloomery()
        .arg("add")
        .arg(&p)
        .arg("--skip-invalid")
        .write_stdin(input)
        .assert()
        .success()
        .stderr(predicate::str::contains("(2 invalid URLs, skipped)"));
    assert_eq!(info(&p)["items"], 3);

    // check: without the flag an invalid key is certainly absent (printed by --invert);
    // with it, it is neither printed nor counted, only reported
    let queries = "https://a.org/x\nhttps:////.git\nhttps://new.org/z\n";
    bloomery()
        .arg("check")
        .arg(&p)
        .arg("--invert")
        .write_stdin(queries)
        .assert()
        .success()
        .stdout("https:////.git\nhttps://new.org/z\n");
    bloomery()
        .arg("check")
        .arg(&p)
        .args(["--invert", "--skip-invalid"])
        .write_stdin(queries)
        .assert()
        .success()
        .stdout("https://new.org/z\n")
        .stderr(predicate::str::contains("1 line skipped as invalid URLs"));
    bloomery()
        .arg("check")
        .arg(&p)
        .args(["--count", "--skip-invalid"])
        .write_stdin(queries)
        .assert()
        .success()
        .stdout("1\n");
}
