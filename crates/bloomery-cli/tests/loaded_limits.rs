//! A file's own limits do not bind the process that loads it: a scalable filter whose file
//! says "grow by 32,768, up to 2^63 bytes" (forged, with a valid checksum) grows only as far
//! as `--max-memory` allows, a growth out of range is refused on load as on creation, and a
//! file does not carry its creator's memory limit.

mod common;
use common::{bloomery, lines};

/// Offsets of the scalable filter's `growth` (u32) and `max_bytes` (u64) in its file.
const GROWTH: usize = 88;
const MAX_BYTES: usize = 101;

fn reseal(b: &mut [u8]) {
    let n = b.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&b[..n]);
    b[n..].copy_from_slice(&sum.to_le_bytes());
}

fn create(path: &std::path::Path, extra: &[&str]) {
    bloomery()
        .args(extra)
        .arg("create")
        .arg(path)
        .args(["--kind", "scalable", "-n", "1000", "-p", "0.01"])
        .assert()
        .success();
}

/// The file with its growth and limit fields forged (and its checksum made valid again).
fn forge(path: &std::path::Path, growth: u32) {
    let mut b = std::fs::read(path).unwrap();
    assert_eq!(
        &b[GROWTH..GROWTH + 4],
        &2u32.to_le_bytes(),
        "growth field moved"
    );
    b[GROWTH..GROWTH + 4].copy_from_slice(&growth.to_le_bytes());
    b[MAX_BYTES..MAX_BYTES + 8].copy_from_slice(&(1u64 << 63).to_le_bytes());
    reseal(&mut b);
    std::fs::write(path, &b).unwrap();
}

#[test]
fn forged_growth_is_bounded_by_max_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grow.bloom");
    create(&path, &[]);
    // the largest growth a file may carry: the second sub-filter would hold 32.8M keys
    // (about 50 MB)
    forge(&path, 32_768);
    let before = std::fs::metadata(&path).unwrap().len();

    // The 1001st key needs that sub-filter: refused under 20M, the file unchanged.
    let out = bloomery()
        .args(["--max-memory", "20M", "add"])
        .arg(&path)
        .write_stdin(lines(0..1100))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "grew past --max-memory: {stderr}");
    assert!(stderr.contains("--max-memory"), "{stderr}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), before);

    // Keys within the first sub-filter's capacity still go in.
    bloomery()
        .args(["--max-memory", "20M", "add"])
        .arg(&path)
        .write_stdin(lines(0..500))
        .assert()
        .success();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), before);
}

#[test]
fn forged_growth_out_of_range_is_refused_on_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grow.bloom");
    create(&path, &[]);
    // 6,000,000 turned a 392-byte file into 991 MB under --max-memory 100M
    forge(&path, 6_000_000);
    for cmd in ["add", "info"] {
        let out = bloomery()
            .args(["--max-memory", "100M", cmd])
            .arg(&path)
            .write_stdin(lines(0..8))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{cmd}: {stderr}");
        assert!(stderr.contains("growth 6000000"), "{cmd}: {stderr}");
    }
    // and on creation
    let out = bloomery()
        .arg("create")
        .arg(dir.path().join("new.bloom"))
        .args([
            "--kind", "scalable", "-n", "100", "-p", "0.01", "--growth", "32769",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("growth"), "{stderr}");
}

#[test]
fn create_does_not_bind_the_file_to_the_creators_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grow.bloom");
    // made under a 1 MB limit, with growth 1000: the second sub-filter (1M keys, about
    // 1.5 MB) does not fit that limit ...
    bloomery()
        .args(["--max-memory", "1M", "create"])
        .arg(&path)
        .args([
            "--kind", "scalable", "-n", "1000", "-p", "0.01", "--growth", "1000",
        ])
        .assert()
        .success();
    let b = std::fs::read(&path).unwrap();
    assert_eq!(
        u64::from_le_bytes(b[MAX_BYTES..MAX_BYTES + 8].try_into().unwrap()),
        u64::MAX,
        "the creator's limit is not stored"
    );
    let out = bloomery()
        .args(["--max-memory", "1M", "add"])
        .arg(&path)
        .write_stdin(lines(0..1100))
        .output()
        .unwrap();
    assert!(!out.status.success());
    // ... but a process allowed more grows it
    bloomery()
        .args(["--max-memory", "100M", "add"])
        .arg(&path)
        .write_stdin(lines(0..1100))
        .assert()
        .success();
    assert!(std::fs::metadata(&path).unwrap().len() > 1_000_000);
}

/// Files queried through their map hold none of their payload in the heap, so `--max-memory`
/// does not bound them, whatever the kind: a scalable file and a multi-layer (mlbf) file of a
/// few hundred bytes answer `check` and `info` under a limit of 64 bytes, as the other kinds
/// do.
#[test]
fn mapped_scalable_and_mlbf_files_are_not_counted_against_max_memory() {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["scalable", "mlbf", "blocked"] {
        let path = dir.path().join(format!("{kind}.bloom"));
        bloomery()
            .arg("create")
            .arg(&path)
            .args(["--kind", kind, "-n", "100", "-p", "0.01"])
            .assert()
            .success();
        bloomery()
            .arg("add")
            .arg(&path)
            .write_stdin("http://a.example/x\n")
            .assert()
            .success();
        let payload = common::info_json(&path)["payload_bytes"].as_u64().unwrap();
        assert!(payload > 64, "{kind}: {payload}");
        let o = bloomery()
            .args(["--max-memory", "64", "check"])
            .arg(&path)
            .write_stdin("http://a.example/x\n")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{kind}: {err}");
        assert_eq!(String::from_utf8_lossy(&o.stdout), "http://a.example/x\n");
        let o = bloomery()
            .args(["--max-memory", "64", "info"])
            .arg(&path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{kind}: {err}");
    }
}

/// A scalable file whose own limit (stored in it: here forged to 0) stops its growth is
/// refused with that limit named as the file's, never as the `--max-memory` one.
#[test]
fn a_scalable_files_own_limit_is_reported_as_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("own.bloom");
    create(&path, &[]);
    let mut b = std::fs::read(&path).unwrap();
    b[MAX_BYTES..MAX_BYTES + 8].copy_from_slice(&0u64.to_le_bytes());
    reseal(&mut b);
    std::fs::write(&path, &b).unwrap();
    let out = bloomery()
        .args(["--max-memory", "100M", "add"])
        .arg(&path)
        .write_stdin(lines(0..1100))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("over the filter's own limit of 0 B (stored in its file, below the memory limit of 100.0 MiB set by --max-memory)"),
        "{stderr}"
    );
    assert!(!stderr.contains("raise --max-memory"), "{stderr}");
    assert_eq!(std::fs::read(&path).unwrap(), b);
}
