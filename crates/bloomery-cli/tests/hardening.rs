//! Integration tests of the real `bloomery` binary: secrets stay secret, Parquet-compatibility
//! is never lost silently, hostile inputs fail cleanly, and messages say what happened.

use std::path::Path;

use assert_cmd::Command;
use bloomery::{Filter, HashAlgorithm, KeyHasher, Persist, SeedKind, SplitBlockBloomFilter};
use predicates::prelude::*;
use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_bloomery");

fn bloomery() -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("NO_COLOR");
    c
}

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
