//! Integration tests of the real `bloomery` binary: secrets stay secret, Parquet-compatibility
//! is never lost silently, hostile inputs fail cleanly, and messages say what happened.

use std::path::Path;

use bloomery::hashing::{HashAlgorithm, SeedKind};
use bloomery::{Filter, KeyHasher, Persist, SplitBlockBloomFilter};
use predicates::prelude::*;
use tempfile::TempDir;

mod common;
use common::{bloomery_default_color as bloomery, BIN};

fn tmp() -> TempDir {
    tempfile::tempdir().unwrap()
}

fn stdout_of(args: &[&str], file: &Path) -> String {
    let out = bloomery().args(args).arg(file).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every spelling of a 128-bit secret and its halves that could appear in output.
fn spellings(secret: u128) -> Vec<String> {
    let mut v = vec![
        secret.to_string(),
        format!("{secret:x}"),
        format!("{secret:X}"),
    ];
    for half in [secret as u64, (secret >> 64) as u64] {
        v.push(half.to_string());
        v.push(format!("{half:x}"));
        v.push(format!("{half:X}"));
    }
    v
}

fn secret_of(file: &Path) -> u128 {
    let b = std::fs::read(file).unwrap();
    u128::from_le_bytes(b[32..48].try_into().unwrap())
}

#[test]
fn info_never_prints_a_keyed_secret() {
    let d = tmp();
    let keyed = d.path().join("keyed.bloom");
    bloomery()
        .args(["create", "-n", "1000", "-p", "0.01", "--keyed"])
        .arg(&keyed)
        .assert()
        .success();
    // A file pairing keyed SipHash with a "user" seed kind (as a damaged or hand-made file
    // could) still holds a secret.
    let forged = d.path().join("forged.bloom");
    let secret: u128 = 0x0123_4567_89AB_CDEF_FEDC_BA98_7654_3210;
    let h = KeyHasher::from_parts(HashAlgorithm::SipHash13_128, SeedKind::User, secret).unwrap();
    let mut f = bloomery::BlockedBloomFilter::builder()
        .capacity(1000)
        .fpr(0.01)
        .hasher(h)
        .try_build()
        .unwrap();
    f.insert("x");
    f.save(&forged).unwrap();
    for file in [&keyed, &forged] {
        let s = secret_of(file);
        assert_ne!(s, 0);
        for args in [&["info"][..], &["info", "--json"]] {
            let out = stdout_of(args, file);
            for sp in spellings(s) {
                assert!(!out.contains(&sp), "{args:?} printed the secret: {out}");
            }
            assert!(out.contains("siphash13-128"), "{out}");
        }
        let j: serde_json::Value =
            serde_json::from_str(&stdout_of(&["info", "--json"], file)).unwrap();
        assert!(j["seed"].is_null(), "{j}");
    }
}

#[test]
fn split_block_refuses_seed_and_keyed() {
    let d = tmp();
    for extra in [&["--seed", "5"][..], &["--keyed"]] {
        let p = d.path().join("sb.bloom");
        bloomery()
            .args([
                "create",
                "--kind",
                "split-block",
                "-n",
                "1000",
                "-p",
                "0.01",
            ])
            .args(extra)
            .arg(&p)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("Parquet"))
            .stderr(predicate::str::contains("--kind blocked"));
        assert!(!p.exists());
    }
    // dedup builds its filter the same way (it has --seed, not --keyed)
    bloomery()
        .args([
            "dedup",
            "--kind",
            "split-block",
            "-n",
            "100",
            "-p",
            "0.01",
            "--seed",
            "5",
        ])
        .write_stdin("a\nb\n")
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains("Parquet"));
    // without them: a Parquet-compatible filter, and `info` says so
    let p = d.path().join("ok.bloom");
    bloomery()
        .args([
            "create",
            "--kind",
            "split-block",
            "-n",
            "1000",
            "-p",
            "0.01",
        ])
        .arg(&p)
        .assert()
        .success();
    let out = stdout_of(&["info"], &p);
    assert!(
        out.contains("parquet") && out.contains("compatible (xxHash64"),
        "{out}"
    );
    let j: serde_json::Value = serde_json::from_str(&stdout_of(&["info", "--json"], &p)).unwrap();
    assert_eq!(j["parquet_compatible"], true);
    // a seeded split-block file made by the library loads, and `info` warns
    let seeded = d.path().join("seeded.bloom");
    SplitBlockBloomFilter::builder()
        .capacity(100)
        .fpr(0.01)
        .seed(5)
        .try_build()
        .unwrap()
        .save(&seeded)
        .unwrap();
    let out = stdout_of(&["info"], &seeded);
    assert!(out.contains("NOT compatible"), "{out}");
    let j: serde_json::Value =
        serde_json::from_str(&stdout_of(&["info", "--json"], &seeded)).unwrap();
    assert_eq!(j["parquet_compatible"], false);
    // other kinds: no such field
    let b = d.path().join("b.bloom");
    bloomery()
        .args(["create", "-n", "100", "-p", "0.01"])
        .arg(&b)
        .assert()
        .success();
    let j: serde_json::Value = serde_json::from_str(&stdout_of(&["info", "--json"], &b)).unwrap();
    assert!(j["parquet_compatible"].is_null());
    assert!(!stdout_of(&["info"], &b).contains("parquet"));
}

#[test]
fn a_directory_given_as_a_filter_says_so() {
    let d = tmp();
    for cmd in [
        &["info"][..],
        &["check"],
        &["add"],
        &["count"],
        &["estimate"],
    ] {
        bloomery()
            .args(cmd)
            .arg(d.path())
            .write_stdin("a\n")
            .assert()
            .code(2)
            .stderr(predicate::str::contains(
                "is a directory, not a filter file",
            ))
            .stderr(predicate::str::contains("No such device").not());
    }
}

#[test]
fn a_missing_file_is_named_once() {
    let d = tmp();
    let p = d.path().join("missing.bloom");
    for cmd in [&["info"][..], &["check"], &["add"], &["count"]] {
        let out = bloomery()
            .args(cmd)
            .arg(&p)
            .write_stdin("a\n")
            .assert()
            .code(2)
            .get_output()
            .stderr
            .clone();
        let err = String::from_utf8(out).unwrap();
        assert!(err.contains("No such file"), "{cmd:?}: {err}");
        assert_eq!(err.matches("missing.bloom").count(), 1, "{cmd:?}: {err}");
    }
}

#[test]
fn memory_limit_errors_name_the_flag_or_the_ram() {
    let d = tmp();
    let p = d.path().join("f.bloom");
    // the limit came from --max-memory: the message says so and how to raise it
    bloomery()
        .args(["--max-memory", "1K", "create", "-n", "1M", "-p", "0.01"])
        .arg(&p)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("set by --max-memory"))
        .stderr(predicate::str::contains("raise --max-memory"))
        .stderr(predicate::str::contains("max_bytes").not())
        .stderr(predicate::str::contains("RAM").not());
    // a new filter is written, never loaded: not bound by the machine's RAM but by the disk
    bloomery()
        .args(["create", "-n", "100000G", "-p", "0.0001"])
        .arg(&p)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("on disk"))
        .stderr(predicate::str::contains("free; ask for a smaller capacity"))
        .stderr(predicate::str::contains("max_bytes").not());
    assert!(!p.exists());
    // loading a file over the limit: no sizing advice, the flag named (a compressed file:
    // it is decompressed into memory; a plain one is mapped, which the limit does not bound)
    bloomery()
        .args(["create", "-n", "1M", "-p", "0.01"])
        .arg(&p)
        .assert()
        .success();
    let packed = p.with_extension("bloomz");
    bloomery()
        .arg("compress")
        .arg(&p)
        .arg(&packed)
        .assert()
        .success();
    bloomery()
        .args(["--max-memory", "100K", "info"])
        .arg(&p)
        .assert()
        .success();
    bloomery()
        .args(["--max-memory", "100K", "info"])
        .arg(&packed)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot load"))
        .stderr(predicate::str::contains(
            "set by --max-memory; raise --max-memory",
        ))
        .stderr(predicate::str::contains("capacity").not());
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_standard_output_is_named() {
    let d = tmp();
    let p = d.path().join("f.bloom");
    bloomery()
        .args(["create", "-n", "100", "-p", "0.01"])
        .arg(&p)
        .assert()
        .success();
    let keys = d.path().join("keys.txt");
    std::fs::write(&keys, "a\nb\n").unwrap();
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    for args in [&["check", "-v"][..], &["info"], &["info", "--json"]] {
        let mut c = std::process::Command::new(BIN);
        c.args(args).arg(&p);
        if args[0] == "check" {
            c.arg(&keys);
        }
        let out = c
            .stdin(std::process::Stdio::null())
            .stdout(full())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("cannot write to standard output"),
            "{args:?}: {err}"
        );
    }
    let mut c = std::process::Command::new(BIN);
    c.arg("dedup")
        .stdin(std::process::Stdio::piped())
        .stdout(full())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"a\nb\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot write to standard output"), "{err}");
}

#[test]
fn counts_take_the_right_number_and_no_target_reads_none() {
    let d = tmp();
    let p = d.path().join("f.bloom");
    bloomery()
        .args(["create", "-n", "100", "-p", "0.01"])
        .arg(&p)
        .assert()
        .success();
    bloomery()
        .arg("add")
        .arg(&p)
        .write_stdin("one\n")
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "1 line read, 1 new item, 1 in total",
        ));
    bloomery()
        .arg("add")
        .arg(&p)
        .write_stdin("one\ntwo\n")
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "2 lines read, 1 new item, 2 in total",
        ));
    let u = d.path().join("u.bloom");
    bloomery()
        .arg("union")
        .arg(&u)
        .arg(&p)
        .assert()
        .success()
        .stderr(predicate::str::contains("union of 1 filter,"));
    bloomery()
        .arg("dedup")
        .write_stdin("x\n")
        .assert()
        .success()
        .stderr(predicate::str::contains("1 line read"))
        .stderr(predicate::str::contains("1 new item ("));
    // an explicit shape has no target rate: `create`, `add` and `info` all say "none"
    let s = d.path().join("shape.bloom");
    bloomery()
        .args(["create", "--bits", "1000", "--hashes", "3"])
        .arg(&s)
        .assert()
        .success()
        .stderr(predicate::str::contains("capacity none, target fpr none"));
    bloomery()
        .arg("add")
        .arg(&s)
        .write_stdin("a\n")
        .assert()
        .success()
        .stderr(predicate::str::contains("(target none)"))
        .stderr(predicate::str::contains("(target 0)").not());
    assert!(stdout_of(&["info"], &s).contains("(target none)"));
    // counting kinds
    let c = d.path().join("c.bloom");
    bloomery()
        .args(["create", "--kind", "counting", "-n", "100", "-p", "0.01"])
        .arg(&c)
        .assert()
        .success();
    bloomery()
        .arg("add")
        .arg(&c)
        .write_stdin("a\n")
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "1 line read, 1 increment, 1 in total",
        ));
    bloomery()
        .arg("remove")
        .arg(&c)
        .write_stdin("a\n")
        .assert()
        .success()
        .stderr(predicate::str::contains("1 line read, 1 removed"));
}

fn xml_dir(docs: &[(&str, &str)]) -> TempDir {
    let d = tmp();
    for (name, text) in docs {
        std::fs::write(d.path().join(name), text).unwrap();
    }
    d
}

#[test]
fn xml_index_skips_malformed_documents_only_when_asked() {
    let d = xml_dir(&[
        ("a.xml", "<root><x><y/></x></root>"),
        ("b.xml", "<root><x></root>"),
        ("c.xml", "<root><z/></root>"),
    ]);
    let out = d.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let f = out.join("f.bbf");
    bloomery()
        .args(["xml", "index"])
        .arg(d.path())
        .arg("-o")
        .arg(&f)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("b.xml` is not well-formed XML"))
        .stderr(predicate::str::contains("--skip-invalid"));
    assert!(!f.exists());
    bloomery()
        .args(["xml", "index", "--skip-invalid"])
        .arg(d.path())
        .arg("-o")
        .arg(&f)
        .assert()
        .success()
        .stderr(predicate::str::contains("warning: skipped `"))
        .stderr(predicate::str::contains("b.xml`: not well-formed XML"))
        .stderr(predicate::str::contains(
            "indexed 2 documents (1 document skipped as not well-formed XML)",
        ));
    // the well-formed documents were indexed
    bloomery()
        .args(["xml", "query"])
        .arg(&f)
        .args(["/root/x/y", "/root/z"])
        .assert()
        .success()
        .stdout("/root/x/y\n/root/z\n");
    // nothing well-formed: an error, not an empty filter
    let bad = xml_dir(&[("b.xml", "<root><x></root>")]);
    bloomery()
        .args(["xml", "index", "--skip-invalid"])
        .arg(bad.path())
        .arg("-o")
        .arg(out.join("g.bbf"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no well-formed XML among the 1 document given",
        ));
    // one document: singular
    let one = xml_dir(&[("a.xml", "<r><s/></r>")]);
    bloomery()
        .args(["xml", "index"])
        .arg(one.path())
        .arg("-o")
        .arg(out.join("h.bbf"))
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "indexed 1 document: 2 elements, 1 distinct root-to-leaf path,",
        ));
}

/// A compressed classic file whose container declares `plain_len` bytes of all-zero plain
/// payload (a 17-byte stream), with a wrong plain checksum: a decompression bomb.
fn bomb(plain_len: u64) -> Vec<u8> {
    let mut f = bloomery::BloomFilter::try_new(100, 0.01).unwrap();
    f.insert("x");
    let c = bloomery::compress::compress_file(&f.to_bytes()).unwrap();
    let h = u32::from_le_bytes(c[12..16].try_into().unwrap()) as usize;
    let mut container = Vec::new();
    container.extend_from_slice(&plain_len.to_le_bytes());
    container.extend_from_slice(&0xDEADu64.to_le_bytes());
    container.extend_from_slice(&17u64.to_le_bytes());
    container.push(0xB1);
    container.extend_from_slice(&(plain_len * 8).to_le_bytes());
    container.extend_from_slice(&0u64.to_le_bytes());
    container.resize(container.len().div_ceil(64) * 64, 0);
    let mut out = c[..h].to_vec();
    out[16..24].copy_from_slice(&(container.len() as u64).to_le_bytes());
    out.extend_from_slice(&container);
    let sum = xxhash_rust::xxh3::xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

#[test]
fn a_decompression_bomb_fails_cleanly() {
    let d = tmp();
    // 3 GiB declared in a file of a few hundred bytes, under --max-memory 1G: refused at once
    let p = d.path().join("bomb.bloom");
    std::fs::write(&p, bomb(3 << 30)).unwrap();
    assert!(std::fs::metadata(&p).unwrap().len() < 400);
    for cmd in [&["info"][..], &["check"]] {
        bloomery()
            .args(["--max-memory", "1G"])
            .args(cmd)
            .arg(&p)
            .write_stdin("a\n")
            .timeout(std::time::Duration::from_secs(20))
            .assert()
            .code(2)
            .stderr(predicate::str::contains("cannot load"))
            .stderr(predicate::str::contains("set by --max-memory"));
    }
    // under the limit: rebuilt into memory it never touches, then refused by its checksum
    let q = d.path().join("bomb2.bloom");
    std::fs::write(&q, bomb(32 << 20)).unwrap();
    bloomery()
        .arg("info")
        .arg(&q)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("checksum mismatch"));
}

/// A bomb under the memory limit on a machine with little memory: 512 MiB declared by a file of
/// a few hundred bytes, no --max-memory, and an address space with room for the payload once
/// but not three times. Decompression makes one allocation of the declared size, decodes into
/// it and fails on the checksum, cleanly; it must never abort on a failed allocation.
#[cfg(target_os = "linux")]
#[test]
fn a_decompression_bomb_never_aborts_when_memory_runs_out() {
    let d = tmp();
    let p = d.path().join("bomb.bloom");
    std::fs::write(&p, bomb(512 << 20)).unwrap();
    // 1,300,000 KiB of address space: the payload once (and the binary), not three times
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1300000 && exec \"$0\" info \"$1\"")
        .arg(BIN)
        .arg(&p)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{:?}: {err}", out.status);
    assert!(err.contains("checksum mismatch"), "{err}");
}

/// A damaged or foreign file is named once in the error, whichever layer found the damage
/// (the library names the file in its format errors; the command's context names it too).
#[test]
fn a_damaged_file_is_named_once() {
    let d = tmp();
    let good = d.path().join("good.bloom");
    bloomery()
        .args(["create", "-n", "1000", "-p", "0.01"])
        .arg(&good)
        .assert()
        .success();
    let mut bytes = std::fs::read(&good).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1; // the checksum trailer
    let damaged = d.path().join("damaged.bloom");
    std::fs::write(&damaged, &bytes).unwrap();
    let foreign = d.path().join("foreign.bloom");
    std::fs::write(&foreign, vec![7u8; 4096]).unwrap();
    for (file, what) in [(&damaged, "checksum mismatch"), (&foreign, "bad magic")] {
        for cmd in ["check", "info", "add"] {
            let out = bloomery()
                .arg(cmd)
                .arg(file)
                .write_stdin("a\n")
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            let name = file.file_name().unwrap().to_str().unwrap();
            assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
            assert!(err.contains(what), "{cmd}: {err}");
            assert_eq!(err.matches(name).count(), 1, "{cmd}: {err}");
        }
    }
}

/// `dedup --state` on a counting-kind file is refused from the header, before the file is
/// copied or its checksum read: with its payload damaged the error is still the kind's.
#[test]
fn dedup_state_refuses_a_counting_file_from_its_header() {
    let dir = tmp();
    let path = dir.path().join("c.bloom");
    bloomery()
        .arg("create")
        .arg(&path)
        .args(["--kind", "counting", "-n", "1000", "-p", "0.01"])
        .assert()
        .success();
    let mut b = std::fs::read(&path).unwrap();
    let n = b.len();
    b[n - 100] ^= 0xff; // in the payload: a checksum pass would refuse it
    std::fs::write(&path, &b).unwrap();
    let out = bloomery()
        .args(["dedup", "--state"])
        .arg(&path)
        .write_stdin("a\nb\n")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("a counting kind"), "{err}");
    assert!(!err.contains("checksum"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), b);
    assert!(common::stale_temp_files(dir.path()).is_empty());
}

/// Run `bloomery ARGS` under an address-space limit of `kib` KiB (`ulimit -v`, which counts
/// the file maps as well as the heap), `stdin` on its standard input.
#[cfg(target_os = "linux")]
fn under_address_limit(kib: u64, args: &[&str], stdin: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(BIN)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

/// Every command family under an address-space limit, on a compressed bomb (128 MiB of plain
/// payload declared by a file of a few hundred bytes, its plain checksum wrong) and on dense
/// 16 MB files (random bits and counters, re-signed): reading (`check`, `info`, `estimate`),
/// updating (`add`), combining (`union`, `fold`) and coding (`compress`, `diff`, `patch`).
/// The bomb is refused by every one of them (status 2, never an abort on a failed
/// allocation) in room for its payload once; the dense files are served with `--max-memory
/// 8M` in 128 MiB of address space (the binary and its threads take about half of it).
#[cfg(target_os = "linux")]
#[test]
fn every_command_family_stays_within_an_address_space_limit() {
    use rand::{RngCore, SeedableRng};
    let d = tmp();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    let bomb_path = p("bomb.bloom");
    std::fs::write(&bomb_path, bomb(128 << 20)).unwrap();
    let b = bomb_path.as_str();
    let (out, z, delta) = (p("out.bloom"), p("out.bloomz"), p("out.delta"));
    let bomb_cases: [Vec<&str>; 9] = [
        vec!["check", b],
        vec!["info", b],
        vec!["estimate", b, b],
        vec!["add", b],
        vec!["union", &out, b, b],
        vec!["fold", b, &out],
        vec!["compress", b, &z],
        vec!["diff", b, b, &delta],
        vec!["patch", b, b, &out],
    ];
    for args in &bomb_cases {
        // room for the payload once, not three times
        let o = under_address_limit(400_000, args, "k\n");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {:?}: {err}", o.status);
        assert!(!err.contains("memory allocation"), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read(b).unwrap(), bomb(128 << 20));

    // dense files: a classic filter and a counting filter of 16 MB, random payloads
    let dense = |name: &str, kind: &[&str], seed: u64| -> String {
        let path = p(name);
        let mut args = vec!["create", &path, "--kind"];
        args.extend_from_slice(kind);
        bloomery().args(&args).assert().success();
        let mut bytes = std::fs::read(&path).unwrap();
        let h = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
        let n = bytes.len() - 8;
        rand::rngs::StdRng::seed_from_u64(seed).fill_bytes(&mut bytes[h..n]);
        let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..n]);
        bytes[n..].copy_from_slice(&sum.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        path
    };
    let f = dense(
        "dense.bloom",
        &["classic", "--bits", "128M", "--hashes", "7"],
        1,
    );
    let c = dense(
        "dense.cbf",
        &["counting", "--bits", "32M", "--hashes", "7"],
        2,
    );
    assert!(std::fs::metadata(&f).unwrap().len() >= 16_000_000);
    let (f, c) = (f.as_str(), c.as_str());
    let (out2, out3) = (p("folded.bloom"), p("patched.bloom"));
    let dense_cases: [Vec<&str>; 11] = [
        vec!["check", f],
        vec!["info", f],
        vec!["estimate", f, f],
        vec!["add", f],
        vec!["union", &out, f, f],
        vec!["fold", f, &out2],
        vec!["compress", f, &z],
        vec!["diff", f, &out, &delta],
        vec!["patch", f, &delta, &out3],
        vec!["info", c],
        vec!["add", c],
    ];
    for args in &dense_cases {
        let mut all = vec!["--max-memory", "8M"];
        all.extend_from_slice(args);
        let o = under_address_limit(128 << 10, &all, "k\n");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{args:?}: {:?}: {err}",
            o.status
        );
    }
    // the patched file is the union's (the delta's target)
    assert_eq!(std::fs::read(&out3).unwrap(), std::fs::read(&out).unwrap());
}
