//! Decompression bombs and forged compressed files: a small file declaring a huge plain
//! payload must fail cleanly (never abort), allocate at most the declared size once (and
//! nothing it does not touch), obey the memory limit, and cost work bounded by its input.
//! The process-wide memory limit is left at its default here; limits are passed explicitly.

use std::time::{Duration, Instant};

use bloomery::compress::{compress_file, decompress_file, patch_file};
use bloomery::file::MappedFile;
use bloomery::tuning::max_bytes;
use bloomery::*;

fn reseal(b: &mut [u8]) {
    let n = b.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&b[..n]);
    b[n..].copy_from_slice(&sum.to_le_bytes());
}

/// A compressed classic file whose container declares a plain payload of `plain_len` bytes
/// coded by `stream` (a compressed-bits stream for `8 · plain_len` bits), with a correct
/// outer checksum and the given plain-file checksum.
fn forged(plain_len: u64, stream: &[u8], plain_sum: u64) -> Vec<u8> {
    let mut f = BloomFilter::try_new(100, 0.01).unwrap();
    f.insert("x");
    let c = compress_file(&f.to_bytes()).unwrap();
    let h = u32::from_le_bytes(c[12..16].try_into().unwrap()) as usize;
    let mut container = Vec::new();
    container.extend_from_slice(&plain_len.to_le_bytes());
    container.extend_from_slice(&plain_sum.to_le_bytes());
    container.extend_from_slice(&(stream.len() as u64).to_le_bytes());
    container.extend_from_slice(stream);
    container.resize(container.len().div_ceil(64) * 64, 0);
    let mut out = c[..h].to_vec();
    out[16..24].copy_from_slice(&(container.len() as u64).to_le_bytes());
    out.extend_from_slice(&container);
    out.extend_from_slice(&[0; 8]);
    reseal(&mut out);
    out
}

/// A compressed-bits stream header: tag, m, ones (then `rest`).
fn stream(tag: u8, m: u64, ones: u64, rest: &[u8]) -> Vec<u8> {
    let mut s = vec![tag];
    s.extend_from_slice(&m.to_le_bytes());
    s.extend_from_slice(&ones.to_le_bytes());
    s.extend_from_slice(rest);
    s
}

fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

const GIB: u64 = 1 << 30;

/// The tests of this file one at a time: one of them measures the process's resident memory,
/// which the others' allocations would otherwise move.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn a_small_file_declaring_3_gib_is_refused_over_the_limit() {
    let _serial = serial();
    // an all-zero payload of 3 GiB: the stream is just its 17-byte header
    let bomb = forged(3 * GIB, &stream(0xB1, 24 * GIB, 0, &[]), 0x1234);
    assert!(bomb.len() < 400, "{} bytes", bomb.len());
    let t = Instant::now();
    match decompress_file(&bomb, GIB) {
        Err(Error::TooLarge { requested, limit }) => {
            assert_eq!((requested, limit), (3 * GIB, GIB));
        }
        other => panic!("{other:?}"),
    }
    assert!(t.elapsed() < Duration::from_millis(500));
}

/// The declared plain size is checked before the checksum pass over the compressed file: a
/// well-formed bomb declaring 1 TiB, damaged where no header check looks (its item count, so
/// that the pass would refuse it as a checksum mismatch), is refused as too large, by the
/// decoder and by a mapped file's verification (under the process's default limit, the
/// machine's RAM) alike.
#[test]
fn the_declared_plain_size_is_checked_before_the_checksum() {
    let _serial = serial();
    const TIB: u64 = 1 << 40;
    let mut bomb = forged(TIB, &stream(0xB1, 8 * TIB, 0, &[]), 0x1234);
    bomb[48] ^= 0x01; // the item count, not resealed
    match decompress_file(&bomb, GIB) {
        Err(Error::TooLarge { requested, limit }) => assert_eq!((requested, limit), (TIB, GIB)),
        other => panic!("{other:?}"),
    }
    // under a limit above the declared size, the checksum pass refuses it
    assert!(matches!(
        decompress_file(&bomb, 2 * TIB),
        Err(Error::Format(FormatError::ChecksumMismatch { .. }))
    ));
    // the same refusal when the file is mapped (files are used in place with `mmap` only)
    if cfg!(feature = "mmap") {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bomb.bloom");
        std::fs::write(&path, &bomb).unwrap();
        assert!(max_bytes() < TIB);
        match MappedFile::open(&path).unwrap().verify(&mut |_| {}) {
            Err(Error::TooLarge { requested, .. }) => assert_eq!(requested, TIB),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_forged_stream_in_a_mode_the_encoder_never_writes_is_refused_at_once() {
    let _serial = serial();
    // one set bit in 8 GiB coded bit by bit: 6.9e10 decisions before the old decoder
    // noticed; now refused from its header
    let bomb = forged(GIB, &stream(0xB1, 8 * GIB, 1, &[0, 1, 2, 3, 4, 5]), 0);
    let t = Instant::now();
    let e = decompress_file(&bomb, 2 * GIB).unwrap_err();
    assert!(e.to_string().contains("forged"), "{e}");
    let e = AnyFilter::from_bytes(&bomb).unwrap_err();
    assert!(e.to_string().contains("forged"), "{e}");
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
}

/// Resident memory while loading compressed files: a bomb under the limit fails on its
/// checksum without touching the pages it declared, a large sparse filter loads holding its
/// plain payload once (the words use the rebuilt file in place), touching only the pages
/// that hold bits, and takes inserts there (no copy on the first write); the sizes of a dense
/// compressed file are measured without rebuilding it. Serial: no other test of this file
/// allocates while it measures.
#[test]
fn loading_touches_only_the_memory_it_needs() {
    let _serial = serial();
    // 48 MiB declared, all zeros, wrong plain checksum
    let declared = 48u64 << 20;
    let bomb = forged(declared, &stream(0xB1, declared * 8, 0, &[]), 0xDEAD);
    let before = rss_bytes();
    let e = AnyFilter::from_bytes(&bomb).unwrap_err();
    assert!(
        matches!(e, Error::Format(FormatError::ChecksumMismatch { .. })),
        "{e}"
    );
    let e = decompress_file(&bomb, declared).unwrap_err();
    assert!(
        matches!(e, Error::Format(FormatError::ChecksumMismatch { .. })),
        "{e}"
    );
    let grew = rss_bytes().saturating_sub(before);
    assert!(grew < declared / 8, "resident memory grew by {grew} bytes");

    // a real 12 MiB filter holding 100 keys compresses to a few hundred bytes
    let mut f = BloomFilter::builder()
        .bits(96 << 20)
        .hashes(3)
        .try_build()
        .unwrap();
    for i in 0..100u32 {
        f.insert(&i);
    }
    let plain = f.to_bytes();
    let c = compress_file(&plain).unwrap();
    assert!(c.len() < 4096, "{}", c.len());
    drop(f);
    let before = rss_bytes();
    let g = AnyFilter::from_bytes(&c).unwrap();
    let grew = rss_bytes().saturating_sub(before);
    assert!((0..100u32).all(|i| g.contains(&i.to_le_bytes())));
    // the payload is rebuilt in an anonymous map, whose untouched zero pages cost nothing;
    // without the `mmap` feature it is rebuilt on the heap and copied (12 MiB resident)
    #[cfg(feature = "mmap")]
    assert!(grew < 4 << 20, "resident memory grew by {grew} bytes");
    #[cfg(not(feature = "mmap"))]
    let _ = grew;
    // an insert writes the rebuilt payload in place: no copy of the 12 MiB
    let mut g = g;
    let before = rss_bytes();
    g.try_insert_key(b"one more").unwrap();
    let grew = rss_bytes().saturating_sub(before);
    assert!(g.contains_key(b"one more"));
    #[cfg(feature = "mmap")]
    assert!(
        grew < 4 << 20,
        "an insert grew resident memory by {grew} bytes"
    );
    #[cfg(not(feature = "mmap"))]
    let _ = grew;
    drop(g);
    assert_eq!(decompress_file(&c, 12 << 20).unwrap(), plain);

    // every bit set: a dense payload of 12 MiB in a compressed file of a few hundred bytes,
    // whose sizes are measured exactly without rebuilding the payload
    let mut dense = plain;
    let h = u32::from_le_bytes(dense[12..16].try_into().unwrap()) as usize;
    let n = dense.len() - 8;
    dense[h..n].fill(0xFF);
    reseal(&mut dense);
    let c = compress_file(&dense).unwrap();
    assert!(c.len() < 4096, "{}", c.len());
    let want = (dense.len() as u64, c.len() as u64);
    drop(dense);
    let before = rss_bytes();
    let sizes = bloomery::compress::packed_sizes(&c, false).unwrap();
    let grew = rss_bytes().saturating_sub(before);
    assert_eq!((sizes.plain_bytes, sizes.compressed_bytes), want);
    assert!(sizes.exact && sizes.compressed_input && sizes.entropy_bits == 0.0);
    assert!(
        grew < 4 << 20,
        "measuring grew resident memory by {grew} bytes"
    );
}

/// A structure loaded from a large compressed file uses the rebuilt payload in place, and
/// takes inserts there, for every set kind.
#[test]
fn a_filter_loaded_in_place_from_a_compressed_file_takes_inserts() {
    let _serial = serial();
    for kind in [
        Kind::Classic,
        Kind::Blocked,
        Kind::BlockedSectors,
        Kind::BlockedSalted,
        Kind::SplitBlock,
    ] {
        let mut f = AnyFilter::builder(kind)
            .capacity(2_000_000)
            .fpr(0.01)
            .try_build()
            .unwrap();
        for i in 0..50u32 {
            f.try_insert_key(&i.to_le_bytes()).unwrap();
        }
        let c = compress_file(&f.to_bytes()).unwrap();
        let mut g = AnyFilter::from_bytes(&c).unwrap();
        assert_eq!(g, f, "{kind:?}");
        for i in 50..100u32 {
            g.try_insert_key(&i.to_le_bytes()).unwrap();
        }
        assert!(
            (0..100u32).all(|i| g.contains_key(&i.to_le_bytes())),
            "{kind:?}"
        );
        assert_eq!(g.len(), 100, "{kind:?}");
    }
}

#[test]
fn deltas_are_checked_before_they_are_applied() {
    let _serial = serial();
    let mut a = BloomFilter::try_with_shape(4096, 3).unwrap();
    for i in 0..10u32 {
        a.insert(&i);
    }
    let mut b = a.clone();
    b.insert("new");
    let base = a.to_bytes();
    let d = compress::diff_files(&base, &b.to_bytes()).unwrap();
    assert_eq!(patch_file(&base, &d, 1 << 20).unwrap(), b.to_bytes());
    // the payload limit applies to the result
    assert!(matches!(
        patch_file(&base, &d, 64),
        Err(Error::TooLarge { .. })
    ));
}
