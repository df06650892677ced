//! `bloomery import --from redisbloom`: the RedisBloom 2.6 fixtures (chunk files saved by
//! scripts/migrate-redisbloom.py) become bloomery files that `check` answers from exactly as
//! RedisBloom did, and that `add` keeps growing as RedisBloom grew them.

#[path = "../../bloomery/tests/support/redisbloom_fixtures.rs"]
mod fixtures;

use std::path::{Path, PathBuf};

use bloomery::{AnyFilter, Kind};
use fixtures::Fixture;

mod common;
use common::bloomery;

/// `index<TAB>hex(key)` lines.
fn key_lines(dir: &Path, name: &str, keys: &[Vec<u8>]) -> PathBuf {
    let p = dir.join(name);
    let text: String = keys
        .iter()
        .enumerate()
        .map(|(i, k)| format!("{i}\t{}\n", hex(k)))
        .collect();
    std::fs::write(&p, text).unwrap();
    p
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Indices of the lines `bloomery check` prints (with -v: the lines certainly absent).
fn check(file: &Path, keys: &Path, invert: bool) -> Vec<usize> {
    let mut c = bloomery();
    c.arg("check").args(["--hex", "-f", "2"]);
    if invert {
        c.arg("-v");
    }
    let out = c.arg(file).arg(keys).output().unwrap();
    assert!(out.status.code().is_some_and(|s| s <= 1), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').next().unwrap().parse().unwrap())
        .collect()
}

fn import(f: &Fixture, out: &Path) {
    bloomery()
        .args(["import", "--from", "redisbloom"])
        .arg(&f.chunks)
        .arg(out)
        .assert()
        .success();
}

/// Import fixture `name` and check its present keys and its absent keys (all 100 000 for the
/// two large fixtures, the first 20 000 for the others, to keep the test quick).
fn imported_answers_as_redisbloom(name: &'static str) {
    let dir = tempfile::tempdir().unwrap();
    let f = fixtures::load(name);
    let out = dir.path().join(format!("{name}.bloom"));
    import(&f, &out);
    let kind = bloomery::file::peek_header(&out).unwrap().kind;
    let want = if f.is_bloom() {
        Kind::RedisBloomChain
    } else {
        Kind::RedisBloomCuckoo
    };
    assert_eq!(kind, want, "{name}");
    if f.json["present"].is_null() {
        return; // cf-empty: nothing to ask
    }
    let present = f.keys(&["present"]);
    let inserted = match f.json["inserted"].as_u64() {
        Some(n) if f.is_bloom() => present[..n as usize].to_vec(),
        _ => present,
    };
    let present = key_lines(dir.path(), "present", &inserted);
    assert_eq!(
        check(&out, &present, true),
        f.indices(&["present_not_1"]),
        "{name}: present keys"
    );
    let n = if matches!(name, "bf-scaling" | "cf-main") {
        100_000
    } else {
        20_000
    };
    let absent = key_lines(dir.path(), "absent", &f.keys(&["absent"])[..n]);
    let want: Vec<usize> = f
        .indices(&["absent_1"])
        .into_iter()
        .filter(|&i| i < n)
        .collect();
    assert_eq!(check(&out, &absent, false), want, "{name}: absent keys");
}

macro_rules! import_tests {
    ($($t:ident => $name:literal),* $(,)?) => {$(
        #[test]
        fn $t() {
            imported_answers_as_redisbloom($name);
        }
    )*
    #[test]
    fn every_fixture_is_imported() {
        assert_eq!(fixtures::NAMES.to_vec(), vec![$($name),*]);
    }};
}

import_tests!(
    import_bf_scaling => "bf-scaling",
    import_bf_default => "bf-default",
    import_bf_nonscaling => "bf-nonscaling",
    import_bf_legacy_pow2 => "bf-legacy-pow2",
    import_bf_legacy_noround => "bf-legacy-noround",
    import_bf_force64_pow2 => "bf-force64-pow2",
    import_cf_main => "cf-main",
    import_cf_exp2 => "cf-exp2",
    import_cf_noexp => "cf-noexp",
    import_cf_empty => "cf-empty",
);

#[test]
fn add_grows_an_imported_chain_as_redisbloom_did() {
    let dir = tempfile::tempdir().unwrap();
    let f = fixtures::load("bf-default");
    let out = dir.path().join("bf.bloom");
    import(&f, &out);
    let more = key_lines(dir.path(), "more", &f.keys(&["then", "madd"]));
    bloomery()
        .args(["add", "--hex", "-f", "2"])
        .arg(&out)
        .arg(&more)
        .assert()
        .success();
    let AnyFilter::RedisBloomChain(b) = AnyFilter::load(&out).unwrap() else {
        panic!("not a redisbloom-bf file");
    };
    let state = &f.json["then"]["state"];
    assert_eq!(hex(&b.header_chunk()), state["header_hex"]);
    let mut data = Vec::new();
    let mut it = 1;
    while let Some((next, d)) = b.chunk(it) {
        data.push(d);
        it = next;
    }
    assert_eq!(
        fixtures::fnv1a64(data.iter().map(|d| &d[..])),
        state["data_fnv1a64"]
    );
}

#[test]
fn import_errors_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.bloom");
    let bf = fixtures::load("bf-default").chunks;
    let cf = fixtures::load("cf-exp2").chunks;
    // no --from (also spelled --format)
    bloomery()
        .arg("import")
        .arg(&bf)
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--format"));
    // -n/-p: the chunks carry the sizing
    bloomery()
        .args(["import", "--from", "redisbloom", "-n", "100"])
        .arg(&bf)
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("-n/-p do not apply"));
    // chunks of two keys
    bloomery()
        .args(["import", "--from", "redisbloom"])
        .arg(&bf)
        .arg(&cf)
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("another key"));
    // a truncated chunk file
    let bytes = std::fs::read(&bf).unwrap();
    let cut = dir.path().join("cut.rbchunks");
    std::fs::write(&cut, &bytes[..bytes.len() - 100]).unwrap();
    bloomery()
        .args(["import", "--from", "redisbloom"])
        .arg(&cut)
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("truncated"));
    // not a chunk file
    bloomery()
        .args(["import", "--from", "redisbloom"])
        .arg(dir.path().join("cut.rbchunks").with_extension("none"))
        .arg(&out)
        .assert()
        .code(2);
    assert!(!out.exists());
    // a file split in two (header, then the data chunks) imports like the whole
    let whole = bloomery::redisbloom::RedisBloomChunkFile::from_bytes(&bytes).unwrap();
    let mut head = whole.clone();
    head.chunks.truncate(1);
    let mut rest = whole.clone();
    rest.chunks.remove(0);
    let (a, b) = (dir.path().join("a.rbchunks"), dir.path().join("b.rbchunks"));
    std::fs::write(&a, head.to_bytes()).unwrap();
    std::fs::write(&b, rest.to_bytes()).unwrap();
    bloomery()
        .args(["import", "--from", "redisbloom"])
        .arg(&a)
        .arg(&b)
        .arg(&out)
        .assert()
        .success();
    let again = dir.path().join("again.bloom");
    bloomery()
        .args(["import", "--from", "redisbloom"])
        .arg(&bf)
        .arg(&again)
        .assert()
        .success();
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&again).unwrap());
    // OUT exists: refused without --force
    bloomery()
        .args(["import", "--from", "redisbloom"])
        .arg(&bf)
        .arg(&again)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--force"));
}

/// A `redisbloom-bf` file whose item count is `u64::MAX` (forged, with a valid checksum:
/// the header's count at byte 48 and the first link's size at 128) takes more keys with `add`
/// and stays a file every command loads, its count still `u64::MAX` (counts saturate).
#[test]
fn a_chain_at_the_largest_item_count_takes_keys_and_still_loads() {
    use bloomery::redisbloom::RedisBloomFilter;
    use bloomery::Persist;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("full.bloom");
    let mut f = RedisBloomFilter::reserve(100, 0.01, 2, true).unwrap();
    f.try_insert(b"first").unwrap();
    let mut b = f.to_bytes();
    for at in [48, 128] {
        assert_eq!(u64::from_le_bytes(b[at..at + 8].try_into().unwrap()), 1);
        b[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    }
    let n = b.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&b[..n]);
    b[n..].copy_from_slice(&sum.to_le_bytes());
    std::fs::write(&path, &b).unwrap();
    bloomery()
        .arg("add")
        .arg(&path)
        .write_stdin("a\nb\nc\n")
        .assert()
        .success();
    let o = bloomery()
        .args(["info", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["items"], u64::MAX, "{j}");
    let o = bloomery()
        .arg("check")
        .arg(&path)
        .write_stdin("a\nb\nc\n")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 3);
}
