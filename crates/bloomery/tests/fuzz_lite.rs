//! An always-on miniature of the `fuzz/` target `load_any`: a few thousand seeded random
//! mutations of valid files of every kind go to `AnyFilter::from_bytes`, which must never
//! panic. Half of the mutants get their checksum recomputed, so that the mutations reach the
//! header and parameter validation instead of stopping at the checksum. Whatever loads must
//! answer queries, describe itself and survive a to_bytes → from_bytes round trip unchanged.

use std::panic::{catch_unwind, AssertUnwindSafe};

#[path = "common/parquet_gen.rs"]
mod parquet_gen;

use bloomery::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn seeds() -> Vec<Vec<u8>> {
    let mut classic = BloomFilter::try_with_shape(1000, 5).unwrap();
    let mut part = PartitionedBloomFilter::try_with_shape(333, 3).unwrap();
    let mut blocked = BlockedBloomFilter::try_with_shape(2, 9).unwrap();
    let mut keyed = BlockedBloomFilter::builder()
        .bits(1024)
        .hashes(4)
        .hasher(KeyHasher::with_secret(5))
        .try_build()
        .unwrap();
    let mut split = SplitBlockBloomFilter::try_with_bytes(32).unwrap();
    let mut scal = ScalableBloomFilter::builder()
        .capacity(2)
        .fpr(0.1)
        .try_build()
        .unwrap();
    for i in 0..12u32 {
        classic.insert(&i);
        part.insert(&i);
        blocked.insert(&i);
        keyed.insert(&i);
        split.insert(&i);
        scal.insert(&i);
    }
    vec![
        classic.to_bytes(),
        part.to_bytes(),
        blocked.to_bytes(),
        keyed.to_bytes(),
        split.to_bytes(),
        scal.to_bytes(),
    ]
}

fn reseal(b: &mut [u8]) {
    if b.len() >= 8 {
        let n = b.len() - 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&b[..n]);
        b[n..].copy_from_slice(&sum.to_le_bytes());
    }
}

/// Interesting values for header and parameter fields.
const MAGIC_NUMBERS: [u64; 10] = [0, 1, 2, 7, 63, 64, 65, 1 << 31, 1 << 62, u64::MAX];

fn mutate(rng: &mut StdRng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..rng.gen_range(1..4) {
        if b.is_empty() {
            break;
        }
        let len = b.len();
        let at = rng.gen_range(0..len);
        match rng.gen_range(0..8) {
            0 => b[at] ^= 1 << rng.gen_range(0..8),
            1 => b[at] = rng.gen(),
            2 => b.truncate(at),
            3 => {
                let n = rng.gen_range(1..80);
                b.splice(at..at, (0..n).map(|_| rng.gen::<u8>()));
            }
            4 => {
                // overwrite an aligned field in the header with an interesting value
                let field = rng.gen_range(0..(len.min(160) / 4).max(1)) * 4;
                let v = MAGIC_NUMBERS[rng.gen_range(0..MAGIC_NUMBERS.len())].to_le_bytes();
                let w = [1usize, 2, 4, 8][rng.gen_range(0..4)];
                let end = (field + w).min(len);
                b[field..end].copy_from_slice(&v[..end - field]);
            }
            5 => {
                // splice in a piece of another valid file
                let from = rng.gen_range(0..other.len());
                let n = rng.gen_range(1..=(other.len() - from).min(64));
                let end = (at + n).min(len);
                b[at..end].copy_from_slice(&other[from..from + (end - at)]);
            }
            6 => b.extend((0..rng.gen_range(1..70)).map(|_| rng.gen::<u8>())),
            _ => {
                let n = rng.gen_range(1..=len.min(64));
                b.drain(at..(at + n).min(len));
            }
        }
    }
    if rng.gen_bool(0.5) {
        reseal(&mut b);
    }
    b
}

fn exercise(bytes: &[u8]) -> bool {
    let Ok(f) = AnyFilter::from_bytes(bytes) else {
        return false;
    };
    let info = f.info();
    assert_eq!(info.kind, f.kind().name());
    for key in ["", "a", "golden-0"] {
        let _ = f.contains(key);
    }
    let again = f.to_bytes();
    let g = AnyFilter::from_bytes(&again).expect("a re-encoded filter must load");
    assert_eq!(g, f, "round trip changed the filter");
    assert_eq!(g.to_bytes(), again, "encoding is not stable");
    true
}

#[test]
fn seeded_mutations_never_panic() {
    let seeds = seeds();
    let mut rng = StdRng::seed_from_u64(0xF0F0_2026);
    let (mut loaded, mut total) = (0, 0);
    for round in 0..4000 {
        let s = &seeds[round % seeds.len()];
        let o = &seeds[(round / seeds.len()) % seeds.len()];
        let m = mutate(&mut rng, s, o);
        let r = catch_unwind(AssertUnwindSafe(|| exercise(&m)));
        match r {
            Ok(ok) => loaded += usize::from(ok),
            Err(_) => panic!("panic on mutant {round}: {}", hex(&m)),
        }
        total += 1;
    }
    eprintln!("{loaded} of {total} mutants loaded");
    // Some mutants must load (resealed payload bit flips), or the test exercises nothing
    // past the checksum.
    assert!(loaded > 50, "only {loaded} mutants loaded");
    assert!(loaded < total / 2);
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Found by `cargo fuzz run load_any` (resealed input): a scalable file whose sub-filter
/// capacities sum past u64::MAX made `AnyFilter::info()` panic with an add overflow.
#[test]
fn regression_scalable_capacity_overflow() {
    let b = seeds().pop().unwrap(); // the scalable seed, at least two sub-filters
    let sub0_capacity = 72 + 8 + 8 + 4 + 8 + 1 + 8 + 4 + 8 + 4;
    let mut m = b.clone();
    m[sub0_capacity..sub0_capacity + 8].copy_from_slice(&(u64::MAX - 7).to_le_bytes());
    reseal(&mut m);
    let f = AnyFilter::from_bytes(&m).unwrap();
    assert_eq!(f.info().capacity, u64::MAX);
    assert!(exercise(&m));
}

/// The miniature of the `fuzz/` target `decompress`: seeded mutations of compressed
/// files and deltas go to `decompress_file`, the loaders and `patch_file`. Nothing may panic,
/// and because a compressed file carries its plain file's checksum and a delta its result's,
/// whatever still decodes must decode to exactly the original.
#[test]
fn compressed_and_delta_mutations_never_panic() {
    use bloomery::compress::{compress_file, decompress_file, diff_files, patch_file};
    let plain = seeds();
    let packed: Vec<Vec<u8>> = plain.iter().map(|p| compress_file(p).unwrap()).collect();
    let base = plain[0].clone();
    let mut newer = BloomFilter::from_bytes(&base).unwrap();
    for i in 100..130u32 {
        newer.insert(&i);
    }
    let newer = newer.to_bytes();
    let delta = diff_files(&base, &newer).unwrap();
    let mut rng = StdRng::seed_from_u64(0xC0_2026);
    let (mut decoded, mut total) = (0, 0);
    for round in 0..3000 {
        let (seed, want): (&[u8], &[u8]) = if round % 4 == 3 {
            (&delta, &newer)
        } else {
            let i = round % packed.len();
            (&packed[i], &plain[i])
        };
        let other = &packed[(round / 4) % packed.len()];
        let m = mutate(&mut rng, seed, other);
        let r = catch_unwind(AssertUnwindSafe(|| {
            let out = if round % 4 == 3 {
                patch_file(&base, &m, 1 << 24)
            } else {
                let _ = AnyFilter::from_bytes(&m);
                decompress_file(&m, 1 << 24)
            };
            match out {
                Ok(bytes) => {
                    // A plain file passes decompress_file unchanged: only count real decodes.
                    if bloomery::compress::is_packed(&m) || round % 4 == 3 {
                        assert_eq!(bytes, want, "mutant {round} decoded to other bytes");
                        true
                    } else {
                        false
                    }
                }
                Err(_) => false,
            }
        }));
        match r {
            Ok(ok) => decoded += usize::from(ok),
            Err(_) => panic!("panic on mutant {round}: {}", hex(&m)),
        }
        total += 1;
    }
    eprintln!("{decoded} of {total} compressed/delta mutants decoded (to the original)");
    assert!(decoded < total / 10, "{decoded}");
}

/// The bare range decoder on seeded random and mutated streams: never a panic, and a stream
/// that decodes re-encodes to one that decodes to the same bits.
#[test]
fn range_decoder_mutations_never_panic() {
    use bloomery::compress::{compress_bits, decompress_bits};
    let mut rng = StdRng::seed_from_u64(0xB1_2026);
    let mut ok = 0;
    for round in 0..3000 {
        let m = rng.gen_range(1..3000u64);
        // densities 1/2, 1/4 (+ a few), 1/8: the stored, bit-per-decision and gap streams
        let and = round % 3;
        let words: Vec<u64> = (0..m.div_ceil(64))
            .map(|_| {
                let mut w = rng.gen::<u64>();
                for _ in 0..and {
                    w &=
                        rng.gen::<u64>() | (rng.gen::<u64>() & rng.gen::<u64>() & rng.gen::<u64>());
                }
                w
            })
            .collect();
        let good = compress_bits(&words, m).unwrap();
        let bad = mutate(&mut rng, &good, &good);
        let r = catch_unwind(AssertUnwindSafe(|| {
            match decompress_bits(&bad, m, 1 << 20) {
                Ok(w) => {
                    let c = compress_bits(w.as_slice(), m).unwrap();
                    assert_eq!(
                        decompress_bits(&c, m, 1 << 20).unwrap().as_slice(),
                        w.as_slice()
                    );
                    true
                }
                Err(_) => false,
            }
        }));
        match r {
            Ok(b) => ok += usize::from(b),
            Err(_) => panic!("panic on stream {round} (m = {m}): {}", hex(&bad)),
        }
    }
    eprintln!("{ok} of 3000 mutated streams decoded");
    assert!(ok < 1500);
}

/// The miniature of the `fuzz/` target `parquet_filter_header`: seeded mutations of valid
/// Parquet filter headers (with and without unknown fields) and random bytes go to the header
/// reader, which must never panic, and whatever it accepts must be a valid size inside the
/// input whose bitset, when present, loads.
#[test]
fn parquet_filter_header_mutations_never_panic() {
    use bloomery::parquet::{read_filter_header, write_filter_header};
    let mut rng = StdRng::seed_from_u64(0x5BBF);
    let mut seeds = vec![
        write_filter_header(32),
        write_filter_header(1 << 20),
        // numBytes 64, an unknown binary field 9, then the three unions
        vec![
            0x15, 128, 1, 0x88, 2, b'x', b'y', 0x1C, 0x1C, 0, 0, 0x1C, 0x1C, 0, 0, 0x1C, 0x1C, 0,
            0, 0,
        ],
    ];
    for s in &mut seeds {
        s.extend(std::iter::repeat_n(0xA5u8, 64));
    }
    let mut accepted = 0;
    for i in 0..20_000 {
        let seed = &seeds[i % seeds.len()];
        let bytes: Vec<u8> = if i % 10 == 0 {
            (0..rng.gen_range(0..40)).map(|_| rng.gen()).collect()
        } else {
            let mut b = seed.clone();
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(0..b.len());
                match rng.gen_range(0..3) {
                    0 => b[at] = rng.gen(),
                    1 => b.truncate(at),
                    _ => b.insert(at, rng.gen()),
                }
                if b.is_empty() {
                    break;
                }
            }
            b
        };
        let r = catch_unwind(AssertUnwindSafe(|| read_filter_header(&bytes)));
        let Ok(r) = r else {
            panic!("the header reader panicked on {}", hex(&bytes));
        };
        if let Ok(h) = r {
            accepted += 1;
            assert!(h.num_bytes > 0 && h.num_bytes % 32 == 0);
            assert!(h.header_len <= bytes.len());
            if let Some(bits) = bytes[h.header_len..].get(..h.num_bytes as usize) {
                assert!(SplitBlockBloomFilter::from_parquet_bitset(bits).is_ok());
            }
        }
    }
    assert!(accepted > 100, "the mutants reach past the first field");
}

/// The miniature of the `fuzz/` target `compress_encoder`: seeded random bit arrays of every
/// density (the stored, bit-per-decision and gap streams, empty and full) go to the encoder,
/// which must decode back to them; as classic filter files, their compressed form, delta and
/// patched result written as they are made equal the in-memory ones byte for byte.
#[test]
fn encoder_round_trips_and_streamed_writers_equal_the_in_memory_ones() {
    use bloomery::compress::{
        compress_bits, compress_file, compress_file_to, decompress_bits, decompress_file,
        diff_files, diff_files_to, patch_file, patch_file_compressed_to, patch_file_to,
    };
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let mut rng = StdRng::seed_from_u64(0xE0_2026);
    // a classic filter file of `words` words whose payload is `bits`, resealed
    let file_of = |bits: &[u64], words: usize| {
        let mut b = BloomFilter::try_with_shape(words as u64 * 64, 3)
            .unwrap()
            .to_bytes();
        let h = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
        for (i, w) in bits.iter().take(words).enumerate() {
            b[h + 8 * i..h + 8 * i + 8].copy_from_slice(&w.to_le_bytes());
        }
        reseal(&mut b);
        b
    };
    for round in 0..300 {
        let m = rng.gen_range(1..40_000u64);
        let len = m.div_ceil(64) as usize;
        let words: Vec<u64> = (0..len)
            .map(|_| match round % 6 {
                0 => rng.gen::<u64>(),
                1 => rng.gen::<u64>() & rng.gen::<u64>(),
                2 => rng.gen::<u64>() & rng.gen::<u64>() & rng.gen::<u64>() & rng.gen::<u64>(),
                3 => !(rng.gen::<u64>() & rng.gen::<u64>() & rng.gen::<u64>()),
                4 => 0,
                _ => u64::MAX,
            })
            .collect();
        let c = compress_bits(&words, m).unwrap();
        let back = decompress_bits(&c, m, 1 << 24).unwrap();
        for (i, (&a, &b)) in words.iter().zip(back.as_slice()).enumerate() {
            let end = (m - 64 * i as u64).min(64);
            let mask = if end == 64 { u64::MAX } else { (1 << end) - 1 };
            assert_eq!(a & mask, b, "round {round} word {i}");
        }
        if round % 5 != 0 {
            continue;
        }
        let new = file_of(&words, len);
        let mut older = words.clone();
        for _ in 0..rng.gen_range(0..20) {
            let i = rng.gen_range(0..len);
            older[i] ^= 1 << rng.gen_range(0..64);
        }
        let base = file_of(&older, len);
        let packed = compress_file(&new).unwrap();
        compress_file_to(&new, &at("c")).unwrap();
        assert_eq!(std::fs::read(at("c")).unwrap(), packed, "round {round}");
        assert_eq!(decompress_file(&packed, 1 << 24).unwrap(), new);
        let delta = diff_files(&base, &new).unwrap();
        diff_files_to(&base, &new, &at("d")).unwrap();
        assert_eq!(std::fs::read(at("d")).unwrap(), delta, "round {round}");
        assert_eq!(patch_file(&base, &delta, 1 << 24).unwrap(), new);
        patch_file_to(&base, &delta, &at("p")).unwrap();
        assert_eq!(std::fs::read(at("p")).unwrap(), new, "round {round}");
        // coded through a memory map: with the `mmap` feature only
        if cfg!(feature = "mmap") {
            patch_file_compressed_to(&base, &delta, &at("pc")).unwrap();
            assert_eq!(std::fs::read(at("pc")).unwrap(), packed, "round {round}");
        }
    }
}

thread_local! {
    /// Panics raised on this thread, caught or not.
    static PANICS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Count every panic on the thread that raises it, from now on (the previous hook still runs).
fn count_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.with(|p| p.set(p.get() + 1));
            previous(info);
        }));
    });
}

/// The miniature of the `fuzz/` target `parquet_index`: seeded mutations of a small Parquet
/// file with filters (its footer and the bytes before it, where the filters and page index
/// lie) go to what `parquet index` runs: `build_filters` and `rewrite_with_filters`. Nothing
/// may panic, not even inside the `parquet` crate where `parquet index` would catch it; a
/// rewrite either succeeds with a file `verify_rewrite` accepts or leaves no output.
#[test]
fn parquet_index_mutations_never_panic() {
    count_panics();
    use bloomery::parquet::{
        build_filters, rewrite_with_filters, verify_rewrite, ParquetFile, Sizing,
    };
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.parquet");
    parquet_gen::write(&good, 1, 2, 300, 0.01);
    let seed = std::fs::read(&good).unwrap();
    let mut rng = StdRng::seed_from_u64(0x1DE7_2026);
    let (mut opened, mut rewritten) = (0, 0);
    for round in 0..150 {
        let mut b = seed.clone();
        // most mutations in the last 4 KiB: the footer, the page index and the filters
        for _ in 0..rng.gen_range(1..4) {
            let from = if rng.gen_bool(0.8) {
                b.len().saturating_sub(4096)
            } else {
                0
            };
            let i = rng.gen_range(from..b.len());
            match rng.gen_range(0..4) {
                0 => b[i] ^= 1 << rng.gen_range(0..8),
                1 => b[i] = rng.gen(),
                2 => b[i] = [0, 0x7f, 0x80, 0xff][rng.gen_range(0..4)],
                _ => {
                    let j = rng.gen_range(0..b.len());
                    b.swap(i, j);
                }
            }
        }
        let input = dir.path().join("in.parquet");
        std::fs::write(&input, &b).unwrap();
        let r = catch_unwind(AssertUnwindSafe(|| {
            let Ok(pf) = ParquetFile::open(&input) else {
                return (false, false);
            };
            let mut done = false;
            let col = pf.find_column("nofilter").ok();
            if let Some(col) = col {
                let missing: Vec<usize> = (0..pf.row_groups()).collect();
                let _ = build_filters(&pf, col, &missing, 0.01, Sizing::Tight);
                let out = dir.path().join("out.parquet");
                let _ = std::fs::remove_file(&out);
                match rewrite_with_filters(&input, &out, "nofilter", 0.01) {
                    Ok(_) => {
                        verify_rewrite(&input, &out, "nofilter").unwrap();
                        done = true;
                    }
                    Err(_) => assert!(!out.exists(), "a failed rewrite left its output"),
                }
            }
            (true, done)
        }));
        match r {
            Ok((o, d)) => {
                opened += usize::from(o);
                rewritten += usize::from(d);
            }
            Err(_) => panic!("panic on mutant {round}"),
        }
    }
    assert_eq!(PANICS.with(|p| p.get()), 0, "a panic, caught or not");
    eprintln!("{opened} of 150 mutants opened, {rewritten} rewritten");
    assert!(opened > 10 && rewritten > 0, "{opened} {rewritten}");
}
