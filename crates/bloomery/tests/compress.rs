//! Compressed and delta files of the common format (Broder & Mitzenmacher §2.6, Mitzenmacher; delta
//! updates Salman §8.1): every kind round-trips bit for bit, compressed files load wherever plain
//! ones do, deltas refuse the wrong base, and damage is a typed error.

use bloomery::compress::{
    compress_file, decompress_file, diff_files, is_delta, is_packed, packed_sizes, patch_file,
    save_compressed,
};
use bloomery::prelude::*;
use bloomery::{AnyCounter, CountingBloomFilter, Error, Kind, Verify};
use proptest::prelude::*;

const LIMIT: u64 = 1 << 30;

const SET_KINDS: [Kind; 5] = [
    Kind::Classic,
    Kind::Partitioned,
    Kind::Blocked,
    Kind::SplitBlock,
    Kind::Scalable,
];

fn filled(kind: Kind, n: u64, keys: &[u64]) -> AnyFilter {
    let mut f = AnyFilter::builder(kind)
        .capacity(n)
        .fpr(0.01)
        .seed(6)
        .try_build()
        .unwrap();
    for k in keys {
        f.insert(k).unwrap();
    }
    f
}

fn golden_files() -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v1");
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bloom"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_golden_kind_round_trips_bit_for_bit() {
    let files = golden_files();
    assert!(files.len() >= 18, "{} golden files", files.len());
    for (name, plain) in files {
        if is_packed(&plain) {
            continue; // the compressed golden itself
        }
        let c = compress_file(&plain).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(is_packed(&c), "{name}");
        assert_eq!(&c[..8], b"BLOOMERY");
        // Same kind, version and header fields; only payload length and flags differ.
        assert_eq!(
            c[8..16],
            plain[8..16],
            "{name}: version, kind, header length"
        );
        assert_eq!(c[24..26], plain[24..26], "{name}");
        assert_eq!(c[28..64], plain[28..64], "{name}");
        assert_eq!(decompress_file(&c, LIMIT).unwrap(), plain, "{name}");
        // compressing a compressed file is the identity; decompressing a plain one too
        assert_eq!(compress_file(&c).unwrap(), c, "{name}");
        assert_eq!(decompress_file(&plain, LIMIT).unwrap(), plain, "{name}");
        // the loaders take either form and give the same structure
        // (structured kinds load through their own types: covered by the byte round trip)
        if let Ok(f) = AnyFilter::from_bytes(&plain) {
            assert_eq!(AnyFilter::from_bytes(&c).unwrap(), f, "{name}");
        } else if let Ok(f) = AnyCounter::from_bytes(&plain) {
            assert_eq!(
                AnyCounter::from_bytes(&c).unwrap().to_bytes(),
                f.to_bytes(),
                "{name}"
            );
        }
    }
}

#[test]
fn compressed_files_load_through_every_entry_point() {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<u64> = (0..2000).collect();
    for kind in SET_KINDS {
        let f = filled(kind, 4000, &keys);
        let plain = dir.path().join(format!("{}.bloom", kind.name()));
        let packed = dir.path().join(format!("{}.bloomz", kind.name()));
        f.save(&plain).unwrap();
        bloomery::compress::save_bytes(&packed, &compress_file(&f.to_bytes()).unwrap()).unwrap();
        assert_eq!(AnyFilter::load(&packed).unwrap(), f);
        #[cfg(feature = "mmap")]
        assert_eq!(
            AnyFilter::open_mmap(&packed, Verify::HeaderOnly).unwrap(),
            f
        );
        assert_eq!(
            bloomery::file::peek_header(&packed).unwrap(),
            bloomery::file::peek_header(&plain).unwrap()
        );
        let sizes = packed_sizes(&std::fs::read(&packed).unwrap(), false).unwrap();
        // the prediction for the plain file is the measured size, to the byte or nearly
        let predicted = packed_sizes(&std::fs::read(&plain).unwrap(), false).unwrap();
        assert!(!predicted.exact && sizes.exact);
        assert!(
            predicted.compressed_bytes.abs_diff(sizes.compressed_bytes) <= 64,
            "{predicted:?} vs {sizes:?}"
        );
        assert_eq!(
            packed_sizes(&std::fs::read(&plain).unwrap(), true).unwrap(),
            sizes_plain(&sizes)
        );
        assert!(sizes.compressed_input);
        assert_eq!(sizes.plain_bytes, std::fs::metadata(&plain).unwrap().len());
        assert_eq!(
            sizes.compressed_bytes,
            std::fs::metadata(&packed).unwrap().len()
        );
        // a filter at half its capacity has p ≈ 0.7 zeros: it compresses
        assert!(
            sizes.compressed_bytes < sizes.plain_bytes,
            "{kind:?}: {sizes:?}"
        );
        assert!(sizes.ratio_to_entropy() < 1.02, "{kind:?}: {sizes:?}");
    }
    // the typed loaders: Persist::load and open_mmap
    let mut b = BloomFilter::try_with_shape(10_000, 4).unwrap();
    for k in &keys {
        b.insert(k);
    }
    let p = dir.path().join("typed.bloomz");
    save_compressed(&b, &p).unwrap();
    assert_eq!(BloomFilter::load(&p).unwrap(), b);
    #[cfg(feature = "mmap")]
    assert_eq!(BloomFilter::open_mmap(&p, Verify::Checksum).unwrap(), b);
    assert!(matches!(
        BlockedBloomFilter::load(&p),
        Err(Error::Format(e)) if matches!(e.root(), bloomery::FormatError::WrongKind { .. })
    ));
    // the counting family
    let mut c = CountingBloomFilter::builder()
        .counters(1000)
        .hashes(3)
        .try_build()
        .unwrap();
    c.insert(&1u8);
    let p = dir.path().join("counting.bloomz");
    save_compressed(&c, &p).unwrap();
    assert_eq!(CountingBloomFilter::load(&p).unwrap(), c);
    assert_eq!(AnyCounter::load(&p).unwrap().to_bytes(), c.to_bytes());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn prop_every_set_kind_round_trips(
        kind in 0usize..5,
        keys in prop::collection::vec(any::<u64>(), 0..600),
        cap in 1u64..400,
    ) {
        let f = filled(SET_KINDS[kind], cap, &keys);
        let plain = f.to_bytes();
        let c = compress_file(&plain).unwrap();
        prop_assert_eq!(decompress_file(&c, LIMIT).unwrap(), plain);
        prop_assert_eq!(AnyFilter::from_bytes(&c).unwrap(), f);
    }

    #[test]
    fn prop_patch_gives_the_new_version(
        kind in 0usize..4, // scalable filters change their payload length as they grow
        old in prop::collection::vec(any::<u64>(), 0..300),
        more in prop::collection::vec(any::<u64>(), 0..100),
    ) {
        let a = filled(SET_KINDS[kind], 500, &old);
        let mut b = a.clone();
        for k in &more {
            b.insert(k).unwrap();
        }
        let d = diff_files(&a.to_bytes(), &b.to_bytes()).unwrap();
        prop_assert!(is_delta(&d));
        prop_assert_eq!(patch_file(&a.to_bytes(), &d, LIMIT).unwrap(), b.to_bytes());
        // the base may be compressed, and so may the new version given to diff
        let ac = compress_file(&a.to_bytes()).unwrap();
        prop_assert_eq!(patch_file(&ac, &d, LIMIT).unwrap(), b.to_bytes());
        let d2 = diff_files(&ac, &compress_file(&b.to_bytes()).unwrap()).unwrap();
        prop_assert_eq!(d2, d);
    }
}

/// The exact sizes of a plain file equal those measured on its compressed form, but for the
/// flag saying which form was examined.
fn sizes_plain(s: &bloomery::compress::PackedSizes) -> bloomery::compress::PackedSizes {
    bloomery::compress::PackedSizes {
        compressed_input: false,
        ..*s
    }
}

#[test]
fn empty_and_full_filters() {
    let mut full = BloomFilter::try_with_shape(4096, 1).unwrap();
    for k in 0..200_000u32 {
        full.insert(&k);
    }
    assert_eq!(full.count_ones(), 4096);
    let empty = BloomFilter::try_with_shape(4096, 1).unwrap();
    for f in [empty, full] {
        let c = compress_file(&f.to_bytes()).unwrap();
        // header H + container (24 + a 17-byte stream, padded to 64) + trailer 8
        let h = u32::from_le_bytes(c[12..16].try_into().unwrap()) as usize;
        assert_eq!(c.len(), h + 64 + 8);
        assert_eq!(BloomFilter::from_bytes(&c).unwrap(), f);
    }
}

#[test]
fn deltas_refuse_wrong_bases_and_unrelated_filters() {
    let keys: Vec<u64> = (0..1000).collect();
    let a = filled(Kind::Classic, 2000, &keys);
    let mut b = a.clone();
    for k in 5000..5100u64 {
        b.insert(&k).unwrap();
    }
    let d = diff_files(&a.to_bytes(), &b.to_bytes()).unwrap();
    // a delta is not a filter
    assert!(matches!(
        AnyFilter::from_bytes(&d),
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(
        decompress_file(&d, LIMIT),
        Err(Error::Unsupported(_))
    ));
    // the wrong base: another version of the same filter, and the result itself
    let mut other = a.clone();
    other.insert(&99_999u64).unwrap();
    for base in [other.to_bytes(), b.to_bytes()] {
        assert!(matches!(
            patch_file(&base, &d, LIMIT),
            Err(Error::Incompatible(_))
        ));
    }
    // a plain file where the delta should be
    assert!(matches!(
        patch_file(&a.to_bytes(), &b.to_bytes(), LIMIT),
        Err(Error::Unsupported(_))
    ));
    // unrelated filters: other kind, other seed, other size
    let other_kind = filled(Kind::Blocked, 2000, &keys);
    let other_size = filled(Kind::Classic, 20_000, &keys);
    let mut other_seed = AnyFilter::builder(Kind::Classic)
        .capacity(2000)
        .fpr(0.01)
        .seed(7)
        .try_build()
        .unwrap();
    other_seed.insert(&1u8).unwrap();
    for g in [other_kind, other_size, other_seed] {
        assert!(
            matches!(
                diff_files(&a.to_bytes(), &g.to_bytes()),
                Err(Error::Incompatible(_))
            ),
            "{:?}",
            g.kind()
        );
    }
    // damage anywhere in the delta is detected
    for at in [0usize, 10, 26, 64, 70, 100, d.len() - 20, d.len() - 1] {
        let mut e = d.clone();
        e[at] ^= 0x10;
        assert!(patch_file(&a.to_bytes(), &e, LIMIT).is_err(), "byte {at}");
    }
}

#[test]
fn damaged_compressed_files_are_typed_errors() {
    let keys: Vec<u64> = (0..3000).collect();
    let f = filled(Kind::Blocked, 6000, &keys);
    let c = compress_file(&f.to_bytes()).unwrap();
    // a flipped bit: the outer checksum catches it
    for at in (0..c.len()).step_by(37) {
        let mut e = c.clone();
        e[at] ^= 1;
        assert!(AnyFilter::from_bytes(&e).is_err(), "byte {at}");
    }
    // resealed damage inside the stream: the plain file's stored checksum catches it
    let n = c.len() - 8;
    let mut caught = 0;
    for at in (64 + 24..n).step_by(13) {
        let mut e = c.clone();
        e[at] ^= 0x40;
        let sum = xxhash_rust::xxh3::xxh3_64(&e[..n]);
        e[n..].copy_from_slice(&sum.to_le_bytes());
        match AnyFilter::from_bytes(&e) {
            Err(Error::Format(_)) => caught += 1,
            Err(e) => panic!("byte {at}: unexpected {e}"),
            Ok(_) => panic!("byte {at}: damage loaded"),
        }
    }
    assert!(caught > 10);
    // a plain payload over the memory limit is refused before allocating
    assert!(matches!(
        decompress_file(&c, 64),
        Err(Error::TooLarge { .. })
    ));
    // truncation
    for cut in [0, 7, 30, 64, 100, c.len() - 1] {
        assert!(AnyFilter::from_bytes(&c[..cut]).is_err(), "cut {cut}");
    }
}

/// A golden file of `kind` with its payload replaced by `words` (each a random word thinned to
/// the given density of ones) and the checksum recomputed: the coder sees every kind's payload
/// layout (bit arrays, packed counters, fingerprints, heaps, …) at every fill.
fn with_payload(plain: &[u8], density: u8, seed: u64) -> Vec<u8> {
    let d = bloomery::file::decode_header(plain, Verify::Checksum).unwrap();
    let mut out = plain.to_vec();
    let mut x = seed;
    for chunk in out[d.payload_offset..d.payload_offset + d.payload_len].chunks_mut(8) {
        // splitmix64
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let w = match density {
            0 => 0,
            1 => z & (z >> 13) & (z >> 29), // ~1/8 ones
            2 => z,                         // ~1/2 ones
            3 => z | (z >> 7),              // ~3/4 ones
            _ => u64::MAX,
        };
        let n = chunk.len();
        chunk.copy_from_slice(&w.to_le_bytes()[..n]);
    }
    let body = out.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&out[..body]);
    out[body..].copy_from_slice(&sum.to_le_bytes());
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, failure_persistence: None, ..ProptestConfig::default() })]

    /// Every kind's file (one golden of each kind), with empty, sparse, half, dense and full
    /// payloads, compresses and decompresses bit for bit.
    #[test]
    fn prop_every_kind_round_trips_at_every_fill(density in 0u8..5, seed in any::<u64>()) {
        let mut kinds = std::collections::BTreeSet::new();
        for (name, plain) in golden_files() {
            if is_packed(&plain) {
                continue;
            }
            let d = bloomery::file::decode_header(&plain, Verify::Checksum).unwrap();
            kinds.insert(d.header.kind.id());
            let file = with_payload(&plain, density, seed);
            let c = compress_file(&file).unwrap();
            prop_assert!(is_packed(&c), "{}", name);
            prop_assert_eq!(decompress_file(&c, LIMIT).unwrap(), file, "{}", name);
        }
        prop_assert_eq!(kinds.len(), Kind::ALL.len(), "a golden of every kind");
    }
}
