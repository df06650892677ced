//! A file's own limits do not bind the process that loads it: a scalable filter whose file
//! says "grow by 6,000,000, up to 2^63 bytes" (forged, with a valid checksum) grows only as far
//! as `--max-memory` allows.

use assert_cmd::Command;

const BIN: &str = env!("CARGO_BIN_EXE_bloomery");

/// Offsets of the scalable filter's `growth` (u32) and `max_bytes` (u64) in its file.
const GROWTH: usize = 88;
const MAX_BYTES: usize = 101;

fn reseal(b: &mut [u8]) {
    let n = b.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&b[..n]);
    b[n..].copy_from_slice(&sum.to_le_bytes());
}

fn keys(n: u32) -> String {
    (0..n).map(|i| format!("key-{i}\n")).collect()
}

#[test]
fn forged_growth_is_bounded_by_max_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grow.bloom");
    Command::new(BIN)
        .arg("create")
        .arg(&path)
        .args(["--kind", "scalable", "-n", "100", "-p", "0.01"])
        .assert()
        .success();
    let mut b = std::fs::read(&path).unwrap();
    assert_eq!(
        &b[GROWTH..GROWTH + 4],
        &2u32.to_le_bytes(),
        "growth field moved"
    );
    b[GROWTH..GROWTH + 4].copy_from_slice(&6_000_000u32.to_le_bytes());
    b[MAX_BYTES..MAX_BYTES + 8].copy_from_slice(&(1u64 << 63).to_le_bytes());
    reseal(&mut b);
    std::fs::write(&path, &b).unwrap();
    let before = std::fs::metadata(&path).unwrap().len();

    // The 101st key needs a sub-filter for 600M keys (about 700 MB): refused, file unchanged.
    let out = Command::new(BIN)
        .args(["--max-memory", "100M", "add"])
        .arg(&path)
        .write_stdin(keys(1000))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "grew past --max-memory: {stderr}");
    assert!(stderr.contains("limit"), "{stderr}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), before);

    // Keys within the first sub-filter's capacity still go in.
    Command::new(BIN)
        .args(["--max-memory", "100M", "add"])
        .arg(&path)
        .write_stdin(keys(50))
        .assert()
        .success();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), before);
}
