//! The file format under malformed input, atomic saves and the mmap path.
//!
//! Every malformed input must come back as a typed [`Error`], never a panic: truncation at
//! every length, every single-bit flip, bad magic, unknown version and kind, wrong kind for a
//! typed load, trailing data, parameters that contradict each other behind a *valid* checksum
//! (patched fields, trailer recomputed), and declared sizes beyond the memory limit.
// some imports serve only the tests of optional features
#![cfg_attr(not(all(feature = "mmap", feature = "rayon")), allow(unused_imports))]

use bloomery::prelude::*;
use bloomery::{Error, FormatError, Kind, Verify};

const TRAILER: usize = 8;

/// One small filter of every kind with a few keys in it.
fn samples() -> Vec<(&'static str, Vec<u8>)> {
    let keys: Vec<String> = (0..20).map(|i| format!("k{i}")).collect();
    let mut classic = BloomFilter::builder()
        .bits(1000)
        .hashes(5)
        .seed(1)
        .try_build()
        .unwrap();
    let mut part = PartitionedBloomFilter::builder()
        .bits(999)
        .hashes(3)
        .try_build()
        .unwrap();
    let mut blocked = BlockedBloomFilter::builder()
        .bits(1024)
        .hashes(6)
        .try_build()
        .unwrap();
    let mut split = SplitBlockBloomFilter::try_with_bytes(96).unwrap();
    let mut scal = ScalableBloomFilter::builder()
        .capacity(4)
        .fpr(0.05)
        .try_build()
        .unwrap();
    for k in &keys {
        classic.insert(k);
        part.insert(k);
        blocked.insert(k);
        split.insert(k);
        scal.insert(k);
    }
    assert!(scal.filters().len() >= 2);
    vec![
        ("classic", classic.to_bytes()),
        ("partitioned", part.to_bytes()),
        ("blocked", blocked.to_bytes()),
        ("split-block", split.to_bytes()),
        ("scalable", scal.to_bytes()),
    ]
}

fn classic_bytes() -> Vec<u8> {
    samples().remove(0).1
}

/// Recompute the xxh3-64 trailer after patching, so only the patched field is wrong.
fn reseal(b: &mut [u8]) {
    let n = b.len() - TRAILER;
    let sum = xxhash_rust::xxh3::xxh3_64(&b[..n]);
    b[n..].copy_from_slice(&sum.to_le_bytes());
}

fn patched(mut b: Vec<u8>, at: usize, bytes: &[u8]) -> Vec<u8> {
    b[at..at + bytes.len()].copy_from_slice(bytes);
    reseal(&mut b);
    b
}

fn format_err(r: bloomery::Result<AnyFilter>) -> FormatError {
    match r {
        Err(Error::Format(e)) => e,
        other => panic!("expected a format error, got {other:?}"),
    }
}

fn is_inconsistent(r: bloomery::Result<AnyFilter>) -> bool {
    matches!(format_err(r), FormatError::Inconsistent(_))
}

#[test]
fn samples_load() {
    for (name, b) in samples() {
        let f = AnyFilter::from_bytes(&b).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(f.kind().name(), name);
        assert!(f.contains("k3"));
        assert_eq!(f.to_bytes(), b);
    }
}

#[test]
fn truncation_at_every_length() {
    for (name, b) in samples() {
        for len in 0..b.len() {
            match format_err(AnyFilter::from_bytes(&b[..len])) {
                FormatError::Truncated { needed, have } => {
                    assert_eq!(have, len as u64, "{name}@{len}");
                    assert!(needed > have, "{name}@{len}");
                }
                e => panic!("{name} truncated to {len}: {e:?}"),
            }
        }
    }
}

#[test]
fn every_bit_flip_is_detected() {
    for (name, b) in samples() {
        for i in 0..b.len() {
            for bit in 0..8 {
                let mut c = b.clone();
                c[i] ^= 1 << bit;
                let e = format_err(AnyFilter::from_bytes(&c));
                // Fields read before the checksum give their own error; the rest is the
                // checksum's job.
                let ok = match e {
                    FormatError::ChecksumMismatch { .. } => i >= 10, // a kind id may flip to another known kind
                    FormatError::BadMagic => i < 8,
                    FormatError::UnknownVersion(_) => (8..10).contains(&i),
                    FormatError::UnknownKind(_) => (10..12).contains(&i),
                    FormatError::Truncated { .. } | FormatError::TrailingData { .. } => {
                        (12..24).contains(&i)
                    }
                    FormatError::Inconsistent(_) => (12..32).contains(&i),
                    _ => false,
                };
                assert!(ok, "{name}: flip of byte {i} bit {bit} gave {e:?}");
            }
        }
    }
}

#[test]
fn bad_magic_version_kind_and_trailing_data() {
    let b = classic_bytes();
    assert_eq!(
        format_err(AnyFilter::from_bytes(b"NOTABLOOMFILTER")),
        FormatError::BadMagic
    );
    assert_eq!(
        format_err(AnyFilter::from_bytes(&patched(b.clone(), 0, b"X"))),
        FormatError::BadMagic
    );
    for v in [0u16, 2, 0xFFFF] {
        assert_eq!(
            format_err(AnyFilter::from_bytes(&patched(
                b.clone(),
                8,
                &v.to_le_bytes()
            ))),
            FormatError::UnknownVersion(v)
        );
    }
    for k in [0u16, 999, 0xFFFF] {
        assert_eq!(
            format_err(AnyFilter::from_bytes(&patched(
                b.clone(),
                10,
                &k.to_le_bytes()
            ))),
            FormatError::UnknownKind(k)
        );
    }
    let mut long = b.clone();
    long.extend_from_slice(&[0; 3]);
    assert_eq!(
        format_err(AnyFilter::from_bytes(&long)),
        FormatError::TrailingData { extra: 3 }
    );
}

#[cfg(feature = "mmap")]
#[test]
fn wrong_kind_for_a_typed_load() {
    let dir = tempfile::tempdir().unwrap();
    for (name, b) in samples() {
        let path = dir.path().join(format!("{name}.bloom"));
        std::fs::write(&path, &b).unwrap();
        // from a path the error names the file; `root()` is the damage either way
        let want = |r: bloomery::Result<BloomFilter>| match r {
            Err(Error::Format(e)) => match e.root() {
                FormatError::WrongKind { expected, found } => {
                    assert_eq!((*expected, *found), ("classic", name))
                }
                other => panic!("{name}: {other:?}"),
            },
            Ok(_) => assert_eq!(name, "classic"),
            Err(e) => panic!("{name}: {e:?}"),
        };
        want(BloomFilter::from_bytes(&b));
        want(BloomFilter::load(&path));
        want(BloomFilter::open_mmap(&path, Verify::Checksum));
    }
    let blocked = samples().remove(2).1;
    assert!(matches!(
        ScalableBloomFilter::from_bytes(&blocked),
        Err(Error::Format(FormatError::WrongKind {
            expected: "scalable",
            found: "blocked"
        }))
    ));
}

#[test]
fn inconsistent_header_fields_behind_a_valid_checksum() {
    let b = classic_bytes();
    let any = |b: Vec<u8>| AnyFilter::from_bytes(&b);
    // header length: not a multiple of 64, below the fixed part, absurd
    for h in [100u32, 0, 64, 1 << 30] {
        let e = format_err(any(patched(b.clone(), 12, &h.to_le_bytes())));
        assert!(
            matches!(
                e,
                FormatError::Inconsistent(_)
                    | FormatError::Truncated { .. }
                    | FormatError::TrailingData { .. }
            ),
            "header length {h}: {e:?}"
        );
    }
    // payload length not a multiple of 64, and one declaring far more than the input holds
    assert!(is_inconsistent(any(patched(
        b.clone(),
        16,
        &100u64.to_le_bytes()
    ))));
    assert!(matches!(
        format_err(any(patched(b.clone(), 16, &(1u64 << 62).to_le_bytes()))),
        FormatError::Truncated { .. }
    ));
    assert!(is_inconsistent(any(patched(
        b.clone(),
        16,
        &(u64::MAX - 63).to_le_bytes()
    ))));
    // hash algorithm, seed kind, flags, parameter length
    assert_eq!(
        format_err(any(patched(b.clone(), 24, &[9]))),
        FormatError::UnknownHash(9)
    );
    assert!(is_inconsistent(any(patched(b.clone(), 25, &[7]))));
    assert!(is_inconsistent(any(patched(
        b.clone(),
        26,
        &1u16.to_le_bytes()
    ))));
    assert!(is_inconsistent(any(patched(
        b.clone(),
        28,
        &1000u32.to_le_bytes()
    ))));
    assert!(is_inconsistent(any(patched(
        b.clone(),
        28,
        &4u32.to_le_bytes()
    ))));
    // xxh3 takes a 64-bit seed; Parquet's xxh64 has seed 0
    assert!(is_inconsistent(any(patched(b.clone(), 40, &[1]))));
    let xxh64 = patched(b.clone(), 24, &[3]);
    assert!(is_inconsistent(any(xxh64)));
    // target rate must be 0 or in (0, 1)
    for p in [1.0f64, 1.5, -0.1, f64::NAN, f64::INFINITY] {
        assert!(
            is_inconsistent(any(patched(b.clone(), 64, &p.to_le_bytes()))),
            "fpr {p}"
        );
    }
    // non-zero header padding
    assert!(is_inconsistent(any(patched(b.clone(), 100, &[1]))));
}

#[test]
fn inconsistent_kind_parameters_behind_a_valid_checksum() {
    let s = samples();
    let any = |b: Vec<u8>| AnyFilter::from_bytes(&b);
    let (classic, part, blocked, split, scal) = (
        s[0].1.clone(),
        s[1].1.clone(),
        s[2].1.clone(),
        s[3].1.clone(),
        s[4].1.clone(),
    );
    // classic: m (payload no longer matches), k = 0 / too large, bits set beyond m
    for m in [0u64, 1, 5000, 1 << 40, u64::MAX] {
        assert!(
            is_inconsistent(any(patched(classic.clone(), 72, &m.to_le_bytes()))),
            "m={m}"
        );
    }
    for k in [0u32, 65, u32::MAX] {
        assert!(
            is_inconsistent(any(patched(classic.clone(), 80, &k.to_le_bytes()))),
            "k={k}"
        );
    }
    let payload_at = u32::from_le_bytes(classic[12..16].try_into().unwrap()) as usize;
    let last_word = payload_at + (1000 / 64) * 8; // word holding bits 960..1024
    let mut c = classic.clone();
    c[last_word + 7] |= 0x80; // bit 1023 ≥ m = 1000
    reseal(&mut c);
    assert!(is_inconsistent(any(c)));
    // partitioned: slice bits and k
    for (at, v) in [(72usize, 0u64), (72, 400), (72, u64::MAX)] {
        assert!(
            is_inconsistent(any(patched(part.clone(), at, &v.to_le_bytes()))),
            "s={v}"
        );
    }
    assert!(is_inconsistent(any(patched(
        part.clone(),
        80,
        &0u32.to_le_bytes()
    ))));
    assert!(is_inconsistent(any(patched(
        part.clone(),
        80,
        &u32::MAX.to_le_bytes()
    ))));
    // blocked: block count (also absurd ones), k, block size
    for blocks in [0u64, 3, 1 << 40, 1 << 60, 1 << 61, u64::MAX] {
        assert!(
            is_inconsistent(any(patched(blocked.clone(), 72, &blocks.to_le_bytes()))),
            "blocks={blocks}"
        );
    }
    assert!(is_inconsistent(any(patched(
        blocked.clone(),
        80,
        &0u32.to_le_bytes()
    ))));
    assert!(is_inconsistent(any(patched(
        blocked.clone(),
        80,
        &33u32.to_le_bytes()
    ))));
    assert!(is_inconsistent(any(patched(
        blocked.clone(),
        84,
        &256u32.to_le_bytes()
    ))));
    // split-block: block count
    for blocks in [0u64, 2, 1 << 61, 1 << 62, u64::MAX] {
        assert!(
            is_inconsistent(any(patched(split.clone(), 72, &blocks.to_le_bytes()))),
            "blocks={blocks}"
        );
    }
    // scalable: initial capacity, rate, growth, tightening, scaling flag, sub-filter count,
    // a sub-filter's block count
    let count_at = 72 + 8 + 8 + 4 + 8 + 1 + 8;
    for (at, v) in [
        (72usize, 0u64.to_le_bytes().to_vec()),
        (80, 0f64.to_le_bytes().to_vec()),
        (80, f64::NAN.to_le_bytes().to_vec()),
        (88, 0u32.to_le_bytes().to_vec()),
        (92, 1f64.to_le_bytes().to_vec()),
        (100, vec![2]),
        (count_at, 0u32.to_le_bytes().to_vec()),
        (count_at, 65u32.to_le_bytes().to_vec()),
        (count_at, 1u32.to_le_bytes().to_vec()),
        (count_at, 7u32.to_le_bytes().to_vec()),
        (count_at + 4, 0u64.to_le_bytes().to_vec()),
        (count_at + 4, (1u64 << 60).to_le_bytes().to_vec()),
        (count_at + 4, u64::MAX.to_le_bytes().to_vec()),
        (count_at + 12, 0u32.to_le_bytes().to_vec()),
        (count_at + 24, f64::NAN.to_le_bytes().to_vec()),
    ] {
        assert!(
            is_inconsistent(any(patched(scal.clone(), at, &v))),
            "scalable field @{at} = {v:?}"
        );
    }
}

#[cfg(feature = "mmap")]
#[test]
fn read_header_reports_the_fields() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.bloom");
    let f = BlockedBloomFilter::builder()
        .capacity(100)
        .fpr(0.02)
        .seed(9)
        .try_build()
        .unwrap();
    f.save(&path).unwrap();
    let h = bloomery::file::peek_header(&path).unwrap();
    assert_eq!(h.version, 1);
    assert_eq!(h.kind, f.layout().kind());
    assert_eq!(h.kind.rust_type(), Kind::Blocked);
    // the salted layout (the default at 2%) hashes with xxh3-64 under the same seed
    assert_eq!(f.layout(), bloomery::builders::BlockLayout::Salted);
    assert_eq!(h.hasher, *f.hasher());
    assert_eq!(h.hasher.seed(), KeyHasher::with_seed(9).seed());
    assert_eq!(
        h.hasher.algorithm(),
        bloomery::hashing::HashAlgorithm::Xxh3_64
    );
    assert_eq!((h.items, h.capacity, h.target_fpr), (0, 100, 0.02));
}

fn dir_entries(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn atomic_save_replaces_and_leaves_no_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bloom");
    let mut f = BlockedBloomFilter::builder()
        .bits(4096)
        .hashes(7)
        .try_build()
        .unwrap();
    f.insert("one");
    f.save(&path).unwrap();
    f.insert("two");
    f.save(&path).unwrap();
    assert_eq!(dir_entries(dir.path()), vec!["f.bloom"]);
    let back = BlockedBloomFilter::load(&path).unwrap();
    assert_eq!(back, f);
    assert!(back.contains("two"));
}

#[cfg(feature = "mmap")]
#[cfg(feature = "rayon")]
#[test]
fn mmap_equals_load_and_copies_on_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.bloom");
    let mut f = BloomFilter::builder()
        .bits(1 << 14)
        .hashes(5)
        .try_build()
        .unwrap();
    let mut g = BlockedBloomFilter::builder()
        .bits(1 << 14)
        .hashes(8)
        .try_build()
        .unwrap();
    for i in 0..500u32 {
        f.insert(&i);
        g.insert(&i);
    }
    f.save(&path).unwrap();
    let on_disk = std::fs::read(&path).unwrap();
    for verify in [Verify::Checksum, Verify::HeaderOnly] {
        let mut m = BloomFilter::open_mmap(&path, verify).unwrap();
        assert!(m.is_mapped());
        assert_eq!(m, BloomFilter::load(&path).unwrap());
        assert!(!m.contains("fresh key"));
        m.insert("fresh key");
        assert!(!m.is_mapped(), "mutation copies the words");
        assert!(m.contains("fresh key"));
        assert_eq!(
            std::fs::read(&path).unwrap(),
            on_disk,
            "file unchanged on disk"
        );
        assert!(!BloomFilter::load(&path).unwrap().contains("fresh key"));
    }

    let path2 = dir.path().join("b.bloom");
    g.save(&path2).unwrap();
    let on_disk = std::fs::read(&path2).unwrap();
    let mut m = BlockedBloomFilter::open_mmap(&path2, Verify::Checksum).unwrap();
    assert!(m.is_mapped());
    assert_eq!(m, g);
    let any = AnyFilter::open_mmap(&path2, Verify::Checksum).unwrap();
    assert_eq!(any, AnyFilter::Blocked(g.clone()));
    m.union_with(&g).unwrap();
    m.par_insert_all(&[1000u32, 1001]);
    assert!(!m.is_mapped());
    assert!(m.contains(&1000u32));
    assert_eq!(std::fs::read(&path2).unwrap(), on_disk);
}

#[cfg(feature = "mmap")]
#[test]
fn mmap_checksum_catches_damage_header_only_trusts_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.bloom");
    let f = BloomFilter::builder()
        .bits(4096)
        .hashes(3)
        .try_build()
        .unwrap();
    f.save(&path).unwrap();
    let mut b = std::fs::read(&path).unwrap();
    let payload_at = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
    b[payload_at + 5] ^= 0x10;
    std::fs::write(&path, &b).unwrap();
    for r in [
        BloomFilter::open_mmap(&path, Verify::Checksum),
        BloomFilter::load(&path),
    ] {
        match r {
            Err(Error::Format(e)) => {
                assert!(
                    matches!(e.root(), FormatError::ChecksumMismatch { .. }),
                    "{e}"
                );
                assert_eq!(e.path(), Some(path.as_path()));
            }
            other => panic!("expected a checksum mismatch, got {other:?}"),
        }
    }
    // HeaderOnly is documented to trust the payload: it loads, with the damaged bit.
    let m = BloomFilter::open_mmap(&path, Verify::HeaderOnly).unwrap();
    assert_eq!(m.count_ones(), 1);
}

/// A save keeps the permissions of the file it replaces, and gives a new file 0644 (temp files
/// are created 0600, which would otherwise leak into every saved filter).
#[cfg(unix)]
#[test]
fn atomic_save_keeps_or_sets_permissions() {
    use bloomery::{BloomFilter, Persist};
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.bloom");
    let f = BloomFilter::try_new(100, 0.01).unwrap();
    f.save(&path).unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&path), 0o644);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    f.save(&path).unwrap();
    assert_eq!(mode(&path), 0o640);
}

/// Without the `mmap` feature the map entry points exist and say why they cannot run; the
/// same file still loads into memory.
#[cfg(not(feature = "mmap"))]
#[test]
fn without_mmap_open_mmap_returns_unsupported_and_load_works() {
    use bloomery::file::MappedFile;
    use bloomery::Error;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bloom");
    let mut f = BlockedBloomFilter::try_new(100, 0.01).unwrap();
    f.insert("x");
    f.save(&path).unwrap();
    for e in [
        BlockedBloomFilter::open_mmap(&path, Verify::Checksum).unwrap_err(),
        AnyFilter::open_mmap(&path, Verify::Checksum).unwrap_err(),
        MappedFile::open(&path).unwrap_err(),
    ] {
        match e {
            Error::Unsupported(m) => assert!(m.contains("`mmap` feature"), "{m}"),
            e => panic!("expected Unsupported, got {e}"),
        }
    }
    assert_eq!(BlockedBloomFilter::load(&path).unwrap(), f);
    assert_eq!(bloomery::file::peek_header(&path).unwrap().items, 1);
}

#[test]
fn salted_files_beyond_the_layouts_limits_are_refused() {
    use bloomery::hashing::HashAlgorithm;
    // the default blocked filter at 1%: the salted layout, hashed with xxh3-64
    let mut f = BlockedBloomFilter::builder()
        .capacity(10_000)
        .fpr(0.01)
        .try_build()
        .unwrap();
    f.insert("a");
    assert_eq!(f.layout(), bloomery::builders::BlockLayout::Salted);
    let b = f.to_bytes();
    AnyFilter::from_bytes(&b).unwrap();
    // another stable hash behind a valid checksum: the layout hashes with xxh3-64 or SipHash
    let e = format_err(AnyFilter::from_bytes(&patched(
        b.clone(),
        24,
        &[HashAlgorithm::Xxh3_128.id()],
    )));
    assert!(
        e.to_string().contains("salted layout hashed with xxh3-128"),
        "{e}"
    );
    // more blocks than the layout addresses (refused before the payload's length is checked)
    let e = format_err(AnyFilter::from_bytes(&patched(
        b.clone(),
        72,
        &((1u64 << 32) + 1).to_le_bytes(),
    )));
    assert!(e.to_string().contains("at most 2^32"), "{e}");
}
