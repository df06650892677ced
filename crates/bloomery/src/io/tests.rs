//! Unit tests of the file codec's internals: decoding under a memory limit, atomic saves that
//! fail half-way, and the whole-file buffer.

use super::format::{self, Source};
use crate::error::Error;
use crate::error::FormatError;
use crate::io::header::Verify;
use crate::kind::Kind;
use crate::prelude::*;

/// One small filter of every set kind with a few keys in it.
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
    vec![
        ("classic", classic.to_bytes()),
        ("partitioned", part.to_bytes()),
        ("blocked", blocked.to_bytes()),
        ("split-block", split.to_bytes()),
        ("scalable", scal.to_bytes()),
    ]
}

fn patched(mut b: Vec<u8>, at: usize, bytes: &[u8]) -> Vec<u8> {
    b[at..at + bytes.len()].copy_from_slice(bytes);
    let body = b.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&b[..body]);
    b[body..].copy_from_slice(&sum.to_le_bytes());
    b
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
fn sizes_beyond_the_limit_are_refused_before_allocating() {
    for (name, b) in samples() {
        let d = format::decode(&b, Verify::Checksum).unwrap();
        let payload = d.payload_len as u64;
        let limit = payload / 2; // every kind's words exceed this
        let r = match d.header.kind {
            Kind::Classic => BloomFilter::decode_from(&d, Source::Bytes(&b), limit).map(|_| ()),
            Kind::Partitioned => {
                PartitionedBloomFilter::decode_from(&d, Source::Bytes(&b), limit).map(|_| ())
            }
            Kind::Blocked => {
                BlockedBloomFilter::decode_from(&d, Source::Bytes(&b), limit).map(|_| ())
            }
            Kind::SplitBlock => {
                SplitBlockBloomFilter::decode_from(&d, Source::Bytes(&b), limit).map(|_| ())
            }
            Kind::Scalable => {
                ScalableBloomFilter::decode_from(&d, Source::Bytes(&b), limit).map(|_| ())
            }
            _ => unreachable!(),
        };
        assert!(matches!(r, Err(Error::TooLarge { .. })), "{name}: {r:?}");
        // the same with a generous limit loads
        let ok = match d.header.kind {
            Kind::Classic => BloomFilter::decode_from(&d, Source::Bytes(&b), payload).is_ok(),
            Kind::Blocked => {
                BlockedBloomFilter::decode_from(&d, Source::Bytes(&b), payload).is_ok()
            }
            _ => true,
        };
        assert!(ok, "{name}");
    }
    // A header declaring an enormous payload is refused by length checks against the input,
    // not by trying to allocate it.
    let b = samples().remove(0).1;
    let huge = patched(b, 16, &(1u64 << 62).to_le_bytes());
    assert!(matches!(
        format::decode(&huge, Verify::HeaderOnly),
        Err(FormatError::Truncated { .. })
    ));
}

#[test]
fn failed_save_leaves_the_old_file_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bloom");
    let mut old = BloomFilter::builder()
        .bits(2048)
        .hashes(4)
        .try_build()
        .unwrap();
    old.insert("kept");
    old.save(&path).unwrap();
    let before = std::fs::read(&path).unwrap();

    // A writer that fails half-way through the file: the error comes back, the old file is
    // untouched and loadable, and the temp file is gone.
    let mut new = old.clone();
    new.insert("lost");
    let full = new.to_bytes();
    let r = format::save_atomic(&path, |w| {
        w.write_all(&full[..full.len() / 2])?;
        Err(Error::Io(std::io::Error::other("disk full (simulated)")))
    });
    assert!(matches!(r, Err(Error::Io(_))), "{r:?}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(BloomFilter::load(&path).unwrap(), old);
    assert_eq!(dir_entries(dir.path()), vec!["f.bloom"]);

    // Saving into a directory that does not exist fails cleanly too.
    let missing = dir.path().join("no/such/dir/f.bloom");
    assert!(matches!(new.save(&missing), Err(Error::Io(_))));
    assert_eq!(dir_entries(dir.path()), vec!["f.bloom"]);
}

#[test]
fn large_files_load_through_the_huge_page_buffer_like_small_ones() {
    // above and below the 1 MiB threshold where `read_file` reads into an anonymous map
    let dir = tempfile::tempdir().unwrap();
    for n in [1_000u64, 2_000_000] {
        let mut f = BlockedBloomFilter::try_new(n, 0.01).unwrap();
        f.extend((0..n).step_by(3));
        let path = dir.path().join(format!("f{n}.bloom"));
        f.save(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len() >= 1 << 20, n > 1_000_000);
        let buf = format::read_file(&path).unwrap();
        assert!(*buf == *bytes);
        assert_eq!(BlockedBloomFilter::load(&path).unwrap(), f);
        assert_eq!(
            AnyFilter::load(&path).unwrap(),
            AnyFilter::from_bytes(&bytes).unwrap()
        );
        // a truncated large file fails to load with a typed error, as from bytes
        std::fs::write(&path, &bytes[..bytes.len() - 9]).unwrap();
        // (loaded by path: the error names the file and wraps the damage)
        match BlockedBloomFilter::load(&path) {
            Err(Error::Format(e)) => {
                assert!(matches!(
                    e.root(),
                    FormatError::Truncated { .. } | FormatError::ChecksumMismatch { .. }
                ));
                assert_eq!(e.path(), Some(path.as_path()));
            }
            other => panic!("expected a format error, got {other:?}"),
        }
    }
    // the buffer for a file is refused beyond the memory limit, before allocating
    assert!(matches!(
        format::FileBuf::zeroed(u64::MAX),
        Err(Error::TooLarge { .. })
    ));
}

/// The figures counted in the checksum's pass (`info_mapped`, with and without verification)
/// and in a pass that reports the pieces behind it (`info_pass`) are `info`'s, for every set
/// kind and for blocked filters of both layouts and a classic filter larger than a pass step
/// (pieces cut across steps); the pieces reported cover the words once, in order. A damaged
/// payload fails the verified pass and is counted as it is without verification.
#[test]
#[cfg_attr(not(feature = "mmap"), ignore = "maps files: needs the `mmap` feature")]
fn info_in_one_pass_equals_info() {
    use crate::any::filter::AnyFilter;
    use crate::io::mapped::MappedFile;
    let dir = tempfile::tempdir().unwrap();
    let mut files = samples();
    let big_keys = 200_000u32;
    let mut positions = BlockedBloomFilter::builder()
        .bits(100_000_000)
        .hashes(6)
        .try_build()
        .unwrap();
    let mut sectors = BlockedBloomFilter::builder()
        .capacity(9_000_000)
        .fpr(0.01)
        .layout(crate::sets::blocked::BlockLayout::Sectors)
        .try_build()
        .unwrap();
    assert_eq!(sectors.layout(), crate::sets::blocked::BlockLayout::Sectors);
    let mut classic = BloomFilter::builder()
        .bits(90_000_000)
        .hashes(4)
        .try_build()
        .unwrap();
    for i in 0..big_keys {
        positions.insert(&i);
        sectors.insert(&i);
        classic.insert(&i);
    }
    files.push(("big positions", positions.to_bytes()));
    files.push(("big sectors", sectors.to_bytes()));
    files.push(("big classic", classic.to_bytes()));
    for (name, bytes) in files {
        let p = dir.path().join("f.bloom");
        std::fs::write(&p, &bytes).unwrap();
        let file = MappedFile::open(&p).unwrap();
        let f = AnyFilter::from_mapped(&file).unwrap();
        let expected = f.info();
        for verify in [true, false] {
            let mut last = 0;
            let got = f
                .info_mapped(&file, verify, &mut |n| {
                    assert!(n > last);
                    last = n;
                })
                .unwrap();
            assert_eq!(got, expected, "{name} verify={verify}");
            assert_eq!(
                last,
                file.len() - 8,
                "{name}: the progress reaches the body's end"
            );
        }
        let mut at = 0;
        let got = f.info_pass(&mut |r| {
            assert_eq!(r.start, at, "{name}: pieces in order");
            at = r.end;
        });
        assert_eq!(got, expected, "{name}");
        // the words, then at most a 64-byte padding
        assert!(
            at <= file.payload_len() && file.payload_len() - at < 64,
            "{name}: the pieces cover the words ({at} of {})",
            file.payload_len()
        );
        if name.starts_with("big") {
            assert!(expected.items > 0 && expected.fill_ratio > 0.0);
            // one word of the payload set to all ones, the checksum left as it was
            let mut damaged = bytes.clone();
            let at = file.header_len() as usize + 8 * 1_000_001;
            damaged[at..at + 8].copy_from_slice(&[0xff; 8]);
            std::fs::write(&p, &damaged).unwrap();
            let file = MappedFile::open(&p).unwrap();
            let g = AnyFilter::from_mapped(&file).unwrap();
            let err = g.info_mapped(&file, true, &mut |_| {}).unwrap_err();
            assert!(
                matches!(&err, Error::Format(e) if matches!(e.root(), FormatError::ChecksumMismatch { .. })
                    && e.path() == Some(p.as_path())),
                "{name}: {err}"
            );
            let counted = g.info_mapped(&file, false, &mut |_| {}).unwrap();
            assert_eq!(counted, g.info(), "{name}");
            assert!(counted.fill_ratio > expected.fill_ratio, "{name}");
        }
    }
}

/// The streaming passes' hasher gives xxh3-64's digest of the bytes fed, however they are cut
/// (lengths around its internal block and stripe sizes, pieces of every size).
#[test]
fn stream_hash_is_xxh3() {
    let bytes: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    for len in [
        0, 1, 16, 17, 128, 129, 240, 241, 1024, 1025, 65_536, 299_999,
    ] {
        for piece in [1, 7, 64, 1000, 65_536, len.max(1)] {
            let mut h = super::header::StreamHash::new();
            for c in bytes[..len].chunks(piece) {
                h.update(c);
            }
            assert_eq!(
                h.digest(),
                xxhash_rust::xxh3::xxh3_64(&bytes[..len]),
                "len {len} piece {piece}"
            );
        }
    }
}

/// The two-thread pass and the one-thread pass hand the visitor the same pieces, in order,
/// covering the body once (steps and pieces cut where they fall: a body neither a whole
/// number of steps nor of pieces), report the same progress, and check the checksum alike;
/// a damaged byte fails both when verifying and neither when not.
#[test]
#[cfg_attr(not(feature = "mmap"), ignore = "maps files: needs the `mmap` feature")]
fn two_thread_pass_equals_one_thread_pass() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.bloom");
    // 2.3 steps of words
    let mut f = BloomFilter::builder()
        .bits(155_000_000)
        .hashes(3)
        .try_build()
        .unwrap();
    for i in 0..50_000u32 {
        f.insert(&i);
    }
    let bytes = f.to_bytes();
    let body = bytes.len() - 8;
    assert!(
        body > 2 * crate::io::header::PASS_CHUNK && !body.is_multiple_of(super::format::PASS_PIECE)
    );
    let run = |two: bool, verify: bool| {
        let map = super::fs::map_file(&p).unwrap();
        let mut pieces = Vec::new();
        let mut sum = 0u64;
        let mut steps = Vec::new();
        let r = super::format::pass_map_with(
            &map,
            verify,
            two,
            &mut |at, n| {
                pieces.push((at, n));
                sum = map[at..at + n]
                    .iter()
                    .fold(sum, |s, &b| s.wrapping_mul(31).wrapping_add(u64::from(b)));
            },
            &mut |n| steps.push(n),
        );
        (r.map_err(|e| e.to_string()), pieces, sum, steps)
    };
    std::fs::write(&p, &bytes).unwrap();
    let expected_sum = bytes[..body]
        .iter()
        .fold(0u64, |s, &b| s.wrapping_mul(31).wrapping_add(u64::from(b)));
    for verify in [true, false] {
        let one = run(false, verify);
        let two = run(true, verify);
        assert!(one.0.is_ok(), "{:?}", one.0);
        assert_eq!(one, two, "verify={verify}");
        assert_eq!(one.2, expected_sum, "every byte once, in order");
        assert_eq!(*one.3.last().unwrap(), body as u64);
        assert_eq!(one.3.len(), body.div_ceil(crate::io::header::PASS_CHUNK));
        let mut at = 0;
        for &(s, n) in &one.1 {
            assert_eq!(s, at);
            assert!(n > 0 && n <= super::format::PASS_PIECE);
            at += n;
        }
        assert_eq!(at, body);
    }
    let mut damaged = bytes.clone();
    damaged[body - 5] ^= 1;
    std::fs::write(&p, &damaged).unwrap();
    for two in [false, true] {
        let (r, pieces, ..) = run(two, true);
        assert!(r.unwrap_err().contains("checksum"), "two={two}");
        assert_eq!(pieces.iter().map(|p| p.1).sum::<usize>(), body);
        assert!(run(two, false).0.is_ok());
    }
}

/// `encoded_range(start, len)` of one structure.
type RangeOf = Box<dyn Fn(u64, usize) -> Vec<u8>>;

/// Structures of several parts (a scalable filter that grew, a count-min sketch) and one part.
fn range_samples() -> Vec<(&'static str, Vec<u8>, RangeOf)> {
    let mut scal = ScalableBloomFilter::builder()
        .capacity(8)
        .fpr(0.05)
        .try_build()
        .unwrap();
    for i in 0..100 {
        scal.insert(&format!("k{i}"));
    }
    assert!(
        scal.filters().len() > 2,
        "the sample must have several parts"
    );
    let mut cms = crate::CountMinSketch::try_with_shape(100, 3).unwrap();
    cms.insert("a");
    let mut blocked = BlockedBloomFilter::builder()
        .bits(1024)
        .hashes(6)
        .try_build()
        .unwrap();
    blocked.insert("b");
    vec![
        sample("scalable", scal),
        sample("cms", cms),
        sample("blocked", blocked),
    ]
}

/// A structure's name, its whole file and its `encoded_range`.
fn sample<P: Persist + 'static>(name: &'static str, p: P) -> (&'static str, Vec<u8>, RangeOf) {
    let whole = p.to_bytes();
    let range = move |s, l| {
        let mut out = Vec::new();
        crate::file::encoded_range(&p, s, l, &mut out);
        out
    };
    (name, whole, Box::new(range))
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]
    /// Any range of the encoding equals the same range of the whole file's bytes, across the
    /// header, the parts, their padding and the checksum, and is clipped (or empty) at the end.
    #[test]
    fn encoded_range_is_the_range_of_the_encoding(start in 0u64..6000, len in 0usize..3000) {
        for (name, whole, range) in range_samples() {
            let a = (start as usize).min(whole.len());
            let b = a.saturating_add(len).min(whole.len());
            proptest::prop_assert_eq!(range(start, len), whole[a..b].to_vec(), "{}", name);
        }
    }
}

#[test]
fn encoded_ranges_cover_the_file_in_chunks() {
    for (name, whole, range) in range_samples() {
        for chunk in [1usize, 7, 64, 100, 4096] {
            let mut joined = Vec::new();
            let mut at = 0u64;
            loop {
                let c = range(at, chunk);
                if c.is_empty() {
                    break;
                }
                at += c.len() as u64;
                joined.extend_from_slice(&c);
            }
            assert_eq!(joined, whole, "{name} in chunks of {chunk}");
        }
        assert!(range(whole.len() as u64, 10).is_empty(), "{name}");
        assert!(range(u64::MAX, usize::MAX).is_empty(), "{name}");
    }
    let f = BlockedBloomFilter::builder()
        .bits(1024)
        .hashes(6)
        .try_build()
        .unwrap();
    let whole = f.to_bytes();
    let h = crate::file::encoded_header_len(&f);
    assert_eq!(
        h as u64,
        crate::file::peek_header_bytes(&whole).unwrap().header_len
    );
}
