//! Integration tests: the real `bloomery` binary on temp files.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use predicates::prelude::*;
use tempfile::TempDir;

mod common;
use common::{
    bloomery_default_color as bloomery, create, info_json, json_of, key_lines, lines, BIN,
};

struct T {
    dir: TempDir,
}

impl T {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn p(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.p(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }
    fn create(&self, name: &str, args: &[&str]) -> PathBuf {
        create(self.dir.path(), name, args)
    }
}

/// One line on stderr, starting with `bloomery: error:`, and status 2.
fn assert_error(a: assert_cmd::assert::Assert, needle: &str) {
    let out = a.code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("bloomery: error:"),
        "stderr should start with `bloomery: error:`: {err:?}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    assert!(
        err.to_lowercase().contains(&needle.to_lowercase()),
        "stderr {err:?} should mention {needle:?}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

// ---------------------------------------------------------------- help, version

#[test]
fn help_and_version() {
    bloomery()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::contains(env!("CARGO_PKG_VERSION")));
    for cmd in [
        "create",
        "add",
        "check",
        "dedup",
        "info",
        "union",
        "intersect",
        "fold",
        "estimate",
        "calc",
        "remove",
        "count",
    ] {
        bloomery()
            .args([cmd, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Example"));
    }
    bloomery()
        .arg("dedup")
        .arg("--help")
        .assert()
        .stdout(predicate::str::contains("--kind scalable -n 1M -p 1e-4"));
    // usage errors exit 2 as well
    bloomery().arg("frobnicate").assert().code(2);
    bloomery().assert().code(2);
}

// ---------------------------------------------------------------- create

#[test]
fn create_every_kind_and_refuse_overwrite() {
    let t = T::new();
    for kind in [
        "blocked",
        "classic",
        "partitioned",
        "split-block",
        "scalable",
    ] {
        let p = t.create(
            &format!("{kind}.bloom"),
            &["-n", "10k", "-p", "0.01", "--kind", kind],
        );
        assert_eq!(info_json(&p)["kind"], kind);
    }
    let p = t.p("blocked.bloom");
    let before = std::fs::read(&p).unwrap();
    assert_error(
        bloomery()
            .arg("create")
            .arg(&p)
            .args(["-n", "5", "-p", "0.1"])
            .assert(),
        "already exists",
    );
    assert_eq!(std::fs::read(&p).unwrap(), before, "untouched");
    bloomery()
        .arg("create")
        .arg(&p)
        .args(["-n", "5", "-p", "0.1", "--force"])
        .assert()
        .success();
    assert_eq!(info_json(&p)["capacity"], 5);
}

#[test]
fn create_explicit_shape_seed_and_keyed() {
    let t = T::new();
    let p = t.create(
        "paper.bloom",
        &[
            "--kind", "classic", "--bits", "48000", "--hashes", "3", "-n", "1000",
        ],
    );
    let j = info_json(&p);
    assert_eq!(j["bits"], 48000);
    assert_eq!(j["hashes"], 3);
    let p = t.create("seed.bloom", &["-n", "1000", "-p", "0.01", "--seed", "7"]);
    let j = info_json(&p);
    assert_eq!(j["seed_kind"], "user");
    assert_eq!(j["seed"], 7);
    let p = t.create("keyed.bloom", &["-n", "1000", "-p", "0.01", "--keyed"]);
    let j = info_json(&p);
    assert_eq!(j["seed_kind"], "keyed");
    assert!(j["seed"].is_null(), "the secret is never printed");
    let p = t.create(
        "grow.bloom",
        &[
            "-n",
            "1000",
            "-p",
            "0.01",
            "--kind",
            "scalable",
            "--growth",
            "4",
            "--tightening",
            "0.8",
        ],
    );
    assert_eq!(info_json(&p)["kind"], "scalable");
    // clap rejects --seed with --keyed
    bloomery()
        .arg("create")
        .arg(t.p("x.bloom"))
        .args(["-n", "10", "-p", "0.1", "--seed", "1", "--keyed"])
        .assert()
        .code(2);
}

#[test]
fn create_bad_parameters() {
    let t = T::new();
    let out = t.p("bad.bloom");
    let cases: &[(&[&str], &str)] = &[
        (&["-n", "0", "-p", "0.01"], "capacity"),
        (&["-n", "100", "-p", "0"], "fpr"),
        (&["-n", "100", "-p", "1"], "fpr"),
        (&["-n", "100", "-p", "1.5"], "fpr"),
        (&["-n", "100", "-p", "NaN"], "fpr"),
        (&["-n", "100", "-p", "-0.1"], "fpr"),
        (&["-n", "100", "-p", "inf"], "fpr"),
        (&["-n", "100"], "--fpr"),
        (
            &["-n", "1e15", "-p", "0.001"],
            "on disk, and the disk holding",
        ),
        (
            &["-n", "10M", "-p", "0.01", "--max-memory", "1M"],
            "over the memory limit of 1.0 MiB set by --max-memory",
        ),
        (&["-n", "100", "-p", "0.01", "--growth", "2"], "scalable"),
        (&["-n", "100", "-p", "0.01", "--hashes", "0"], "hashes"),
        (
            &[
                "-n",
                "100",
                "-p",
                "0.01",
                "--kind",
                "split-block",
                "--hashes",
                "3",
            ],
            "8 bits",
        ),
    ];
    for (args, needle) in cases {
        assert_error(
            bloomery().arg("create").arg(&out).args(*args).assert(),
            needle,
        );
        assert!(!out.exists(), "nothing written for {args:?}");
    }
    // clap-level errors (not a number) still exit 2
    bloomery()
        .arg("create")
        .arg(&out)
        .args(["-n", "lots", "-p", "0.1"])
        .assert()
        .code(2);
    bloomery()
        .arg("create")
        .arg(&out)
        .args(["-n", "10", "-p", "0.1", "--kind", "cuckoo"])
        .assert()
        .code(2);
}

/// Rates near 1 and tiny shapes with huge capacities are sized at once (the blocked sizing used
/// to build mixtures over tens of millions of keys per block: minutes and gigabytes).
#[test]
fn create_blocked_near_rate_one_and_tiny_shapes() {
    let t = T::new();
    let cases: &[&[&str]] = &[
        &["--kind", "blocked", "-n", "100M", "-p", "0.999999"],
        &["--kind", "blocked-counting", "-n", "100M", "-p", "0.999999"],
        &["--kind", "blocked", "-n", "1000M", "--bits", "512"],
        &["--kind", "blocked-counting", "-n", "1000M", "--bits", "128"],
    ];
    for (i, args) in cases.iter().enumerate() {
        let out = t.p(&format!("near-one-{i}.bloom"));
        bloomery()
            .arg("create")
            .arg(&out)
            .args(*args)
            .assert()
            .success();
        bloomery().arg("info").arg(&out).assert().success();
    }
}

// ---------------------------------------------------------------- add / check

#[test]
fn add_stdin_and_check_grep_semantics() {
    let t = T::new();
    let f = t.create("f.bloom", &["-n", "10k", "-p", "1e-6", "--seed", "1"]);
    bloomery()
        .arg("add")
        .arg(&f)
        .write_stdin(lines(0..1000))
        .assert()
        .success()
        .stderr(
            predicate::str::contains("1,000 lines read")
                .and(predicate::str::contains("1,000 new items")),
        );
    assert_eq!(info_json(&f)["items"], 1000);

    // present lines print, exit 0
    bloomery()
        .arg("check")
        .arg(&f)
        .write_stdin("key-5\nnope\nkey-999\n")
        .assert()
        .code(0)
        .stdout("key-5\nkey-999\n");
    // invert
    bloomery()
        .args(["check", "-v"])
        .arg(&f)
        .write_stdin("key-5\nnope\n")
        .assert()
        .code(0)
        .stdout("nope\n");
    // count
    bloomery()
        .args(["check", "-c"])
        .arg(&f)
        .write_stdin(lines(500..1500))
        .assert()
        .code(0)
        .stdout("500\n");
    // nothing printed: exit 1
    bloomery()
        .arg("check")
        .arg(&f)
        .write_stdin("absent-1\nabsent-2\n")
        .assert()
        .code(1)
        .stdout("");
    bloomery()
        .args(["check", "-c"])
        .arg(&f)
        .write_stdin("absent-1\n")
        .assert()
        .code(1)
        .stdout("0\n");
    // "-" is stdin, files are read in order
    let extra = t.write("extra.txt", b"key-1\n");
    bloomery()
        .arg("check")
        .arg(&f)
        .arg(&extra)
        .arg("-")
        .write_stdin("key-2\n")
        .assert()
        .code(0)
        .stdout("key-1\nkey-2\n");
}

/// `check` answers a batch of lines at a time: the output keeps the input's order across
/// batch boundaries (1,024 lines), and a line without the key field never matches.
#[test]
fn check_and_count_across_batches() {
    let t = T::new();
    let f = t.create("f.bloom", &["-n", "10k", "-p", "1e-6", "--seed", "1"]);
    bloomery()
        .arg("add")
        .arg(&f)
        .write_stdin(key_lines((0..3000).step_by(3).map(|i| format!("key-{i}"))))
        .assert()
        .success();
    // every third key is in; every seventh line lacks its second field
    let line = |i: u32| {
        if i.is_multiple_of(7) {
            format!("nofield-{i}")
        } else {
            format!("x,key-{i}")
        }
    };
    let input: String = (0..3000).map(|i| line(i) + "\n").collect();
    let want = |hit: bool| -> String {
        (0..3000u32)
            .filter(|&i| (i.is_multiple_of(3) && !i.is_multiple_of(7)) == hit)
            .map(|i| line(i) + "\n")
            .collect()
    };
    for (flag, hit) in [(None, true), (Some("-v"), false)] {
        bloomery()
            .arg("check")
            .args(flag)
            .args(["-d", ",", "-f", "2"])
            .arg(&f)
            .write_stdin(input.clone())
            .assert()
            .code(0)
            .stdout(want(hit));
    }
    // every line a hit: each batch is printed as one run of lines
    let present = key_lines((0..3000).step_by(3).map(|i| format!("key-{i}")));
    bloomery()
        .arg("check")
        .arg(&f)
        .write_stdin(present.clone())
        .assert()
        .code(0)
        .stdout(present);
    // count: 1 or 0 before each line, a line without the key field 0
    let counts: String = (0..3000u32)
        .map(|i| {
            let hit = i.is_multiple_of(3) && !i.is_multiple_of(7);
            format!("{}\t{}\n", u8::from(hit), line(i))
        })
        .collect();
    bloomery()
        .args(["count", "-d", ",", "-f", "2"])
        .arg(&f)
        .write_stdin(input)
        .assert()
        .code(0)
        .stdout(counts);
}

#[test]
fn add_files_gzip_zstd_crlf_and_no_trailing_newline() {
    let t = T::new();
    let f = t.create("f.bloom", &["-n", "10k", "-p", "1e-6"]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(lines(0..100).as_bytes()).unwrap();
    let gz = t.write("in.txt.gz", &gz.finish().unwrap());
    let zst = t.write(
        "in.zst",
        &zstd::encode_all(lines(100..200).as_bytes(), 3).unwrap(),
    );
    let plain = t.write("in.txt", b"crlf-line\r\nlast-without-newline");
    bloomery()
        .arg("add")
        .arg(&f)
        .arg(&gz)
        .arg(&zst)
        .arg(&plain)
        .assert()
        .success();
    assert_eq!(info_json(&f)["items"], 202);
    bloomery()
        .args(["check", "-c"])
        .arg(&f)
        .write_stdin(format!("{}crlf-line\nlast-without-newline", lines(0..200)))
        .assert()
        .stdout("202\n");
    // compressed input to check as well
    bloomery()
        .args(["check", "-c"])
        .arg(&f)
        .arg(&zst)
        .assert()
        .stdout("100\n");
}

#[test]
fn fields_delimiters_and_hex() {
    let t = T::new();
    let f = t.create("f.bloom", &["-n", "1000", "-p", "1e-6"]);
    bloomery()
        .args(["add", "-d", ",", "-f", "2"])
        .arg(&f)
        .write_stdin("1,alpha,x\n2,beta,y\nno-field-here\n")
        .assert()
        .success()
        .stderr(predicate::str::contains("1 without field"));
    bloomery()
        .arg("check")
        .arg(&f)
        .write_stdin("alpha\nbeta\n1,alpha,x\n")
        .assert()
        .stdout("alpha\nbeta\n");
    // tab is the default delimiter; whole lines are printed
    bloomery()
        .args(["check", "-f", "3"])
        .arg(&f)
        .write_stdin("a\tb\talpha\nc\td\tgamma\n")
        .assert()
        .code(0)
        .stdout("a\tb\talpha\n");
    // hex keys are decoded: "616263" is "abc"
    let h = t.create("h.bloom", &["-n", "1000", "-p", "1e-6"]);
    bloomery()
        .args(["add", "--hex"])
        .arg(&h)
        .write_stdin("616263\n")
        .assert()
        .success();
    bloomery()
        .arg("check")
        .arg(&h)
        .write_stdin("abc\n")
        .assert()
        .code(0);
    // invalid hex: error with the line number, filter untouched
    let before = std::fs::read(&h).unwrap();
    assert_error(
        bloomery()
            .args(["add", "--hex"])
            .arg(&h)
            .write_stdin("00ff\nzz\n")
            .assert(),
        "line 2",
    );
    assert_eq!(std::fs::read(&h).unwrap(), before);
    assert_error(
        bloomery()
            .args(["add", "-f", "0"])
            .arg(&h)
            .write_stdin("x\n")
            .assert(),
        "numbered from 1",
    );
}

#[test]
fn invalid_utf8_lines_are_bytes() {
    let t = T::new();
    let f = t.create("f.bloom", &["-n", "1000", "-p", "1e-6"]);
    let input: &[u8] = b"\xff\xfe\x00binary\n\xc3\x28\nplain\n";
    bloomery()
        .arg("add")
        .arg(&f)
        .write_stdin(input)
        .assert()
        .success();
    assert_eq!(info_json(&f)["items"], 3);
    bloomery()
        .arg("check")
        .arg(&f)
        .write_stdin(input)
        .assert()
        .code(0)
        .stdout(input);
    bloomery()
        .arg("dedup")
        .write_stdin(&b"\xff\n\xff\n\xfe\n"[..])
        .assert()
        .success()
        .stdout(&b"\xff\n\xfe\n"[..]);
}

#[test]
fn bad_files_and_inputs() {
    let t = T::new();
    let good = t.create("good.bloom", &["-n", "1000", "-p", "0.01"]);
    bloomery()
        .arg("add")
        .arg(&good)
        .write_stdin("a\n")
        .assert()
        .success();
    let bytes = std::fs::read(&good).unwrap();
    let missing = t.p("missing.bloom");
    let truncated = t.write("trunc.bloom", &bytes[..bytes.len() / 2]);
    let mut c = bytes.clone();
    let mid = c.len() / 2;
    c[mid] ^= 0xff;
    let corrupted = t.write("corrupt.bloom", &c);
    let foreign = t.write(
        "foreign.bloom",
        b"PK\x03\x04 this is a zip file, not a filter",
    );
    let empty = t.write("empty.bloom", b"");
    let cases = [
        (&missing, "no such file"),
        (&truncated, "truncated"),
        (&corrupted, "checksum"),
        (&foreign, "not a bloomery filter"),
        (&empty, "cannot load"),
    ];
    for (p, needle) in cases {
        for cmd in ["info", "check", "add", "estimate"] {
            assert_error(
                bloomery().arg(cmd).arg(p).write_stdin("x\n").assert(),
                needle,
            );
        }
        assert_error(
            bloomery()
                .arg("union")
                .arg(t.p("u.bloom"))
                .arg(&good)
                .arg(p)
                .assert(),
            needle,
        );
        if p != &missing {
            assert_error(
                bloomery()
                    .arg("dedup")
                    .arg("--state")
                    .arg(p)
                    .write_stdin("x\n")
                    .assert(),
                needle,
            );
        }
    }
    // a directory is not a filter
    assert_error(
        bloomery().arg("info").arg(t.dir.path()).assert(),
        "cannot load",
    );
    // empty input: error, file unchanged
    assert_error(
        bloomery().arg("add").arg(&good).write_stdin("").assert(),
        "empty",
    );
    assert_eq!(std::fs::read(&good).unwrap(), bytes);
    assert_error(
        bloomery().arg("check").arg(&good).write_stdin("").assert(),
        "empty",
    );
    assert_error(bloomery().arg("dedup").write_stdin("").assert(), "empty");
    // a missing input file: error, filter unchanged
    assert_error(
        bloomery()
            .arg("add")
            .arg(&good)
            .arg(t.p("nope.txt"))
            .assert(),
        "nope.txt",
    );
    assert_eq!(std::fs::read(&good).unwrap(), bytes);
    // no temp files left behind by failed saves
    let leftovers: Vec<_> = std::fs::read_dir(t.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn non_scaling_scalable_full_leaves_file() {
    let t = T::new();
    let f = t.create(
        "full.bloom",
        &[
            "-n",
            "100",
            "-p",
            "0.01",
            "--kind",
            "scalable",
            "--no-scaling",
        ],
    );
    let before = std::fs::read(&f).unwrap();
    assert_error(
        bloomery()
            .arg("add")
            .arg(&f)
            .write_stdin(lines(0..1000))
            .assert(),
        "full",
    );
    assert_eq!(
        std::fs::read(&f).unwrap(),
        before,
        "failed add keeps the old file"
    );
}

#[test]
fn warns_past_capacity() {
    let t = T::new();
    let f = t.create("small.bloom", &["-n", "100", "-p", "0.01"]);
    let out = bloomery()
        .arg("add")
        .arg(&f)
        .write_stdin(lines(0..2000))
        .assert()
        .success()
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("warning") && err.contains("capacity"), "{err}");
    assert!(!err.contains('\x1b'), "no colour in pipes: {err:?}");
    // --quiet silences summaries and warnings
    bloomery()
        .args(["add", "-q"])
        .arg(&f)
        .write_stdin("x\n")
        .assert()
        .success()
        .stderr("");
}

#[test]
fn threads_give_the_same_filter() {
    // 330k lines (10 MB: more than one 8 MiB batch of `-t 2`) of 250k distinct values in a
    // filter sized for 100k: many duplicates and many keys whose bits were all set already, so
    // the item count (an insert counts when it changes a bit) depends on the insert order of
    // each block's keys. CRLF lines, and no newline after the last line.
    let t = T::new();
    let mut text = String::new();
    for i in 0..330_000u64 {
        text.push_str(&format!("{:031}", mix(i) % 250_000));
        text.push_str(if i % 7 == 0 { "\r\n" } else { "\n" });
    }
    text.push_str("last-line-without-newline");
    let input = t.write("in.txt", text.as_bytes());
    let (a, b) = text.as_bytes().split_at(text.len() / 3 + 5);
    let part_a = t.write("a.txt", a);
    let part_b = t.write("b.txt", b);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(text.as_bytes()).unwrap();
    let gz = t.write("in.txt.gz", &gz.finish().unwrap());
    let shape = ["-n", "100k", "-p", "0.01", "--seed", "3"];
    let add = |name: &str, threads: &str, inputs: &[&Path], stdin: Option<&str>| {
        let f = t.create(name, &shape);
        let mut c = bloomery();
        c.args(["add", "-q", "-t", threads]).arg(&f).args(inputs);
        if let Some(s) = stdin {
            c.write_stdin(s.to_string());
        }
        c.assert().success();
        std::fs::read(&f).unwrap()
    };
    let one = add("one.bloom", "1", &[&input], None);
    assert!(info_json(&t.p("one.bloom"))["items"].as_u64().unwrap() < 250_000);
    // a mapped file, stdin, a gzip file
    assert!(one == add("two.bloom", "2", &[&input], None), "mapped file");
    assert!(one == add("stdin.bloom", "2", &[], Some(&text)), "stdin");
    assert!(one == add("gz.bloom", "3", &[&gz], None), "gzip");
    assert!(
        one == add("three.bloom", "3", &[&input], None),
        "three threads"
    );
    assert_eq!(
        add("parts1.bloom", "1", &[&part_a, &part_b], None),
        add("parts2.bloom", "2", &[&part_a, &part_b], None),
        "two files"
    );
    // other kinds fall back to one thread with a warning
    let c = t.create(
        "c.bloom",
        &["-n", "1000", "-p", "0.01", "--kind", "classic"],
    );
    bloomery()
        .args(["add", "-t", "2"])
        .arg(&c)
        .write_stdin("a\n")
        .assert()
        .success()
        .stderr(predicate::str::contains("one thread"));
}

#[test]
fn threads_give_the_same_fields_summary_and_errors() {
    // 8.8 MB of `id,hex` lines (more than one 8 MiB batch of `-t 2`), every 10th without
    // the field; the same filter, the same summary line and, with a bad hex key deep in the input,
    // the same error line for one and two threads, from a file and from stdin.
    let t = T::new();
    let mut text = String::new();
    for i in 0..300_000u64 {
        if i % 10 == 3 {
            text.push_str(&format!("{i}\n"));
        } else {
            text.push_str(&format!("{i},{:024x}\n", mix(i)));
        }
    }
    let input = t.write("in.csv", text.as_bytes());
    let shape = ["-n", "300k", "-p", "0.01", "--seed", "5"];
    let run = |name: &str, threads: &str, input: Option<&Path>, stdin: &str| {
        let f = t.create(name, &shape);
        let mut c = bloomery();
        c.args(["add", "-t", threads, "-d", ",", "-f", "2", "--hex"])
            .arg(&f);
        match input {
            Some(p) => c.arg(p),
            None => c.write_stdin(stdin.to_string()),
        };
        let out = c.output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        (out.status.code(), std::fs::read(&f).unwrap(), err)
    };
    let one = run("one.bloom", "1", Some(&input), "");
    assert_eq!(one.0, Some(0));
    assert!(
        one.2
            .contains("300,000 lines read (30,000 without field, skipped)"),
        "{}",
        one.2
    );
    for (name, input) in [("file.bloom", Some(input.as_path())), ("stdin.bloom", None)] {
        let two = run(name, "2", input, &text);
        assert_eq!(two.0, Some(0));
        assert!(two.1 == one.1, "{name}: same filter");
        assert_eq!(two.2, one.2, "{name}: same summary");
    }
    let fresh = t.create("fresh.bloom", &shape);
    let fresh = std::fs::read(fresh).unwrap();
    // bad hex keys: the first one in input order is reported, with its line number in the
    // whole input, whichever thread reads it and whatever the threads are doing elsewhere;
    // line 295,000 is past 8 MiB, the others in 1 MiB input chunks of different threads
    let at = |line: usize| -> usize { text.lines().take(line - 1).map(|l| l.len() + 1).sum() };
    assert!(at(295_000) > 8 << 20);
    let cases = [
        vec![295_000, 299_501],
        vec![131_000, 165_000, 299_501],
        vec![3],
    ];
    for (case, bad_lines) in cases.iter().enumerate() {
        let mut bad: Vec<String> = text.lines().map(str::to_string).collect();
        for &l in bad_lines {
            bad[l - 1] = "x,abcz".to_string();
        }
        let bad = bad.join("\n") + "\n";
        let bad_file = t.write("bad.csv", bad.as_bytes());
        let want = format!("line {}: invalid hex key", bad_lines[0]);
        for threads in ["1", "2", "3"] {
            for (name, input) in [("badf", Some(bad_file.as_path())), ("bads", None)] {
                let name = format!("{name}{threads}-{case}.bloom");
                let (code, bytes, err) = run(&name, threads, input, &bad);
                assert_eq!(code, Some(2), "{threads} threads: {err}");
                assert!(err.contains(&want), "{threads} threads, {name}: {err}");
                assert!(bytes == fresh, "a failed add leaves the file as it was");
            }
        }
    }
}

#[test]
fn threads_report_a_damaged_compressed_input() {
    // a gzip input cut in the middle (more than one chunk of lines before the cut): the
    // reader thread's error ends the add with status 2 and the filter file as it was
    let t = T::new();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(lines(0..200_000).as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let cut = t.write("cut.gz", &gz[..gz.len() * 3 / 4]);
    let f = t.create("f.bloom", &["-n", "200k", "-p", "0.01"]);
    let before = std::fs::read(&f).unwrap();
    for threads in ["1", "2", "3"] {
        bloomery()
            .args(["add", "-t", threads])
            .arg(&f)
            .arg(&cut)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("cannot read"));
        assert!(std::fs::read(&f).unwrap() == before, "{threads} threads");
    }
}

#[test]
fn threads_load_large_and_compressed_filters() {
    // a 1.2 MB filter (read by both threads when loaded) and its compressed form (kept
    // compressed): the same files as with one thread
    let t = T::new();
    let text = lines(0..50_000);
    let input = t.write("in.txt", text.as_bytes());
    let shape = ["-n", "1M", "-p", "0.01", "--seed", "8"];
    let add = |f: &Path, threads: &str| {
        bloomery()
            .args(["add", "-q", "-t", threads])
            .arg(f)
            .arg(&input)
            .assert()
            .success();
        std::fs::read(f).unwrap()
    };
    let one = t.create("one.bloom", &shape);
    let two = t.create("two.bloom", &shape);
    assert!(std::fs::metadata(&one).unwrap().len() > 1 << 20);
    for (plain, packed) in [(&one, "one.z"), (&two, "two.z")] {
        bloomery()
            .arg("compress")
            .arg(plain)
            .arg(t.p(packed))
            .assert()
            .success();
    }
    assert!(add(&one, "1") == add(&two, "2"), "plain");
    let (z1, z2) = (add(&t.p("one.z"), "1"), add(&t.p("two.z"), "2"));
    assert!(z1 == z2, "compressed");
    assert!(z1.len() < std::fs::metadata(&one).unwrap().len() as usize / 2);
}

// ---------------------------------------------------------------- dedup

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[test]
fn dedup_matches_exact_dedup_within_the_fpr_bound() {
    // 60k lines drawn from 20k distinct values, in a filter sized for 20k at 1%
    let stream: Vec<String> = (0..60_000u64)
        .map(|j| format!("https://example.org/{}", mix(j) % 20_000))
        .collect();
    let input: String = stream.iter().map(|l| format!("{l}\n")).collect();
    let mut seen = std::collections::HashSet::new();
    let exact: Vec<&str> = stream
        .iter()
        .filter(|l| seen.insert(l.as_str()))
        .map(|s| s.as_str())
        .collect();
    let out = bloomery()
        .args(["dedup", "-n", "20000", "-p", "0.01", "--seed", "9"])
        .write_stdin(input)
        .assert()
        .success()
        .get_output()
        .clone();
    let got: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    // no line printed twice
    let uniq: std::collections::HashSet<_> = got.iter().collect();
    assert_eq!(uniq.len(), got.len(), "a line was printed twice");
    // the output is the exact dedup with some lines dropped, in order
    let mut it = exact.iter();
    for g in &got {
        assert!(it.any(|e| e == g), "{g} out of order or never in the input");
    }
    // drops: each distinct line is dropped with probability at most the rate at capacity
    let n = exact.len() as f64;
    let expected = n * 0.01;
    let bound = expected + 3.0 * expected.sqrt();
    let dropped = exact.len() - got.len();
    assert!(
        (dropped as f64) <= bound,
        "{dropped} dropped, bound {bound:.0} (n = {n})"
    );
}

#[test]
fn dedup_default_grows_with_the_input_within_the_fpr_bound() {
    // the default kind is scalable: started at -n 1000, it grows to hold 20k distinct lines and
    // keeps the default rate 1e-4 for all of them (a fixed filter for 1000 would drop most)
    let t = T::new();
    let state = t.p("seen.bloom");
    let stream: Vec<String> = (0..60_000u64)
        .map(|j| format!("https://example.org/{}", mix(j) % 20_000))
        .collect();
    let input: String = stream.iter().map(|l| format!("{l}\n")).collect();
    let exact = {
        let mut seen = std::collections::HashSet::new();
        stream.iter().filter(|l| seen.insert(l.as_str())).count()
    };
    let out = bloomery()
        .args(["dedup", "-n", "1000", "--state"])
        .arg(&state)
        .write_stdin(input)
        .assert()
        .success()
        .get_output()
        .clone();
    let got = out.stdout.split(|b| *b == b'\n').count() - 1;
    let expected = exact as f64 * 1e-4;
    let bound = expected + 3.0 * expected.sqrt() + 1.0;
    assert!(
        got <= exact && (exact - got) as f64 <= bound,
        "{got} of {exact}"
    );
    let i = info_json(&state);
    assert_eq!(i["kind"], "scalable");
    assert!(i["sub_filters"].as_u64().unwrap() >= 5, "{i}");
    assert!(i["target_fpr"].as_f64().unwrap() == 1e-4);
}

#[test]
fn dedup_state_resumes_and_fields() {
    let t = T::new();
    let state = t.p("seen.bloom");
    bloomery()
        .args(["dedup", "-n", "1000", "-p", "1e-6", "--state"])
        .arg(&state)
        .write_stdin("a\nb\na\n")
        .assert()
        .success()
        .stdout("a\nb\n");
    assert!(state.exists());
    bloomery()
        .args(["dedup", "--state"])
        .arg(&state)
        .write_stdin("b\nc\nc\na\nd\n")
        .assert()
        .success()
        .stdout("c\nd\n");
    assert_eq!(info_json(&state)["items"], 4);
    // field keys: first line per user
    bloomery()
        .args(["dedup", "-d", ",", "-f", "1", "-n", "100", "-p", "1e-6"])
        .write_stdin("u1,x\nu2,y\nu1,z\n")
        .assert()
        .success()
        .stdout("u1,x\nu2,y\n");
    // bad sizing
    assert_error(
        bloomery()
            .args(["dedup", "-n", "0"])
            .write_stdin("a\n")
            .assert(),
        "capacity",
    );
    assert_error(
        bloomery()
            .args(["dedup", "-p", "2"])
            .write_stdin("a\n")
            .assert(),
        "fpr",
    );
}

// ---------------------------------------------------------------- info, merge, estimate

#[test]
fn info_human_and_json() {
    let t = T::new();
    let f = t.create("f.bloom", &["-n", "1000", "-p", "0.01", "--seed", "5"]);
    bloomery()
        .arg("add")
        .arg(&f)
        .write_stdin(lines(0..500))
        .assert()
        .success();
    let out = bloomery()
        .arg("info")
        .arg(&f)
        .assert()
        .success()
        .get_output()
        .clone();
    let s = String::from_utf8(out.stdout).unwrap();
    for label in [
        "kind",
        "format version",
        "bits (m)",
        "hashes (k)",
        "items",
        "fill ratio",
        "fpr now",
        "lower bound",
        "hash",
    ] {
        assert!(
            s.lines().any(|l| l.starts_with(label)),
            "{label} missing in\n{s}"
        );
    }
    // aligned: every value starts in the same column
    let cols: std::collections::HashSet<usize> = s
        .lines()
        .map(|l| {
            l.find("  ").unwrap() + l[l.find("  ").unwrap()..].find(|c: char| c != ' ').unwrap()
        })
        .collect();
    assert_eq!(cols.len(), 1, "{s}");
    let j = info_json(&f);
    for key in [
        "file",
        "kind",
        "format_version",
        "bits",
        "hashes",
        "bytes",
        "items",
        "estimated_items",
        "capacity",
        "bits_per_item",
        "fill_ratio",
        "current_fpr",
        "target_fpr",
        "lower_bound_bits",
        "lower_bound_ratio",
        "capacity_lower_bound_ratio",
        "hash",
        "seed_kind",
        "seed",
        "sub_filters",
    ] {
        assert!(j.get(key).is_some(), "{key} missing in {j}");
    }
    assert_eq!(j["kind"], "blocked");
    assert_eq!(j["format_version"], 1);
    assert_eq!(j["items"], 500);
    assert_eq!(j["capacity"], 1000);
    // sized by -n/-p at 1%: the salted layout, hashed with xxh3-64 under the given seed
    assert_eq!(j["hash"], "xxh3-64");
    assert_eq!(j["layout"], "salted");
    assert!(j["current_fpr"].as_f64().unwrap() < 0.01);
    assert!(j["lower_bound_ratio"].as_f64().unwrap() > 1.0);
}

#[test]
fn union_intersect_fold_estimate() {
    let t = T::new();
    let shape = [
        "--kind", "classic", "--bits", "65536", "--hashes", "4", "-n", "4000", "--seed", "2",
    ];
    let a = t.create("a.bloom", &shape);
    let b = t.create("b.bloom", &shape);
    bloomery()
        .arg("add")
        .arg(&a)
        .write_stdin(lines(0..2000))
        .assert()
        .success();
    bloomery()
        .arg("add")
        .arg(&b)
        .write_stdin(lines(1000..3000))
        .assert()
        .success();
    let u = t.p("u.bloom");
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
        .write_stdin(lines(0..3000))
        .assert()
        .stdout("3000\n");
    let i = t.p("i.bloom");
    bloomery()
        .arg("intersect")
        .arg(&i)
        .arg(&a)
        .arg(&b)
        .assert()
        .success();
    bloomery()
        .args(["check", "-c"])
        .arg(&i)
        .write_stdin(lines(1000..2000))
        .assert()
        .stdout("1000\n");
    // refuse to overwrite an unrelated file; allow writing over an input
    assert_error(
        bloomery().arg("union").arg(&i).arg(&a).arg(&b).assert(),
        "already exists",
    );
    bloomery()
        .arg("union")
        .arg(&a)
        .arg(&a)
        .arg(&b)
        .assert()
        .success();
    // estimates
    let out = bloomery()
        .args(["estimate", "--json"])
        .arg(&b)
        .arg(t.p("i.bloom"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let j = json_of(&out.stdout);
    for key in ["items", "other_items", "intersection", "union", "jaccard"] {
        assert!(j[key].is_number(), "{key} in {j}");
    }
    let out = bloomery()
        .args(["estimate", "--json"])
        .arg(&b)
        .output()
        .unwrap();
    let n = json_of(&out.stdout)["items"].as_f64().unwrap();
    assert!((n - 2000.0).abs() < 100.0, "{n}");
    let out = bloomery()
        .args(["estimate", "--json"])
        .arg(&u)
        .arg(&b)
        .output()
        .unwrap();
    let j = json_of(&out.stdout);
    let inter = j["intersection"].as_f64().unwrap();
    assert!((inter - 2000.0).abs() < 150.0, "{j}");
    bloomery()
        .arg("estimate")
        .arg(&u)
        .arg(&b)
        .assert()
        .success()
        .stdout(predicate::str::contains("jaccard"));
    // fold: still no false negatives
    let f = t.p("f.bloom");
    bloomery()
        .args(["fold", "--times", "2"])
        .arg(&b)
        .arg(&f)
        .assert()
        .success();
    assert_eq!(info_json(&f)["bits"], 16384);
    bloomery()
        .args(["check", "-c"])
        .arg(&f)
        .write_stdin(lines(1000..3000))
        .assert()
        .stdout("2000\n");
    // mismatches and wrong kinds
    let other = t.create("o.bloom", &["-n", "4000", "-p", "0.01"]);
    assert_error(
        bloomery()
            .arg("union")
            .arg(t.p("x.bloom"))
            .arg(&a)
            .arg(&other)
            .assert(),
        "different kinds",
    );
    let seed = t.create(
        "s.bloom",
        &[
            "--kind", "classic", "--bits", "65536", "--hashes", "4", "-n", "4000", "--seed", "99",
        ],
    );
    assert_error(
        bloomery()
            .arg("intersect")
            .arg(t.p("x.bloom"))
            .arg(&a)
            .arg(&seed)
            .assert(),
        "seed",
    );
    assert_error(
        bloomery().arg("estimate").arg(&a).arg(&other).assert(),
        "different kinds",
    );
    let p = t.create(
        "p.bloom",
        &["-n", "100", "-p", "0.01", "--kind", "partitioned"],
    );
    assert_error(
        bloomery().arg("fold").arg(&p).arg(t.p("x.bloom")).assert(),
        "partitioned structures have no halving (fold) (kinds that do: classic, blocked)",
    );
    assert_error(
        bloomery()
            .args(["fold", "--times", "30"])
            .arg(&a)
            .arg(t.p("x.bloom"))
            .assert(),
        "fold",
    );
    assert!(!t.p("x.bloom").exists());
}

// ---------------------------------------------------------------- calc, counting

#[test]
fn calc_rate_and_bits() {
    let out = bloomery()
        .args(["calc", "-n", "1M", "-p", "0.01", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let j = json_of(&out.stdout);
    let kinds = j["kinds"].as_array().unwrap();
    let names: Vec<_> = kinds.iter().map(|k| k["kind"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "classic",
            "partitioned",
            "blocked",
            "blocked-sectors",
            "blocked-salted",
            "blocked-salted256",
            "split-block"
        ]
    );
    for k in kinds {
        assert!(k["fpr"].as_f64().unwrap() <= 0.01 + 1e-12, "{k}");
        let r = k["lower_bound_ratio"].as_f64().unwrap();
        assert!((1.4..2.0).contains(&r), "{k}");
    }
    // the salted layout has the sectors shape; its 256-bit blocks cost a few per cent more
    assert_eq!(kinds[4]["bits"], kinds[3]["bits"]);
    let (b512, b256) = (
        kinds[4]["bits"].as_f64().unwrap(),
        kinds[5]["bits"].as_f64().unwrap(),
    );
    assert!(b256 > b512 && b256 < 1.1 * b512, "{b512} {b256}");
    // what `create --kind blocked-salted256` makes: the shape calc shows, rounded to lines
    // that fold, and its info says so
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.bloom");
    bloomery()
        .arg("create")
        .arg(&f)
        .args(["--kind", "blocked-salted256", "-n", "1M", "-p", "0.01"])
        .assert()
        .success();
    let info = info_json(&f);
    assert_eq!(info["kind"], "blocked", "{info}");
    assert_eq!(info["layout"], "salted256", "{info}");
    let bits = info["bits"].as_f64().unwrap();
    assert!(bits >= b256 && bits <= 1.01 * b256, "{bits} {b256}");
    assert_eq!(kinds[0]["hashes"], 7);
    let out = bloomery()
        .args(["calc", "-n", "1M", "-m", "48M", "-k", "3", "--json"])
        .output()
        .unwrap();
    let j = json_of(&out.stdout);
    let classic = &j["kinds"][0];
    assert_eq!(classic["bits"], 48_000_000);
    assert_eq!(classic["hashes"], 3);
    assert!(classic["fpr_asymptotic"].as_f64().unwrap() > 0.0);
    bloomery()
        .args(["calc", "-n", "1M", "-p", "0.01"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("split-block").and(predicate::str::contains("lower bound")),
        );
    assert_error(
        bloomery().args(["calc", "-n", "0", "-p", "0.01"]).assert(),
        "capacity",
    );
    assert_error(
        bloomery().args(["calc", "-n", "10", "-p", "nan"]).assert(),
        "fpr",
    );
    assert_error(
        bloomery().args(["calc", "-n", "10", "-m", "0"]).assert(),
        "bits",
    );
    assert_error(
        bloomery()
            .args(["calc", "-n", "10", "-m", "100", "-k", "0"])
            .assert(),
        "hashes",
    );
    bloomery().args(["calc", "-n", "10"]).assert().code(2);
}

#[test]
fn remove_count_on_a_missing_file() {
    for cmd in ["remove", "count"] {
        assert_error(
            bloomery().args([cmd, "f.bloom", "keys.txt"]).assert(),
            "cannot load `f.bloom`",
        );
    }
}

// ---------------------------------------------------------------- pipes

#[test]
fn broken_pipe_is_quiet_success() {
    let t = T::new();
    let input: String = (0..300_000u32).map(|i| format!("line-{i}\n")).collect();
    let input = t.write("big.txt", input.as_bytes());
    let f = t.create("f.bloom", &["-n", "300k", "-p", "0.01"]);
    bloomery().arg("add").arg(&f).arg(&input).assert().success();
    let runs: [Vec<std::ffi::OsString>; 3] = [
        vec!["dedup".into(), input.clone().into()],
        vec!["check".into(), f.clone().into(), input.clone().into()],
        vec!["gen-urls".into(), "--count".into(), "1M".into()],
    ];
    for args in runs {
        let mut child = std::process::Command::new(BIN)
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 64];
        stdout.read_exact(&mut first).unwrap();
        drop(stdout); // like `| head -c 64`
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("error") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn gen_urls_is_deterministic_and_disjoint() {
    let a = bloomery()
        .args(["gen-urls", "--count", "1000", "--seed", "4"])
        .output()
        .unwrap();
    let b = bloomery()
        .args(["gen-urls", "--count", "1000", "--seed", "4"])
        .output()
        .unwrap();
    assert_eq!(a.stdout, b.stdout);
    let present: std::collections::HashSet<_> = a.stdout.split(|b| *b == b'\n').collect();
    let absent = bloomery()
        .args([
            "gen-urls",
            "--count",
            "1000",
            "--offset",
            "1000000",
            "--sequential",
        ])
        .output()
        .unwrap();
    for l in absent
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
    {
        assert!(!present.contains(l));
    }
}

#[test]
fn long_lines_across_buffer_boundaries() {
    // > 1 MiB of input (the reader's buffer) with lines of many lengths, one of 3 MB, twice
    let mut uniq: Vec<Vec<u8>> = (0..60_000u32)
        .map(|i| format!("{}{i}", "x".repeat((i % 97) as usize)).into_bytes())
        .collect();
    uniq.insert(30_000, vec![b'L'; 3 << 20]);
    let mut input = Vec::new();
    for _ in 0..2 {
        for l in &uniq {
            input.extend_from_slice(l);
            input.push(b'\n');
        }
    }
    input.pop(); // no final newline
    let mut expected = Vec::new();
    for l in &uniq {
        expected.extend_from_slice(l);
        expected.push(b'\n');
    }
    bloomery()
        .args(["dedup", "-n", "100k", "-p", "1e-9"])
        .write_stdin(input)
        .assert()
        .success()
        .stdout(expected);
}
