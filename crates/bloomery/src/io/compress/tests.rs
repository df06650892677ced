use super::bits::{check_stream, compress_with, decode_into};
use super::model::{Mode, TAG_BITS, TAG_GAPS};
use super::words::count_ones_m;
use super::*;
use crate::filter::Filter;
use crate::params::{compressed_bits, entropy, fpr_asymptotic};
use crate::sets::classic::BloomFilter;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

const LIMIT: u64 = 1 << 30;

fn words_of(bits: &[bool]) -> Vec<u64> {
    let mut w = vec![0u64; bits.len().div_ceil(64)];
    for (i, &b) in bits.iter().enumerate() {
        if b {
            w[i / 64] |= 1 << (i % 64);
        }
    }
    w
}

fn round_trip(words: &[u64], m: u64) -> Vec<u8> {
    let c = compress_bits(words, m).unwrap();
    let d = decompress_bits(&c, m, LIMIT).unwrap();
    let len = m.div_ceil(64) as usize;
    let mut want = words[..len].to_vec();
    if !m.is_multiple_of(64) {
        want[len - 1] &= (1u64 << (m % 64)) - 1;
    }
    assert_eq!(d.as_slice(), &want[..], "m = {m}");
    c
}

fn random_words(m: u64, ones_fraction: f64, seed: u64) -> Vec<u64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut w = vec![0u64; m.div_ceil(64) as usize];
    for i in 0..m {
        if rng.gen_bool(ones_fraction) {
            w[(i / 64) as usize] |= 1 << (i % 64);
        }
    }
    w
}

fn filter(n: u64, bits_per_item: u64, k: u32, seed: u64) -> BloomFilter {
    let mut f = BloomFilter::try_with_shape(n * bits_per_item, k).unwrap();
    for i in 0..n {
        f.insert(&(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i));
    }
    f
}

/// The encoder picks the mode the docs say for each density and every such stream
/// decodes; a stream in any other mode (which the encoder never writes) is refused.
#[test]
fn each_density_has_one_mode_and_forged_modes_are_refused() {
    for (m, frac) in [
        (1u64, 0.5),
        (70, 0.01),
        (1000, 0.1),
        (4097, 0.3),
        (20_000, 0.5),
        (20_000, 0.001),
        (5000, 0.99),
    ] {
        let w = random_words(m, frac, m ^ 77);
        let ones = count_ones_m(&w[..], m);
        if ones == 0 || ones == m {
            continue;
        }
        let mut want = w[..m.div_ceil(64) as usize].to_vec();
        if !m.is_multiple_of(64) {
            *want.last_mut().unwrap() &= (1u64 << (m % 64)) - 1;
        }
        let q = ones.min(m - ones) as f64 / m as f64;
        let chosen = if q >= 0.4814 {
            Mode::Raw
        } else if q < 0.25 {
            Mode::Gaps
        } else {
            Mode::Bits
        };
        let auto = compress_bits(&w, m).unwrap();
        assert_eq!(auto[0], chosen.tag(), "m = {m}, q = {q}");
        assert_eq!(
            decompress_bits(&auto, m, LIMIT).unwrap().as_slice(),
            &want[..]
        );
        for mode in [Mode::Raw, Mode::Bits, Mode::Gaps] {
            let c = compress_with(&w[..], m, Some(mode)).unwrap();
            assert_eq!(c[0], mode.tag());
            match decompress_bits(&c, m, LIMIT) {
                Ok(d) => {
                    assert_eq!(mode, chosen, "m = {m}: a forged {mode:?} stream decoded");
                    assert_eq!(d.as_slice(), &want[..], "m = {m}, {mode:?}");
                }
                Err(Error::Format(FormatError::Inconsistent(e))) => {
                    assert_ne!(mode, chosen, "m = {m}: {e}");
                    assert!(e.contains("forged"), "{e}");
                }
                Err(e) => panic!("m = {m}, {mode:?}: {e}"),
            }
        }
    }
    // a raw stream with a stray bit beyond m, or the wrong count, is refused
    let mut c = compress_with(&[0b0011u64][..], 4, Some(Mode::Raw)).unwrap();
    assert_eq!(decompress_bits(&c, 4, LIMIT).unwrap().as_slice(), &[0b0011]);
    c[HEADER_BYTES] |= 0x10;
    assert!(decompress_bits(&c, 4, LIMIT).is_err());
}

/// A bit-by-bit stream at a density the encoder codes as gaps (one set bit in 2^30)
/// would cost a billion decisions; it is refused before any allocation or decoding, and
/// so is a stream too short for the array it claims.
#[test]
fn forged_streams_are_refused_before_work() {
    let m = 1u64 << 30;
    let mut forged = vec![TAG_BITS];
    forged.extend_from_slice(&m.to_le_bytes());
    forged.extend_from_slice(&1u64.to_le_bytes());
    forged.extend_from_slice(&[0, 0x10, 0, 0, 0, 0, 0, 0]);
    let t = std::time::Instant::now();
    // a limit far below the array: only the checks run (the refusal is not TooLarge)
    let e = decompress_bits(&forged, m, 1 << 20).unwrap_err();
    assert!(
        matches!(e, Error::Format(FormatError::Inconsistent(_))),
        "{e}"
    );
    assert!(e.to_string().contains("forged"), "{e}");
    // the right mode (gaps) for that density, but 8 bytes for a million gap decisions
    let q = 1u64 << 20;
    forged[0] = TAG_GAPS;
    forged[9..17].copy_from_slice(&q.to_le_bytes());
    let e = decompress_bits(&forged, m, 1 << 40).unwrap_err();
    assert!(e.to_string().contains("cannot hold"), "{e}");
    // bit by bit at q = 1/3: 0.415 bits per decision at least
    let mut short = vec![TAG_BITS];
    short.extend_from_slice(&m.to_le_bytes());
    short.extend_from_slice(&(m / 3).to_le_bytes());
    short.extend_from_slice(&[0u8; 1000]);
    let e = decompress_bits(&short, m, 1 << 40).unwrap_err();
    assert!(e.to_string().contains("cannot hold"), "{e}");
    assert!(t.elapsed() < std::time::Duration::from_secs(1));
}

/// Decoding work is bounded by the input: whatever bytes a stream of the right mode and
/// length holds, each coder decision narrows the range by at most 3/4, so the decoder
/// makes at most about 20 decisions per input byte before it runs out of input.
#[test]
fn decoding_work_is_bounded_by_the_input() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    for (m, ones, noise) in [
        (1u64 << 24, (1u64 << 24) * 3 / 10, 880_000usize),
        (1 << 24, 1 << 12, 8_000),
        (1 << 24, (1 << 24) - 3000, 8_000),
    ] {
        let mut s = vec![if ones * 4 < m || ones * 4 > 3 * m {
            TAG_GAPS
        } else {
            TAG_BITS
        }];
        s.extend_from_slice(&m.to_le_bytes());
        s.extend_from_slice(&ones.to_le_bytes());
        s.push(0);
        s.extend((0..noise).map(|_| rng.gen::<u8>() & 0x7F));
        let st = check_stream(&s, m).unwrap();
        let mut last = 0usize;
        let r = decode_into(&st, &mut |i, _| last = i);
        // bits of the array decided before the stream ended (or was found damaged)
        let decided = (last as u64 + 1) * 64;
        if st.mode == Mode::Bits {
            assert!(
                decided <= 20 * noise as u64 + 64,
                "{decided} decisions from {noise} bytes"
            );
        }
        assert!(r.is_err(), "noise decoded as a valid stream");
    }
}

#[test]
fn empty_full_sparse_dense() {
    for m in [1u64, 2, 63, 64, 65, 1000, 4097] {
        let len = m.div_ceil(64) as usize;
        let c = round_trip(&vec![0; len], m);
        assert_eq!(c.len(), HEADER_BYTES);
        let c = round_trip(&vec![u64::MAX; len], m);
        assert_eq!(c.len(), HEADER_BYTES);
        round_trip(&random_words(m, 0.001, m), m);
        round_trip(&random_words(m, 0.5, m), m);
        round_trip(&random_words(m, 0.999, m), m);
        let mut one = vec![0; len];
        one[len - 1] = 1;
        round_trip(&one, m);
    }
    // Stray bits beyond m are ignored.
    round_trip(&[u64::MAX, u64::MAX], 70);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn prop_round_trip(bits in proptest::collection::vec(any::<bool>(), 1..3000)) {
        let m = bits.len() as u64;
        round_trip(&words_of(&bits), m);
    }

    #[test]
    fn prop_round_trip_skewed(m in 1u64..20_000, frac in 0.0f64..1.0, seed in any::<u64>()) {
        let frac = frac * frac * frac; // mostly sparse
        round_trip(&random_words(m, frac, seed), m);
        round_trip(&random_words(m, 1.0 - frac, seed), m);
    }
}

#[test]
fn bound_on_real_filters() {
    // n = 100k, m = 1.2M..4.8M bits, fills from ~0.06 to ~0.5 of ones.
    for (bpi, k) in [(12u64, 8u32), (16, 11), (16, 2), (24, 3), (48, 3), (48, 1)] {
        let f = filter(100_000, bpi, k, bpi * 31 + u64::from(k));
        let m = f.bits();
        let c = round_trip(f.as_words(), m);
        let h = entropy_bits(f.as_words(), m).unwrap();
        let payload = (c.len() - HEADER_BYTES) as f64 * 8.0;
        let ratio = payload / h;
        assert!(
            payload <= 1.01 * h,
            "m/n = {bpi}, k = {k}: {payload} bits vs m·H = {h}"
        );
        // The coder is close to exact: within 0.1 % plus the flush.
        assert!(payload <= h * 1.001 + 40.0, "ratio {ratio}");
        assert_eq!(
            compressed_len_bits(f.as_words(), m).unwrap(),
            c.len() as u64 * 8
        );
        println!("m/n = {bpi}, k = {k}, m = {m}: payload / m·H(p) = {ratio:.6}");
    }
}

#[test]
fn table_1_from_formulas() {
    let n = 100_000u64;
    let rows = [
        (16u64, 11u32, 0.000459, 16.0),
        (28, 4, 0.000314, 15.846),
        (48, 3, 0.000222, 15.829),
    ];
    for (bpi, k, f, z) in rows {
        let m = n * bpi;
        let fpr = fpr_asymptotic(n, m, k);
        assert!((fpr - f).abs() < 0.0000005, "m/n = {bpi}: f = {fpr}");
        let zn = compressed_bits(n, m, k) / n as f64;
        if bpi == 16 {
            // The uncompressed filter: 16 bits, and compression cannot help (H ≈ 1).
            assert!(zn > 15.99 && zn <= 16.0, "{zn}");
        } else {
            assert!((zn - z).abs() < 0.0005, "m/n = {bpi}: z/n = {zn}");
        }
    }
}

#[test]
fn table_1_from_real_filters() {
    let n = 100_000u64;
    for (bpi, k, z) in [(16u64, 11u32, 16.0), (28, 4, 15.846), (48, 3, 15.829)] {
        let f = filter(n, bpi, k, bpi);
        let c = round_trip(f.as_words(), f.bits());
        let zn = c.len() as f64 * 8.0 / n as f64;
        assert!(
            (zn - z).abs() / z < 0.01,
            "m/n = {bpi}: measured z/n = {zn}"
        );
        assert!(zn < 16.05, "m/n = {bpi}: {zn}");
        println!("Table 1, m/n = {bpi}, k = {k}: measured z/n = {zn:.4} (table {z})");
    }
}

#[test]
fn corruption_is_an_error_never_a_panic() {
    let f = filter(2_000, 16, 4, 7);
    let m = f.bits();
    let c = compress_bits(f.as_words(), m).unwrap();
    // Truncation at every length.
    for cut in 0..c.len() {
        assert!(decompress_bits(&c[..cut], m, LIMIT).is_err(), "cut {cut}");
    }
    let mut longer = c.clone();
    longer.push(0);
    assert!(decompress_bits(&longer, m, LIMIT).is_err());
    assert!(decompress_bits(&c, m + 1, LIMIT).is_err());
    assert!(matches!(
        decompress_bits(&c, m, 8),
        Err(Error::TooLarge { .. })
    ));
    // Seeded mutations: every outcome is Ok (a different valid array) or a typed error.
    let mut rng = rand::rngs::StdRng::seed_from_u64(6);
    let mut detected = 0;
    for _ in 0..300 {
        let mut d = c.clone();
        for _ in 0..rng.gen_range(1..4) {
            let i = rng.gen_range(0..d.len());
            d[i] ^= 1 << rng.gen_range(0..8);
        }
        match decompress_bits(&d, m, LIMIT) {
            Err(Error::Format(_)) | Err(Error::TooLarge { .. }) => detected += 1,
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => {}
        }
    }
    println!("{detected}/300 mutated streams detected");
    assert!(detected > 250, "{detected}/300 detected");
    // Header lies: huge m with a small limit, ones > m.
    let mut huge = c.clone();
    huge[1..9].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(decompress_bits(&huge, u64::MAX, LIMIT).is_err());
    let mut bad = c.clone();
    bad[9..17].copy_from_slice(&(m + 1).to_le_bytes());
    assert!(decompress_bits(&bad, m, LIMIT).is_err());
    // Deltas: mutations are detected (the result's fingerprint is checked).
    let g = filter(2_100, 16, 4, 7);
    let (a, b) = (f.as_words(), &g.as_words()[..(m.div_ceil(64) as usize)]);
    let d = diff(a, b, m).unwrap();
    for _ in 0..200 {
        let mut e = d.clone();
        let i = rng.gen_range(0..e.len());
        e[i] ^= 1 << rng.gen_range(0..8);
        assert!(patch(a, &e, m, LIMIT).is_err());
    }
    for cut in 0..d.len() {
        assert!(patch(a, &d[..cut], m, LIMIT).is_err());
    }
    assert!(compress_bits(&[0], 65).is_err());
}

#[test]
fn delta_round_trip_and_wrong_base() {
    let n = 100_000u64;
    let k = 4;
    let m = n * 28;
    let mut f = BloomFilter::try_with_shape(m, k).unwrap();
    for i in 0..n {
        f.insert(&i);
    }
    let old = f.as_words().to_vec();
    let changed = 1_000u64;
    for i in n..n + changed {
        f.insert(&i);
    }
    let new = f.as_words().to_vec();
    let d = diff(&old, &new, m).unwrap();
    assert_eq!(patch(&old, &d, m, LIMIT).unwrap(), new);
    // Bytes per changed item against the entropy bound of the XOR: each new item flips at
    // most k bits, so the XOR has q ≤ k·changed/m ones and costs about m·H(q) bits.
    let flipped = old
        .iter()
        .zip(&new)
        .map(|(a, b)| (a ^ b).count_ones() as u64)
        .sum::<u64>();
    assert!(flipped <= k as u64 * changed);
    let bound_bytes = m as f64 * entropy(flipped as f64 / m as f64) / 8.0;
    let per_item = d.len() as f64 / changed as f64;
    let bound_per_item =
        (bound_bytes * 1.01 + (HEADER_BYTES + DIFF_HEADER_BYTES + 5) as f64) / changed as f64;
    assert!(
        per_item <= bound_per_item,
        "{per_item:.2} bytes per changed item, bound {bound_per_item:.2}"
    );
    // About k·log2(e·m/(k·changed))/8 ≈ 6.2 bytes per item at these sizes.
    let ideal =
        k as f64 * (std::f64::consts::E * m as f64 / (k as f64 * changed as f64)).log2() / 8.0;
    assert!(per_item < ideal * 1.02, "{per_item} vs {ideal}");
    println!(
        "delta: {changed} items, {flipped} bits flipped, {} bytes, {per_item:.3} bytes per \
         item (entropy bound {:.3}, ideal {ideal:.3})",
        d.len(),
        bound_bytes / changed as f64
    );
    // Wrong base: refused with a typed error.
    let mut other = old.clone();
    other[3] ^= 1 << 5;
    assert!(matches!(
        patch(&other, &d, m, LIMIT),
        Err(Error::Incompatible(_))
    ));
    assert!(patch(&old[..10], &d, m, LIMIT).is_err());
    // Identical versions: an empty delta payload.
    let same = diff(&old, &old, m).unwrap();
    assert_eq!(same.len(), DIFF_HEADER_BYTES + HEADER_BYTES);
    assert_eq!(patch(&old, &same, m, LIMIT).unwrap(), old);
}

#[test]
fn streamed_files_equal_the_in_memory_ones_and_fail_without_writing() {
    use crate::io::format::Persist;
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    // sparse (gaps), moderately full (one decision per bit), half full (stored), empty,
    // and each over several spill pieces
    for (n, bits, k) in [
        (200_000u64, 200u64, 2u32),
        (600_000, 9, 1),
        (300_000, 6, 4),
        (0, 1 << 22, 3),
    ] {
        let mut f = BloomFilter::try_with_shape(bits * n.max(1), k).unwrap();
        for i in 0..n {
            f.insert(&i);
        }
        let old = f.to_bytes();
        for i in n..n + 50 {
            f.insert(&i);
        }
        let new = f.to_bytes();

        let sizes = compress_file_to(&new, &at("c")).unwrap();
        let packed = compress_file(&new).unwrap();
        assert_eq!(std::fs::read(at("c")).unwrap(), packed, "n {n}");
        assert_eq!(sizes, packed_sizes(&packed, true).unwrap());
        // a compressed input is copied as it is
        let again = compress_file_to(&packed, &at("c2")).unwrap();
        assert_eq!(again, sizes);
        assert_eq!(std::fs::read(at("c2")).unwrap(), packed);

        let len = diff_files_to(&old, &new, &at("d")).unwrap();
        let delta = diff_files(&old, &new).unwrap();
        assert_eq!(std::fs::read(at("d")).unwrap(), delta, "n {n}");
        assert_eq!(len, delta.len() as u64);
        // from a compressed base too
        let len = patch_file_to(&compress_file(&old).unwrap(), &delta, &at("p")).unwrap();
        assert_eq!(std::fs::read(at("p")).unwrap(), new, "n {n}");
        assert_eq!(len, new.len() as u64);
        assert_eq!(patch_file(&old, &delta, LIMIT).unwrap(), new);
        // codes a plain temporary file through a memory map: without the `mmap` feature,
        // an `Unsupported` error as for every use of a file in place
        let pc = patch_file_compressed_to(&old, &delta, &at("pc"));
        if cfg!(feature = "mmap") {
            let sizes = pc.unwrap();
            assert_eq!(std::fs::read(at("pc")).unwrap(), packed, "n {n}");
            assert_eq!(sizes, packed_sizes(&packed, true).unwrap());
        } else {
            assert!(matches!(pc, Err(Error::Unsupported(_))), "{pc:?}");
        }
    }
    // a damaged delta, a wrong base: errors, and the target keeps its bytes
    let mut f = BloomFilter::try_with_shape(1 << 16, 3).unwrap();
    let old = f.to_bytes();
    f.insert(&1u64);
    let new = f.to_bytes();
    let delta = diff_files(&old, &new).unwrap();
    std::fs::write(at("p"), b"before").unwrap();
    assert!(matches!(
        patch_file_to(&new, &delta, &at("p")),
        Err(Error::Incompatible(_))
    ));
    let mut bad = delta.clone();
    let i = bad.len() - 20;
    bad[i] ^= 0x10;
    assert!(patch_file_to(&old, &bad, &at("p")).is_err());
    assert_eq!(std::fs::read(at("p")).unwrap(), b"before");
    let names = std::fs::read_dir(dir.path()).unwrap().count();
    // c, c2, d, p and, with memory maps, pc: nothing else, no temporary file
    let made = if cfg!(feature = "mmap") { 5 } else { 4 };
    assert_eq!(names, made, "a temporary file left");
}

#[test]
fn delta_non_multiple_of_64() {
    let m = 1_000_003u64;
    let a = random_words(m, 0.3, 1);
    let mut b = a.clone();
    for i in (0..m).step_by(997) {
        b[(i / 64) as usize] ^= 1 << (i % 64);
    }
    let d = diff(&a, &b, m).unwrap();
    let mut want = b.clone();
    let last = want.len() - 1;
    want[last] &= (1u64 << (m % 64)) - 1;
    let mut a_masked = a.clone();
    a_masked[last] &= (1u64 << (m % 64)) - 1;
    assert_eq!(patch(&a, &d, m, LIMIT).unwrap(), want);
    assert_eq!(patch(&a_masked, &d, m, LIMIT).unwrap(), want);
}
