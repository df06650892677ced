//! Integration tests of `compress`, `decompress`, `diff`, `patch` and of compressed files in
//! the other commands, on the real binary and temp files.

use std::path::{Path, PathBuf};

use predicates::prelude::*;
use tempfile::TempDir;

mod common;
use common::{bloomery, info_json, lines};

struct T(TempDir);

impl T {
    fn new() -> Self {
        Self(tempfile::tempdir().unwrap())
    }
    fn p(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
    /// A filter of `kind` for 20k items holding keys `range`.
    fn filter(&self, name: &str, kind: &str, range: std::ops::Range<u32>) -> PathBuf {
        let p = self.p(name);
        bloomery()
            .args(["create", "-n", "20000", "-p", "0.01", "--kind", kind])
            .arg(&p)
            .assert()
            .success();
        bloomery()
            .arg("add")
            .arg(&p)
            .write_stdin(lines(range))
            .assert()
            .success();
        p
    }
}

fn run(args: &[&Path]) -> assert_cmd::assert::Assert {
    bloomery().args(args).assert()
}

#[test]
fn compress_decompress_round_trip_every_set_kind() {
    let t = T::new();
    for kind in [
        "blocked",
        "classic",
        "partitioned",
        "split-block",
        "scalable",
    ] {
        let plain = t.filter(&format!("{kind}.bloom"), kind, 0..5000);
        let z = t.p(&format!("{kind}.bloomz"));
        let back = t.p(&format!("{kind}.back"));
        run(&[Path::new("compress"), &plain, &z])
            .success()
            .stderr(predicate::str::contains("entropy bound"));
        run(&[Path::new("decompress"), &z, &back]).success();
        let (a, b, c) = (
            std::fs::read(&plain).unwrap(),
            std::fs::read(&back).unwrap(),
            std::fs::read(&z).unwrap(),
        );
        assert_eq!(a, b, "{kind}: decompress(compress(x)) == x");
        // a quarter-full filter (p ≈ 0.8 zeros) compresses
        assert!(c.len() < a.len(), "{kind}: {} vs {}", c.len(), a.len());
        // check reads the compressed file like the plain one
        bloomery()
            .arg("check")
            .arg(&z)
            .write_stdin("key-1\nkey-4999\n")
            .assert()
            .success()
            .stdout("key-1\nkey-4999\n");
        // info: compressed form measured, plain form predicted, same answers otherwise
        let (iz, ip) = (info_json(&z), info_json(&plain));
        assert_eq!(iz["compressed"], true);
        assert_eq!(ip["compressed"], false);
        assert_eq!(iz["compressed_file_bytes"], c.len() as u64);
        assert_eq!(iz["plain_file_bytes"], a.len() as u64);
        assert_eq!(iz["items"], ip["items"]);
        let r = iz["compressed_ratio_to_entropy"].as_f64().unwrap();
        assert!(r > 0.99 && r < 1.02, "{kind}: {r}");
        let predicted = ip["compressed_file_bytes"].as_u64().unwrap();
        assert!(predicted.abs_diff(c.len() as u64) <= 64, "{kind}");
    }
}

#[test]
fn commands_accept_compressed_files_and_add_keeps_the_form() {
    let t = T::new();
    let a = t.filter("a.bloom", "classic", 0..3000);
    let b = t.filter("b.bloom", "classic", 2000..5000);
    let az = t.p("a.bloomz");
    let bz = t.p("b.bloomz");
    run(&[Path::new("compress"), &a, &az]).success();
    run(&[Path::new("compress"), &b, &bz]).success();
    // union of two compressed inputs == union of the plain ones (OUT is plain)
    let (u1, u2) = (t.p("u1.bloom"), t.p("u2.bloom"));
    run(&[Path::new("union"), &u1, &a, &b]).success();
    run(&[Path::new("union"), &u2, &az, &bz]).success();
    assert_eq!(std::fs::read(&u1).unwrap(), std::fs::read(&u2).unwrap());
    // estimate across forms
    let est = |x: &Path, y: &Path| {
        let o = bloomery()
            .args(["estimate", "--json"])
            .arg(x)
            .arg(y)
            .output()
            .unwrap();
        assert!(o.status.success());
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["intersection"].as_f64().unwrap()
    };
    assert_eq!(est(&a, &b), est(&az, &bz));
    // add on a compressed file writes it back compressed, with the new keys
    bloomery()
        .arg("add")
        .arg(&az)
        .write_stdin(lines(9000..9100))
        .assert()
        .success();
    bloomery()
        .arg("add")
        .arg(&a)
        .write_stdin(lines(9000..9100))
        .assert()
        .success();
    assert_eq!(info_json(&az)["compressed"], true);
    let back = t.p("a.back");
    run(&[Path::new("decompress"), &az, &back]).success();
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&a).unwrap());
    // counting files too
    let c = t.p("c.bloom");
    bloomery()
        .args(["create", "--kind", "counting", "-n", "1000", "-p", "0.01"])
        .arg(&c)
        .assert()
        .success();
    let cz = t.p("c.bloomz");
    run(&[Path::new("compress"), &c, &cz]).success();
    bloomery()
        .arg("add")
        .arg(&cz)
        .write_stdin("x\nx\ny\n")
        .assert()
        .success();
    bloomery()
        .arg("count")
        .arg(&cz)
        .write_stdin("x\n")
        .assert()
        .success()
        .stdout("2\tx\n");
    assert!(std::fs::read(&cz).unwrap()[26] == 1, "still compressed");
}

#[test]
fn diff_and_patch() {
    let t = T::new();
    let old = t.filter("old.bloom", "blocked", 0..10_000);
    let new = t.p("new.bloom");
    std::fs::copy(&old, &new).unwrap();
    bloomery()
        .arg("add")
        .arg(&new)
        .write_stdin(lines(10_000..10_200))
        .assert()
        .success();
    let d = t.p("x.delta");
    run(&[Path::new("diff"), &old, &new, &d]).success();
    let (dl, nl) = (
        std::fs::metadata(&d).unwrap().len(),
        std::fs::metadata(&new).unwrap().len(),
    );
    assert!(dl * 5 < nl, "delta {dl} bytes vs {nl}");
    let out = t.p("patched.bloom");
    run(&[Path::new("patch"), &old, &d, &out]).success();
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&new).unwrap());
    // a compressed base works, and --compress writes the result compressed
    let oldz = t.p("old.bloomz");
    run(&[Path::new("compress"), &old, &oldz]).success();
    let outz = t.p("patched.bloomz");
    bloomery()
        .arg("patch")
        .args([&oldz, &d, &outz])
        .arg("--compress")
        .assert()
        .success();
    let back = t.p("patched.back");
    run(&[Path::new("decompress"), &outz, &back]).success();
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&new).unwrap());

    // the wrong base is refused with exit 2 and OUT is not written
    let wrong = t.p("wrong.bloom");
    run(&[Path::new("patch"), &new, &d, &wrong])
        .code(2)
        .stderr(predicate::str::contains("checksum"));
    assert!(!wrong.exists());
    // a delta is not a filter
    bloomery()
        .arg("check")
        .arg(&d)
        .write_stdin("key-1\n")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("delta"));
    // unrelated filters: another kind, another size
    let other = t.filter("other.bloom", "classic", 0..10);
    run(&[Path::new("diff"), &old, &other, &t.p("u.delta")])
        .code(2)
        .stderr(predicate::str::contains("blocked"));
    let big = t.p("big.bloom");
    bloomery()
        .args(["create", "-n", "90000", "-p", "0.01"])
        .arg(&big)
        .assert()
        .success();
    run(&[Path::new("diff"), &old, &big, &t.p("u2.delta")]).code(2);
    // OUT is not overwritten without --force
    run(&[Path::new("diff"), &old, &new, &d])
        .code(2)
        .stderr(predicate::str::contains("--force"));
}

#[test]
fn corrupted_files_exit_2() {
    let t = T::new();
    let f = t.filter("f.bloom", "blocked", 0..5000);
    let z = t.p("f.bloomz");
    run(&[Path::new("compress"), &f, &z]).success();
    let good = std::fs::read(&z).unwrap();
    let mut bad = good.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x20;
    let zb = t.p("bad.bloomz");
    std::fs::write(&zb, &bad).unwrap();
    for cmd in ["decompress", "info"] {
        let mut c = bloomery();
        c.arg(cmd).arg(&zb);
        if cmd == "decompress" {
            c.arg(t.p("out.bloom"));
        }
        c.assert()
            .code(2)
            .stderr(predicate::str::contains("checksum"));
    }
    bloomery()
        .arg("check")
        .arg(&zb)
        .write_stdin("key-1\n")
        .assert()
        .code(2);
    // truncated
    std::fs::write(&zb, &good[..good.len() - 9]).unwrap();
    run(&[Path::new("decompress"), &zb, &t.p("out2.bloom")]).code(2);
    // a delta with a flipped bit
    let g = t.p("g.bloom");
    std::fs::copy(&f, &g).unwrap();
    bloomery()
        .arg("add")
        .arg(&g)
        .write_stdin("extra\n")
        .assert()
        .success();
    let d = t.p("d.delta");
    run(&[Path::new("diff"), &f, &g, &d]).success();
    let mut dd = std::fs::read(&d).unwrap();
    let at = dd.len() - 12;
    dd[at] ^= 1;
    std::fs::write(&d, &dd).unwrap();
    run(&[Path::new("patch"), &f, &d, &t.p("p.bloom")]).code(2);
    // not a bloomery file at all
    let junk = t.p("junk");
    std::fs::write(&junk, b"hello world").unwrap();
    run(&[Path::new("compress"), &junk, &t.p("j.bloomz")]).code(2);
}

/// A compressed file declaring a plain payload over `--max-memory` is refused from its
/// header, container and stream header, before the checksum pass over it: a well-formed
/// container declaring 1 TiB of zero bits in a file damaged where no header check looks (its
/// item count, so that the pass would report a checksum mismatch) is reported by its size by
/// every command that decompresses.
#[test]
fn a_declared_plain_size_over_the_limit_is_refused_before_the_checksum() {
    let t = T::new();
    let (plain, z) = (t.p("a.bloom"), t.p("a.bloomz"));
    run(&[
        Path::new("create"),
        &plain,
        Path::new("-n"),
        Path::new("1000"),
        Path::new("-p"),
        Path::new("0.01"),
    ])
    .success();
    run(&[Path::new("compress"), &plain, &z]).success();
    let b = std::fs::read(&z).unwrap();
    let h = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
    // the container: plain length 1 TiB, plain checksum, stream length, then the stream
    // header of an all-zero array (tag, m = 8 TiB bits, no one bits), padded to 64 bytes
    let plain_len = 1u64 << 40;
    let mut stream = vec![0xB1];
    stream.extend_from_slice(&(8 * plain_len).to_le_bytes());
    stream.extend_from_slice(&0u64.to_le_bytes());
    let mut c = Vec::new();
    c.extend_from_slice(&plain_len.to_le_bytes());
    c.extend_from_slice(&0x1234u64.to_le_bytes());
    c.extend_from_slice(&(stream.len() as u64).to_le_bytes());
    c.extend_from_slice(&stream);
    c.resize(64, 0);
    let mut b = [&b[..h], &c[..], &[0u8; 8]].concat();
    b[16..24].copy_from_slice(&64u64.to_le_bytes());
    let n = b.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&b[..n]);
    b[n..].copy_from_slice(&sum.to_le_bytes());
    b[48] ^= 1; // the item count, not resealed
    std::fs::write(&z, &b).unwrap();
    let out = t.p("out.bloom");
    let cases: [&[&Path]; 6] = [
        &[Path::new("info"), &z],
        &[Path::new("check"), &z],
        &[Path::new("add"), &z],
        &[Path::new("union"), &out, &z, &plain],
        &[Path::new("estimate"), &z],
        &[Path::new("decompress"), &z, &out],
    ];
    for args in cases {
        let o = bloomery()
            .args(["--max-memory", "1M"])
            .args(args)
            .write_stdin("k\n")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("this needs 1.0 TiB") && err.contains("1.0 MiB set by --max-memory"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("checksum"), "{args:?}: {err}");
    }
    assert!(!out.exists());
    assert_eq!(std::fs::read(&z).unwrap(), b);
}

/// A classic filter of 32 MB whose payload is random bits (as a half-full filter's:
/// incompressible, the coder stores it), re-signed.
fn half_full(t: &T, name: &str, seed: u64) -> PathBuf {
    use rand::{RngCore, SeedableRng};
    let p = t.p(name);
    run(&[
        Path::new("create"),
        &p,
        Path::new("--kind"),
        Path::new("classic"),
        Path::new("--bits"),
        Path::new("256M"),
        Path::new("--hashes"),
        Path::new("7"),
    ])
    .success();
    let mut b = std::fs::read(&p).unwrap();
    let h = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
    let n = b.len() - 8;
    rand::rngs::StdRng::seed_from_u64(seed).fill_bytes(&mut b[h..n]);
    let sum = xxhash_rust::xxh3::xxh3_64(&b[..n]);
    b[n..].copy_from_slice(&sum.to_le_bytes());
    std::fs::write(&p, &b).unwrap();
    p
}

/// `compress`, `diff` and `patch --compress` of a 32 MB half-full filter with `--max-memory
/// 8M`, under a data-segment limit of 16 MiB (bash's `ulimit -d`, in KiB: heap and anonymous
/// maps; the inputs are mapped files, not counted): they write their output as it is made.
/// The files written equal what the commands write without a limit, and decode to the input.
#[test]
fn compress_diff_and_patch_hold_a_piece_of_a_big_file() {
    let t = T::new();
    let old = half_full(&t, "old.bloom", 1);
    let new = t.p("new.bloom");
    {
        // the new version: 4 KiB of its payload changed
        let mut b = std::fs::read(&old).unwrap();
        let n = b.len() - 8;
        for x in &mut b[1 << 20..(1 << 20) + 4096] {
            *x ^= 0x5a;
        }
        let sum = xxhash_rust::xxh3::xxh3_64(&b[..n]);
        b[n..].copy_from_slice(&sum.to_le_bytes());
        std::fs::write(&new, &b).unwrap();
    }
    let limited = |args: &[&Path]| {
        let o = std::process::Command::new("bash")
            .arg("-c")
            .arg("ulimit -d 16384 && exec \"$@\"")
            .arg("limited")
            .arg(common::BIN)
            .args(["--max-memory", "8M"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let (z, d, pz) = (t.p("new.bloomz"), t.p("d.delta"), t.p("patched.bloomz"));
    limited(&[Path::new("compress"), &new, &z]);
    limited(&[Path::new("diff"), &old, &new, &d]);
    limited(&[Path::new("patch"), &old, &d, &pz, Path::new("--compress")]);
    assert!(std::fs::metadata(&z).unwrap().len() > 30 << 20, "stored");
    assert!(
        std::fs::metadata(&d).unwrap().len() < 64 << 10,
        "a small delta"
    );
    // what the commands write without a limit
    let (z2, d2, p2) = (t.p("z2"), t.p("d2"), t.p("p2"));
    run(&[Path::new("compress"), &new, &z2]).success();
    run(&[Path::new("diff"), &old, &new, &d2]).success();
    run(&[Path::new("patch"), &old, &d2, &p2]).success();
    let newb = std::fs::read(&new).unwrap();
    assert_eq!(std::fs::read(&z).unwrap(), std::fs::read(&z2).unwrap());
    assert_eq!(std::fs::read(&d).unwrap(), std::fs::read(&d2).unwrap());
    assert_eq!(std::fs::read(&pz).unwrap(), std::fs::read(&z).unwrap());
    assert_eq!(std::fs::read(&p2).unwrap(), newb);
    let back = t.p("back.bloom");
    run(&[Path::new("decompress"), &z, &back]).success();
    assert_eq!(std::fs::read(&back).unwrap(), newb);
    // no temporary file left
    let mut names: Vec<String> = std::fs::read_dir(t.0.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
}
