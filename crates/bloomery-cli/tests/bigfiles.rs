//! Big filters, with small files: the real `bloomery` binary maps files instead of loading
//! them, verifies checksums in a streaming pass (or not, with `--no-verify`), and updates files
//! through a copy that is renamed over the original — so a killed or failing update leaves the
//! old file, and a damaged payload read without verification never crashes.

use std::path::Path;
use std::process::{Command as Std, Stdio};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

mod common;
use common::*;

/// Every kind, its payload damaged: with verification every reading and updating command
/// refuses the file (status 2, "checksum"); with `--no-verify` they answer (anything) and
/// exit normally, never by a signal or a panic; updates leave no temp file behind.
#[test]
fn no_verify_on_a_damaged_payload_answers_without_crashing() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(1919);
    let kinds: &[&[&str]] = &[
        &["--kind", "blocked"],
        &["--kind", "classic"],
        &["--kind", "partitioned"],
        &["--kind", "split-block"],
        &["--kind", "scalable"],
        &["--kind", "counting"],
        &["--kind", "blocked-counting"],
        &["--kind", "dlcbf"],
        &["--kind", "spectral", "--method", "rm"],
        &["--kind", "ibf"],
        &["--kind", "scbf"],
    ];
    for kind in kinds {
        let p = create(
            dir.path(),
            "f.bloom",
            &[&["-n", "2000", "-p", "0.01", "--force"][..], kind].concat(),
        );
        add(&p, 0..1000);
        let good = std::fs::read(&p).unwrap();
        let h = u32::from_le_bytes(good[12..16].try_into().unwrap()) as usize;
        for round in 0..3 {
            let mut bad = good.clone();
            for _ in 0..rng.gen_range(1..40) {
                let at = rng.gen_range(h..bad.len() - 8);
                bad[at] = if round == 0 { 0xff } else { rng.gen() };
            }
            std::fs::write(&p, &bad).unwrap();
            let what = format!("{kind:?} round {round}");
            let deletes = bloomery::Kind::from_id(u16::from_le_bytes([good[10], good[11]]))
                .unwrap()
                .capabilities()
                .remove;
            for cmd in [&["check"][..], &["count"], &["info"], &["add"], &["remove"]] {
                if cmd == ["remove"] && !deletes {
                    continue;
                }
                let out = Std::new(BIN)
                    .args(cmd)
                    .arg(&p)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .and_then(|mut c| {
                        use std::io::Write;
                        // the process may exit before it reads its input
                        let _ = c.stdin.take().unwrap().write_all(b"key-1\nkey-5000\n");
                        c.wait_with_output()
                    })
                    .unwrap();
                assert_eq!(clean_status(&out, &what), 2, "{what} {cmd:?}");
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(err.contains("checksum"), "{what} {cmd:?}: {err}");
                assert_eq!(std::fs::read(&p).unwrap(), bad, "{what} {cmd:?}: unchanged");
            }
            for cmd in [
                &["check", "--no-verify"][..],
                &["count", "--no-verify"],
                &["info", "--no-verify"],
                &["info", "--fast"],
                &["add", "--no-verify"],
                &["remove", "--no-verify"],
            ] {
                let out = Std::new(BIN)
                    .args(cmd)
                    .arg(&p)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .and_then(|mut c| {
                        use std::io::Write;
                        // the process may exit before it reads its input
                        let _ = c.stdin.take().unwrap().write_all(b"key-1\nkey-5000\n");
                        c.wait_with_output()
                    })
                    .unwrap();
                clean_status(&out, &format!("{what} {cmd:?}"));
            }
            assert!(stale_temp_files(dir.path()).is_empty(), "{kind:?}");
        }
    }
}

/// `add` killed at random points of its update (while copying, inserting, sealing or
/// renaming): the file afterwards is byte for byte the old one or the completed new one, and
/// it loads and answers; a stale temp file may be left (as after any interrupted save).
#[test]
fn an_add_killed_at_any_point_leaves_the_old_or_the_new_file() {
    let dir = tempfile::tempdir().unwrap();
    // 12 MiB: long enough to kill mid-way, small enough for CI
    let p = create(
        dir.path(),
        "f.bloom",
        &["--kind", "classic", "--bits", "100M", "--hashes", "4"],
    );
    add(&p, 0..1000);
    let old = std::fs::read(&p).unwrap();
    let input = dir.path().join("keys.txt");
    std::fs::write(&input, lines(1000..100_000)).unwrap();
    // the completed update, for comparison
    let done = dir.path().join("done.bloom");
    std::fs::copy(&p, &done).unwrap();
    bloomery()
        .arg("add")
        .arg(&done)
        .arg(&input)
        .assert()
        .success();
    let new = std::fs::read(&done).unwrap();
    std::fs::remove_file(&done).unwrap();
    // how long a whole add takes, to spread the kills over it
    let t0 = std::time::Instant::now();
    let scratch = dir.path().join("timing.bloom");
    std::fs::write(&scratch, &old).unwrap();
    bloomery()
        .arg("add")
        .arg(&scratch)
        .arg(&input)
        .assert()
        .success();
    let whole = t0.elapsed();
    std::fs::remove_file(&scratch).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    let (mut saw_old, mut saw_new) = (false, false);
    for round in 0..8 {
        std::fs::write(&p, &old).unwrap();
        let at = kill_at_random(
            Std::new(BIN).arg("add").arg(&p).arg(&input),
            whole,
            &mut rng,
        );
        let now = std::fs::read(&p).unwrap();
        assert!(
            now == old || now == new,
            "round {round} (killed after {at:?} of {whole:?}): neither the old nor the new file"
        );
        saw_old |= now == old;
        saw_new |= now == new;
        bloomery()
            .arg("check")
            .arg(&p)
            .write_stdin("key-999\n")
            .assert()
            .success();
        for t in stale_temp_files(dir.path()) {
            std::fs::remove_file(dir.path().join(t)).unwrap();
        }
    }
    assert!(saw_old, "no kill landed before the rename");
    let _ = saw_new; // a kill after the end leaves the new file; timing decides
}

/// An update whose writes fail (the file-size limit of the process is below the file's size,
/// so the copy cannot be written: an injected I/O error) ends with status 2 and leaves the
/// file as it was, and no temp file.
#[test]
fn an_update_that_cannot_write_leaves_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = create(dir.path(), "f.bloom", &["-n", "2M", "-p", "0.01"]);
    add(&p, 0..100);
    let old = std::fs::read(&p).unwrap();
    assert!(old.len() > 2 << 20);
    for cmd in ["add", "remove"] {
        let target = if cmd == "remove" {
            // a counting file
            let c = create(
                dir.path(),
                "c.bloom",
                &["-n", "2M", "-p", "0.01", "--kind", "counting", "--force"],
            );
            add(&c, 0..100);
            c
        } else {
            p.clone()
        };
        let before = std::fs::read(&target).unwrap();
        // bash's `ulimit -f` counts 1024-byte blocks; SIGXFSZ ignored, so writes fail EFBIG
        let out = Std::new("bash")
            .arg("-c")
            .arg(format!(
                "trap '' XFSZ; ulimit -f 1024; echo key-1 | exec {BIN} {cmd} {}",
                target.display()
            ))
            .output()
            .unwrap();
        assert_eq!(clean_status(&out, cmd), 2, "{cmd}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("cannot update"), "{cmd}: {err}");
        assert_eq!(std::fs::read(&target).unwrap(), before, "{cmd}");
        assert!(stale_temp_files(dir.path()).is_empty(), "{cmd}");
    }
    assert_eq!(std::fs::read(&p).unwrap(), old);
}

/// `check`, `info` and `add` on a filter file four times larger than the memory the process
/// may allocate (RLIMIT_DATA, set with bash's `ulimit -d` as `prlimit --data` would: heap and
/// anonymous maps, what loading a filter used). The file is mapped, so its pages are the page
/// cache's, not the process's; building the filter in memory fails under the same limit.
#[test]
fn commands_work_on_a_file_larger_than_the_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    // 150 MB of filter under a 32 MiB limit
    let p = create(
        dir.path(),
        "big.bloom",
        &["--kind", "blocked", "--bits", "1200M", "--hashes", "8"],
    );
    add(&p, 0..10_000);
    assert!(std::fs::metadata(&p).unwrap().len() > 4 * (32 << 20));
    // 32 MiB of data segment for the process (bash counts `ulimit -d` in KiB)
    let under_limit = |args: &[&str], file: &Path| {
        let mut c = Std::new("bash");
        c.arg("-c")
            .arg("ulimit -d 32768 && exec \"$@\"")
            .arg("limited")
            .arg(BIN)
            .args(args)
            .arg(file);
        c
    };
    let limited = |args: &[&str], stdin: &str| {
        let mut c = under_limit(args, &p);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().expect("bash runs the test process");
        use std::io::Write;
        let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
        child.wait_with_output().unwrap()
    };
    let out = limited(&["check"], "key-7\nkey-9999\nnever-added\n");
    assert_eq!(clean_status(&out, "check"), 0);
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("key-7\n") && printed.contains("key-9999\n"),
        "{printed}"
    );
    let out = limited(&["check", "--no-verify", "-c"], "key-1\n");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1\n");
    let out = limited(&["info", "--json"], "");
    assert_eq!(clean_status(&out, "info"), 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["items"], 10_000);
    let out = limited(&["add"], &lines(10_000..20_000));
    assert_eq!(
        clean_status(&out, "add"),
        0,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = limited(&["check", "-c"], &lines(0..20_000));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "20000\n");
    // the limit is real: even `create`, which only reads its empty filter's zero pages,
    // cannot map them under it
    let out = under_limit(
        &[
            "create", "--kind", "blocked", "--bits", "1200M", "--hashes", "8",
        ],
        &dir.path().join("in-memory.bloom"),
    )
    .output()
    .unwrap();
    assert_eq!(clean_status(&out, "create under the limit"), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("allocate"));
}

/// `info --fast` prints the header's figures without a pass; `info` with and without
/// verification agree; `union` into a new file leaves its inputs as they were and writes what
/// a union in memory writes; `dedup --state` updates its state file in place of a copy.
#[test]
fn header_only_info_union_and_dedup_state() {
    let dir = tempfile::tempdir().unwrap();
    let a = create(dir.path(), "a.bloom", &["-n", "100k", "-p", "0.01"]);
    let b = create(dir.path(), "b.bloom", &["-n", "100k", "-p", "0.01"]);
    add(&a, 0..5000);
    add(&b, 4000..9000);
    let out = bloomery()
        .args(["info", "--fast", "--json"])
        .arg(&a)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["items"], 5000);
    assert_eq!(v["kind"], "blocked");
    assert_eq!(v["capacity"], 100_000);
    assert_eq!(v["file_bytes"], std::fs::metadata(&a).unwrap().len());
    let info = |extra: &[&str]| {
        let out = bloomery()
            .args(["info", "--json"])
            .args(extra)
            .arg(&a)
            .output()
            .unwrap();
        assert!(out.status.success());
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    assert_eq!(info(&[]), info(&["--no-verify"]));
    let (a0, b0) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let u = dir.path().join("u.bloom");
    bloomery()
        .arg("union")
        .arg(&u)
        .arg(&a)
        .arg(&b)
        .assert()
        .success();
    assert_eq!(std::fs::read(&a).unwrap(), a0);
    assert_eq!(std::fs::read(&b).unwrap(), b0);
    let lib_a = bloomery::AnyFilter::from_bytes(&a0).unwrap();
    let mut want = lib_a.clone();
    want.union_with(&bloomery::AnyFilter::from_bytes(&b0).unwrap())
        .unwrap();
    assert_eq!(std::fs::read(&u).unwrap(), want.to_bytes());
    assert!(stale_temp_files(dir.path()).is_empty());
    // dedup --state: a fixed-size state updated in place of a copy
    let state = create(dir.path(), "seen.bloom", &["-n", "10k", "-p", "1e-4"]);
    let out = bloomery()
        .args(["dedup", "--state"])
        .arg(&state)
        .write_stdin("x\ny\nx\n")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "x\ny\n");
    let out = bloomery()
        .args(["dedup", "--state"])
        .arg(&state)
        .write_stdin("y\nz\n")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "z\n");
    let f = bloomery::AnyFilter::load(&state).unwrap();
    assert_eq!(f.len(), 3);
    assert!(stale_temp_files(dir.path()).is_empty());
}

/// `--kind` takes its values and their help from the library's kinds table, and an operation
/// a kind lacks is refused, before any pass over the file, with the library's message naming
/// the kinds that offer it.
#[test]
fn kinds_and_capabilities_come_from_the_library() {
    let out = bloomery().args(["create", "--help"]).output().unwrap();
    // the help wraps long lines: compare with whitespace collapsed
    let help = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for &k in bloomery::Kind::SETS.iter().chain(bloomery::Kind::COUNTERS) {
        assert!(
            help.contains(&format!("{}:", k.name())),
            "{k} missing from --kind"
        );
        assert!(help.contains(k.summary()), "{k}'s summary missing: {help}");
    }
    let dir = tempfile::tempdir().unwrap();
    let p = create(dir.path(), "s.bloom", &["-n", "1000", "-p", "0.01"]);
    let before = std::fs::read(&p).unwrap();
    let out = bloomery()
        .arg("remove")
        .arg(&p)
        .write_stdin("x\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let want = bloomery::Kind::Blocked
        .require(bloomery::kinds::Capability::Remove)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&want), "{err}");
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

/// `add` to a big blocked file (above the size where updates sweep the file in block order and
/// drop the pages behind them) writes the same file as the parallel insert (`--threads 2`,
/// which does not sweep) and as the library inserting in input order; keys repeat, so the
/// item count must not count a key twice.
#[test]
fn a_sweeping_add_writes_what_an_add_in_input_order_writes() {
    let dir = tempfile::tempdir().unwrap();
    // 80 MB: above the 64 MiB where updates sweep
    let a = create(
        dir.path(),
        "a.bloom",
        &["--kind", "blocked", "--bits", "640M", "--hashes", "7"],
    );
    add(&a, 0..1000);
    assert!(std::fs::metadata(&a).unwrap().len() > 64 << 20);
    let b = dir.path().join("b.bloom");
    std::fs::copy(&a, &b).unwrap();
    let old = std::fs::read(&a).unwrap();
    let input = dir.path().join("keys.txt");
    let text: String = lines(500..30_000) + &lines(0..2000);
    std::fs::write(&input, &text).unwrap();
    bloomery().arg("add").arg(&a).arg(&input).assert().success();
    bloomery()
        .args(["add", "--threads", "2"])
        .arg(&b)
        .arg(&input)
        .assert()
        .success();
    let swept = std::fs::read(&a).unwrap();
    assert_eq!(swept, std::fs::read(&b).unwrap());
    use bloomery::KeySet;
    let mut want = bloomery::AnyFilter::from_bytes(&old).unwrap();
    for line in text.lines() {
        want.try_insert_key(line.as_bytes()).unwrap();
    }
    assert_eq!(want.len(), 30_000);
    assert_eq!(swept, want.to_bytes());
}

/// A big blocked file is copied as `add`'s sweep advances: a payload damaged past the last
/// key's block is still found (the checksum is checked when the copy completes), the add is
/// refused and the file left as it was; `--no-verify` takes the damage as it is.
#[test]
fn a_sweeping_add_refuses_a_file_damaged_behind_its_keys() {
    let dir = tempfile::tempdir().unwrap();
    let a = create(
        dir.path(),
        "a.bloom",
        &["--kind", "blocked", "--bits", "640M", "--hashes", "7"],
    );
    let mut bytes = std::fs::read(&a).unwrap();
    assert!(bytes.len() > 64 << 20);
    // one bit in the last block, after every key's block in a sweep of few keys
    let at = bytes.len() - 8 - 1;
    bytes[at] ^= 0x10;
    std::fs::write(&a, &bytes).unwrap();
    let out = bloomery()
        .arg("add")
        .arg(&a)
        .write_stdin(
            "key-1
",
        )
        .output()
        .unwrap();
    assert_eq!(clean_status(&out, "add"), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("checksum"));
    assert!(std::fs::read(&a).unwrap() == bytes, "the file is as it was");
    assert!(stale_temp_files(dir.path()).is_empty());
    let out = bloomery()
        .args(["add", "--no-verify"])
        .arg(&a)
        .write_stdin(
            "key-1
",
        )
        .output()
        .unwrap();
    assert_eq!(clean_status(&out, "add --no-verify"), 0);
    let after = std::fs::read(&a).unwrap();
    assert_eq!(after[at], bytes[at], "the damage is kept, not repaired");
    let out = bloomery()
        .args(["check", "--no-verify", "-c"])
        .arg(&a)
        .write_stdin(
            "key-1
",
        )
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1\n");
}

/// `flatten` builds its (smaller) result in memory: a result over `--max-memory` is refused
/// before it is built, naming the flag, and OUT is not written; under the limit the same
/// command succeeds (the input itself is mapped, whatever its size). `fold` of a plain file
/// streams, so the limit does not apply (see `tests/streamed.rs`); a compressed file is
/// decompressed and folded in memory, within the limit.
#[test]
fn fold_and_flatten_refuse_a_result_over_the_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    // 10 MB of blocked filter: its half is 5 MB
    let big = create(
        dir.path(),
        "big.bloom",
        &["--kind", "blocked", "--bits", "80M", "--hashes", "8"],
    );
    add(&big, 0..1000);
    let packed = dir.path().join("big.z");
    bloomery()
        .arg("compress")
        .arg(&big)
        .arg(&packed)
        .assert()
        .success();
    // about 4.8 MB of 4-bit counters: the plain filter is about 1.2 MB
    let counting = create(
        dir.path(),
        "c.bloom",
        &["--kind", "counting", "-n", "1M", "-p", "0.01"],
    );
    let half = dir.path().join("half.bloom");
    let plain = dir.path().join("plain.bloom");
    let refused = |args: &[&str], out: &Path| {
        let o = bloomery().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("--max-memory"), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?}: OUT was written");
        assert!(stale_temp_files(dir.path()).is_empty());
    };
    let (z, h) = (packed.to_str().unwrap(), half.to_str().unwrap());
    refused(&["--max-memory", "4M", "fold", z, h], &half);
    let (c, pl) = (counting.to_str().unwrap(), plain.to_str().unwrap());
    refused(&["--max-memory", "1M", "flatten", c, pl], &plain);
    bloomery()
        .args(["--max-memory", "16M", "fold", z, h])
        .assert()
        .success();
    bloomery()
        .args(["--max-memory", "2M", "flatten", c, pl])
        .assert()
        .success();
    let out = bloomery()
        .arg("check")
        .arg("-c")
        .arg(&half)
        .write_stdin(lines(0..1000))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1000\n");
}

/// Two layouts of a blocked filter, as `create` makes them, a little over two 8 MiB
/// pieces of the one-pass update long (its pieces' edges are crossed): `-n/-p` is the salted
/// layout, `--bits/--hashes` the positions layout.
const BLOCKED_LAYOUTS: [(&str, &[&str]); 2] = [
    ("salted", &["-n", "14M", "-p", "0.01"]),
    (
        "positions",
        &["--kind", "blocked", "--bits", "150M", "--hashes", "7"],
    ),
];

/// `add` with the update forced by `BLOOMERY_UPDATE`.
fn add_by(how: &str, p: &Path, input: &Path) -> std::process::Output {
    let out = bloomery_no_color()
        .env("BLOOMERY_UPDATE", how)
        .arg("add")
        .arg(p)
        .arg(input)
        .output()
        .unwrap();
    assert_eq!(
        clean_status(&out, how),
        0,
        "{how}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `add` through the one-pass update (the file read, changed and written with its new
/// checksum in one pass) writes the file the sweep's update writes, and the library inserting
/// in input order, in both layouts: the same bytes, the same summary (new items, fill, rate);
/// every key added is found; no temp file is left. Keys repeat, and some were in the file
/// before, so the item count must count each new key once. A damaged file is refused.
#[test]
fn a_one_pass_add_writes_what_the_sweeping_add_writes() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("keys.txt");
    let text: String = lines(500..40_000) + &lines(0..3000);
    std::fs::write(&input, &text).unwrap();
    for (layout, args) in BLOCKED_LAYOUTS {
        let a = create(dir.path(), "a.bloom", &[args, &["--force"]].concat());
        add(&a, 0..1000);
        let old = std::fs::read(&a).unwrap();
        assert!(old.len() > 2 * (8 << 20), "{layout}: {}", old.len());
        let b = dir.path().join("b.bloom");
        std::fs::copy(&a, &b).unwrap();
        let one_pass = add_by("one-pass", &a, &input);
        let swept = add_by("sweep", &b, &input);
        // the path forced is the one taken, and says so
        let summary = |out: &std::process::Output, path: &str| {
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            let (said, rest) = err.split_once('\n').unwrap_or_default();
            assert!(said.contains(path), "{layout}: {err}");
            rest.to_owned()
        };
        let (one_pass, swept) = (
            summary(&one_pass, "in one pass"),
            summary(&swept, "by the copy and sweep"),
        );
        let got = std::fs::read(&a).unwrap();
        assert!(
            got == std::fs::read(&b).unwrap(),
            "{layout}: the files differ"
        );
        assert_eq!(one_pass, swept, "{layout}: the summaries differ");
        assert!(
            one_pass.contains("39,000 new items"),
            "{layout}: {one_pass}"
        );
        use bloomery::KeySet;
        let mut want = bloomery::AnyFilter::from_bytes(&old).unwrap();
        for line in text.lines() {
            want.try_insert_key(line.as_bytes()).unwrap();
        }
        assert_eq!(want.len(), 40_000, "{layout}");
        assert!(
            got == want.to_bytes(),
            "{layout}: not the in-memory insert's file"
        );
        // zero false negatives, the file's checksum verified
        let out = bloomery()
            .args(["check", "-c"])
            .arg(&a)
            .write_stdin(lines(0..40_000))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "40000\n", "{layout}");
        assert!(stale_temp_files(dir.path()).is_empty(), "{layout}");
    }
    // a payload damaged behind every key's block: the one pass checks the source's checksum
    // as it reads it, refuses the file and leaves it as it was
    let a = dir.path().join("a.bloom");
    let mut bytes = std::fs::read(&a).unwrap();
    let at = bytes.len() - 8 - 1;
    bytes[at] ^= 0x10;
    std::fs::write(&a, &bytes).unwrap();
    let out = bloomery()
        .env("BLOOMERY_UPDATE", "one-pass")
        .arg("add")
        .arg(&a)
        .write_stdin("key-1\n")
        .output()
        .unwrap();
    assert_eq!(clean_status(&out, "one-pass add of a damaged file"), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("checksum"));
    assert!(std::fs::read(&a).unwrap() == bytes, "the file is as it was");
    assert!(stale_temp_files(dir.path()).is_empty());
    // a choice that is not one of the three is refused, the file untouched
    let before = std::fs::read(&a).unwrap();
    let out = bloomery()
        .env("BLOOMERY_UPDATE", "fast")
        .arg("add")
        .arg(&a)
        .write_stdin("key-1\n")
        .output()
        .unwrap();
    assert_eq!(clean_status(&out, "BLOOMERY_UPDATE=fast"), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("one-pass, sweep or auto"));
    assert!(std::fs::read(&a).unwrap() == before);
}

/// `add` through the one-pass update killed at random points (counting the new keys, in the
/// pass, at the fsync or the rename), in both layouts: the file afterwards is byte for byte
/// the old one or the completed new one, it loads with its checksum verified and finds every
/// key it held (and every new key, when it is the new one).
#[test]
fn a_one_pass_add_killed_at_any_point_leaves_the_old_or_the_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("keys.txt");
    std::fs::write(&input, lines(1000..150_000)).unwrap();
    let mut rng = StdRng::seed_from_u64(20);
    let mut saw_old = 0;
    for (layout, args) in BLOCKED_LAYOUTS {
        let p = create(dir.path(), "f.bloom", &[args, &["--force"]].concat());
        add(&p, 0..1000);
        let old = std::fs::read(&p).unwrap();
        // the completed update, and how long it takes, to spread the kills over it
        let done = dir.path().join("done.bloom");
        std::fs::write(&done, &old).unwrap();
        let t0 = std::time::Instant::now();
        let out = add_by("one-pass", &done, &input);
        let whole = t0.elapsed();
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("in one pass"),
            "{layout}"
        );
        let new = std::fs::read(&done).unwrap();
        std::fs::remove_file(&done).unwrap();
        for round in 0..6 {
            std::fs::write(&p, &old).unwrap();
            let at = kill_at_random(
                Std::new(BIN)
                    .env("BLOOMERY_UPDATE", "one-pass")
                    .arg("add")
                    .arg(&p)
                    .arg(&input),
                whole,
                &mut rng,
            );
            let now = std::fs::read(&p).unwrap();
            let what = format!("{layout} round {round} (killed after {at:?} of {whole:?})");
            assert!(
                now == old || now == new,
                "{what}: neither the old nor the new file"
            );
            let (keys, want) = if now == old {
                saw_old += 1;
                (lines(0..1000), "1000\n")
            } else {
                (lines(0..150_000), "150000\n")
            };
            let out = bloomery()
                .args(["check", "-c"])
                .arg(&p)
                .write_stdin(keys)
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{what}");
            for t in stale_temp_files(dir.path()) {
                std::fs::remove_file(dir.path().join(t)).unwrap();
            }
        }
    }
    assert!(saw_old > 0, "no kill landed before the rename");
}

/// `add` of more keys than one batch (4 Mi) through the one-pass update: the first batch goes
/// into the pass that copies the file, the rest is inserted into the copy and sealed by a
/// checksum pass. The file and the summary are those of the copy-and-sweep update (which
/// sweeps each batch in turn), keys repeated across batches are not counted twice, and every
/// key is found.
#[test]
fn a_one_pass_add_of_more_than_one_batch_writes_what_the_sweeping_add_writes() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("keys.txt");
    let n = (4u32 << 20) + 5000;
    // the last 5,000 keys (in the second batch) repeat keys of the first
    std::fs::write(&input, lines(0..n - 5000) + &lines(0..5000)).unwrap();
    let (layout, args) = BLOCKED_LAYOUTS[0];
    let a = create(dir.path(), "a.bloom", &[args, &["--force"]].concat());
    let b = dir.path().join("b.bloom");
    std::fs::copy(&a, &b).unwrap();
    let summary = |out: std::process::Output, path: &str| {
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let (said, rest) = err.split_once('\n').unwrap_or_default();
        assert!(said.contains(path), "{layout}: {err}");
        rest.to_owned()
    };
    let one_pass = summary(add_by("one-pass", &a, &input), "in one pass");
    let swept = summary(add_by("sweep", &b, &input), "by the copy and sweep");
    assert_eq!(one_pass, swept, "{layout}: the summaries differ");
    assert!(
        std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
        "{layout}: the files differ"
    );
    // at most the distinct keys are new (fewer by the false positives among them)
    let new: u64 = one_pass
        .split(" new items")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .map(|s| s.replace(',', "").parse().unwrap())
        .unwrap();
    let distinct = u64::from(n - 5000);
    assert!(
        new <= distinct && new > distinct - 1000,
        "{layout}: {one_pass}"
    );
    let out = bloomery()
        .args(["check", "-c"])
        .arg(&a)
        .arg(&input)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{n}\n"));
    assert!(stale_temp_files(dir.path()).is_empty());
}
