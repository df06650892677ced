//! The blocked filter's tests: every layout, every path (portable, BMI2, AVX2, batched,
//! atomic, regions) against the one mapping, sizing against the model, persistence.

use super::*;
use crate::hash::mix64;

#[test]
fn no_false_negatives_roundtrip_and_batch() {
    let mut f = BlockedBloomFilter::try_new(5000, 0.01).unwrap();
    let keys: Vec<u64> = (0..5000).collect();
    f.extend(keys.iter().copied());
    assert!(keys.iter().all(|k| f.contains(k)));
    let mut out = vec![false; keys.len()];
    f.contains_batch(&keys, &mut out).unwrap();
    assert!(out.iter().all(|&b| b));
    assert_eq!(f.count_batch(&keys), keys.len());
    let g = BlockedBloomFilter::from_bytes(&f.to_bytes()).unwrap();
    assert_eq!(f, g);
}

/// The mask as the first implementation computed it (one loop, a round counter): the
/// key→bits mapping must never drift from it.
fn reference_mask(h: Hashed, k: u32) -> [u64; BLOCK_WORDS] {
    let mut mask = [0u64; BLOCK_WORDS];
    let mut x = h.hi;
    let mut left = 7;
    let mut round = 0u64;
    for _ in 0..k {
        if left == 0 {
            round += 1;
            x = mix64(h.hi ^ h.lo.rotate_left(32) ^ round.wrapping_mul(0xD1B5_4A32_D192_ED03));
            left = 7;
        }
        let p = (x & 511) as usize;
        x >>= 9;
        left -= 1;
        mask[p >> 6] |= 1u64 << (p & 63);
    }
    mask
}

#[test]
fn probes_match_the_reference_mapping() {
    let hasher = KeyHasher::new();
    for k in 1..=BLOCKED_MAX_K {
        let mut f = BlockedBloomFilter::try_with_shape(97, k).unwrap();
        for i in 0..300u64 {
            let h = hasher.hash(&i);
            assert_eq!(
                Block::mask(h, k, BlockLayout::Positions, 0).0,
                reference_mask(h, k),
                "k={k} key={i}"
            );
            let mut g = BlockedBloomFilter::try_with_shape(97, k).unwrap();
            g.insert_hashed(h);
            let b = block_start(h, 97);
            let mut want = vec![0u64; 97 * BLOCK_WORDS];
            want[b..b + BLOCK_WORDS].copy_from_slice(&reference_mask(h, k));
            assert_eq!(g.as_words(), &want[..], "k={k} key={i}");
            f.insert_hashed(h);
        }
        let keys: Vec<u64> = (0..300).collect();
        assert_eq!(f.count_batch(&keys), 300);
        assert!((0..300u64).all(|i| f.contains(&i)));
    }
}

/// Every kernel of this build (BMI2 / AVX2 where the CPU has them, portable under
/// `BLOOMERY_NO_SIMD`) agrees with the portable one and with the mask, for both layouts and
/// every k, on random blocks dense enough that both answers occur.
#[test]
fn block_kernels_agree_with_the_portable_kernel_and_the_mask() {
    let hasher = KeyHasher::new();
    let mut rng = 0x0DDB_1A5E_5BAD_5EEDu64;
    let (mut yes, mut no) = (0u32, 0u32);
    for (layout, ks) in [
        (BlockLayout::Positions, 1..=BLOCKED_MAX_K),
        (BlockLayout::Sectors, 8..=8),
        (BlockLayout::Salted, 8..=8),
        (BlockLayout::Salted256, 8..=8),
    ] {
        for k in ks {
            for i in 0..200u64 {
                let half = (i & 1) as usize;
                let h = hasher.hash(&(u64::from(k) << 32 | i));
                let mut block = Block::default();
                for w in block.0.iter_mut() {
                    rng = mix64(rng);
                    // ~90% ones for small k, sparser for large k: both answers occur
                    *w = if k <= 8 {
                        rng | mix64(rng ^ 1) | mix64(rng ^ 2)
                    } else {
                        rng | mix64(rng ^ 1)
                    };
                }
                let mask = Block::mask(h, k, layout, half);
                let want = block.0.iter().zip(mask.0).all(|(w, m)| w & m == m);
                assert_eq!(
                    block.check(h, k, layout, half),
                    want,
                    "{layout:?} k={k} key={i}"
                );
                assert_eq!(
                    block.check_scalar(h, k, layout, half),
                    want,
                    "{layout:?} k={k} key={i}"
                );
                if want {
                    yes += 1
                } else {
                    no += 1
                }
                let (mut a, mut b) = (block, block);
                assert_eq!(a.insert(h, k, layout, half), !want);
                assert_eq!(b.insert_scalar(h, k, layout, half), !want);
                assert_eq!(a, b);
                let ored: Vec<u64> = block.0.iter().zip(mask.0).map(|(w, m)| w | m).collect();
                assert_eq!(&a.0[..], &ored[..]);
            }
        }
    }
    assert!(yes > 100 && no > 100, "yes={yes} no={no}");
}

/// The sectors layout's bits, written out plainly: word j gets bit `(hi >> 6j) & 63`.
fn reference_sectors(h: Hashed) -> [u64; BLOCK_WORDS] {
    let mut mask = [0u64; BLOCK_WORDS];
    for (j, m) in mask.iter_mut().enumerate() {
        *m = 1u64 << ((h.hi >> (6 * j as u32)) & 63);
    }
    mask
}

#[test]
fn sectors_match_the_reference_mapping_and_simd_equals_scalar() {
    let hasher = KeyHasher::new();
    let mut f = BlockedBloomFilter::try_with_sectors(97).unwrap();
    assert_eq!(f.layout(), BlockLayout::Sectors);
    assert_eq!(f.hashes(), 8);
    let mut rng = 0x1234_5678_9ABC_DEF0u64;
    for i in 0..2000u64 {
        let h = hasher.hash(&i);
        assert_eq!(
            Block::mask(h, 8, BlockLayout::Sectors, 0).0,
            reference_sectors(h)
        );
        // dispatched (AVX2 where available) and portable versions agree on random blocks
        let mut block = Block::default();
        for w in block.0.iter_mut() {
            rng = mix64(rng);
            *w = rng | mix64(rng ^ 1); // dense: ~75% ones, so both answers occur
        }
        let s = BlockLayout::Sectors;
        assert_eq!(
            block.check(h, 8, s, 0),
            block.check_scalar(h, 8, s, 0),
            "key={i}"
        );
        let (mut a, mut b) = (block, block);
        assert_eq!(a.insert(h, 8, s, 0), b.insert_scalar(h, 8, s, 0), "key={i}");
        assert_eq!(a, b);
        assert!(a.check(h, 8, s, 0));
        if i < 300 {
            let mut g = BlockedBloomFilter::try_with_sectors(97).unwrap();
            g.insert_hashed(h);
            let at = block_start(h, 97);
            let mut want = vec![0u64; 97 * BLOCK_WORDS];
            want[at..at + BLOCK_WORDS].copy_from_slice(&reference_sectors(h));
            assert_eq!(g.as_words(), &want[..], "key={i}");
            f.insert_hashed(h);
        }
    }
    let keys: Vec<u64> = (0..300).collect();
    assert_eq!(f.count_batch(&keys), 300);
    assert!((0..300u64).all(|i| f.contains(&i)));
    let g = BlockedBloomFilter::from_bytes(&f.to_bytes()).unwrap();
    assert_eq!(g.layout(), BlockLayout::Sectors);
    assert_eq!(f, g);
}

/// The salted layout's bits, written out plainly: word j gets bit
/// `((lo mod 2³²) · salt_j mod 2³²) >> 26` with the eight salts of the Parquet specification.
fn reference_salted(h: Hashed) -> [u64; BLOCK_WORDS] {
    let salts: [u64; 8] = [
        0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947,
        0x5c6bfb31,
    ];
    let mut mask = [0u64; BLOCK_WORDS];
    for (m, salt) in mask.iter_mut().zip(salts) {
        *m = 1u64 << ((((h.lo & 0xFFFF_FFFF) * salt) & 0xFFFF_FFFF) >> 26);
    }
    mask
}

#[test]
fn salted_match_the_reference_mapping_and_simd_equals_scalar() {
    let mut f = BlockedBloomFilter::try_with_salted(97).unwrap();
    let hasher = *f.hasher();
    assert_eq!(hasher.algorithm(), crate::hash::HashAlgorithm::Xxh3_64);
    assert_eq!((f.layout(), f.hashes()), (BlockLayout::Salted, 8));
    let mut rng = 0x2345_6789_ABCD_EF01u64;
    for i in 0..2000u64 {
        let h = hasher.hash(&i);
        // the hash is xxh3-64 of the key's bytes, seed 0
        assert_eq!(h.lo, xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes()));
        assert_eq!(
            Block::mask(h, 8, BlockLayout::Salted, 0).0,
            reference_salted(h)
        );
        // only the low half matters
        let other_hi = Hashed::new(h.lo, !h.hi);
        assert_eq!(
            Block::mask(other_hi, 8, BlockLayout::Salted, 0),
            Block::mask(h, 8, BlockLayout::Salted, 0)
        );
        let mut block = Block::default();
        for w in block.0.iter_mut() {
            rng = mix64(rng);
            *w = rng | mix64(rng ^ 1);
        }
        let s = BlockLayout::Salted;
        assert_eq!(
            block.check(h, 8, s, 0),
            block.check_scalar(h, 8, s, 0),
            "key={i}"
        );
        let (mut a, mut b) = (block, block);
        assert_eq!(a.insert(h, 8, s, 0), b.insert_scalar(h, 8, s, 0), "key={i}");
        assert_eq!(a, b);
        assert!(a.check(h, 8, s, 0));
        // every kernel the CPU has, not only the one the dispatch above takes
        #[cfg(target_arch = "x86_64")]
        {
            let want = block.check_scalar(h, 8, s, 0);
            if crate::simd::avx2() {
                let mut c = block;
                // SAFETY: the CPU has AVX2 (checked), the only feature these enable.
                unsafe {
                    assert_eq!(x86::check_salted_avx2(&block.0, h), want, "key={i}");
                    assert_eq!(x86::insert_salted_avx2(&mut c.0, h), !want, "key={i}");
                }
                assert_eq!(c, b);
            }
            if crate::simd::avx512() {
                let mut c = block;
                // SAFETY: the CPU has AVX-512F and AVX2 (checked), the features these enable.
                unsafe {
                    assert_eq!(x86::check_salted_avx512(&block.0, h), want, "key={i}");
                    assert_eq!(x86::insert_salted_avx512(&mut c.0, h), !want, "key={i}");
                }
                assert_eq!(c, b);
            }
        }
        if i < 300 {
            let mut g = BlockedBloomFilter::try_with_salted(97).unwrap();
            assert!(g.insert(&i));
            let at = block_start(h, 97);
            let mut want = vec![0u64; 97 * BLOCK_WORDS];
            want[at..at + BLOCK_WORDS].copy_from_slice(&reference_salted(h));
            assert_eq!(g.as_words(), &want[..], "key={i}");
            f.insert_hashed(h);
        }
    }
    let keys: Vec<u64> = (0..300).collect();
    assert_eq!(f.count_batch(&keys), 300);
    assert!((0..300u64).all(|i| f.contains(&i)));
    let g = BlockedBloomFilter::from_bytes(&f.to_bytes()).unwrap();
    assert_eq!(g.layout(), BlockLayout::Salted);
    assert_eq!(g.hasher(), &hasher);
    assert_eq!(f, g);
}

/// Property: whatever the keys (random byte strings of any length) and the hasher (default,
/// seeded, keyed), the salted layouts (512- and 256-bit) never forget an inserted key, on
/// every path.
#[test]
fn salted_has_no_false_negatives() {
    use rand::{rngs::StdRng, Rng, SeedableRng};
    let mut rng = StdRng::seed_from_u64(31);
    for (layout, hasher) in [BlockLayout::Salted, BlockLayout::Salted256]
        .into_iter()
        .flat_map(|l| {
            [
                KeyHasher::new(),
                KeyHasher::with_seed(5),
                KeyHasher::with_secret(0x005E_C2E7),
            ]
            .map(|h| (l, h))
        })
    {
        for n in [1usize, 10, 1000, 20_000] {
            let keys: Vec<Vec<u8>> = (0..n)
                .map(|_| {
                    let len = rng.gen_range(0..300);
                    (0..len).map(|_| rng.gen()).collect()
                })
                .collect();
            // sized for a tenth of the keys: overfull, so blocks collide often
            let mut f = BlockedBloomFilter::builder()
                .capacity((n as u64 / 10).max(1))
                .fpr(0.01)
                .hasher(hasher)
                .layout(layout)
                .try_build()
                .unwrap();
            assert_eq!(f.layout(), layout);
            let mut g = f.clone();
            for k in &keys {
                f.insert(k);
            }
            g.extend(keys.iter());
            assert_eq!(f, g);
            assert!(keys.iter().all(|k| f.contains(k)), "{layout:?} n={n}");
            assert_eq!(f.count_batch(&keys), n);
            let hashes: Vec<Hashed> = keys.iter().map(|k| f.hasher().hash(k)).collect();
            assert!(hashes.iter().all(|h| f.contains_hashed(*h)));
            let back = BlockedBloomFilter::from_bytes(&f.to_bytes()).unwrap();
            assert!(keys.iter().all(|k| back.contains(k)));
            let atomic = f.clone().into_atomic();
            assert!(hashes.iter().all(|h| atomic.contains_hashed(*h)));
        }
    }
}

#[cfg(feature = "mmap")]
/// A sectors file (kind 20) whose stored k is not 8 is refused on load, with an error, not
/// read as something else; the same k in a positions file (kind 3) is a valid shape.
/// The fused AVX2 single-key and batched paths (taken on CPUs with AVX2 for sectors
/// filters with the default hasher) set the same bits and give the same answers as the
/// portable per-hash path, including on a memory-mapped filter, whose first insert takes the
/// portable path (copying the map) and later ones the fused path.
#[test]
fn fused_paths_equal_portable_paths() {
    let keyed = KeyHasher::keyed().unwrap();
    let layouts = [
        BlockLayout::Sectors,
        BlockLayout::Salted,
        BlockLayout::Salted256,
    ];
    for (layout, given) in layouts
        .into_iter()
        .flat_map(|l| [KeyHasher::new(), KeyHasher::with_seed(77), keyed].map(|h| (l, h)))
    {
        let build = || {
            BlockedBloomFilter::builder()
                .capacity(4000)
                .fpr(0.01)
                .hasher(given)
                .layout(layout)
                .try_build()
                .unwrap()
        };
        let (mut fused, mut portable, mut extended) = (build(), build(), build());
        let mut hashed = build(); // inserts through `insert_hashed`, on the fused path
        let mut pipelined = build(); // through `insert_pipelined` of the hashes
                                     // the reference takes the layout-generic path for every call, hashed ones included
        (portable.read, portable.write) = (Fused::No, Fused::No);
        assert_eq!(fused.layout(), layout);
        // the salted layout hashes with xxh3-64 of the same seed (keyed: SipHash as given)
        let hasher = *fused.hasher();
        use crate::hash::HashAlgorithm as A;
        let want = match (layout, given.algorithm()) {
            (BlockLayout::Salted | BlockLayout::Salted256, A::Xxh3_128) => A::Xxh3_64,
            (_, a) => a,
        };
        assert_eq!((hasher.algorithm(), hasher.seed()), (want, given.seed()));
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            fused.read != Fused::No,
            matches!(want, A::Xxh3_128 | A::Xxh3_64) && crate::simd::avx2()
        );
        // a salted filter of another seed than 0 takes the seeded path (its hash differs)
        #[cfg(target_arch = "x86_64")]
        if want == A::Xxh3_64 && crate::simd::avx2() {
            let seeded = !hasher.seed_is_zero();
            use Fused as F;
            let seeded_paths = [F::SaltedSeeded, F::SaltedWideSeeded, F::Salted256Seeded];
            let unseeded_paths = [F::Salted, F::SaltedWide, F::Salted256];
            assert_eq!(seeded_paths.contains(&fused.read), seeded);
            assert_eq!(unseeded_paths.contains(&fused.read), !seeded);
            // the 512-bit layout's AVX-512 kernels exactly where the CPU has AVX-512
            if layout == BlockLayout::Salted {
                let wide = matches!(fused.read, F::SaltedWide | F::SaltedWideSeeded);
                assert_eq!(wide, crate::simd::avx512());
            }
        }
        let keys: Vec<String> = (0..6000u32).map(|i| format!("key-{i}")).collect();
        for k in &keys[..3000] {
            let h = hasher.hash(k);
            let new = portable.insert_hashed(h);
            assert_eq!(fused.insert(k), new, "{k}");
            assert_eq!(hashed.insert_hashed(h), new, "{k}");
        }
        extended.extend(keys[..3000].iter());
        pipelined.insert_pipelined(keys[..3000].iter().map(|k| hasher.hash(k)));
        assert_eq!(fused, portable);
        assert_eq!(extended, portable);
        assert_eq!(extended.len(), portable.len());
        assert_eq!(pipelined, portable);
        assert_eq!(pipelined.len(), portable.len());
        assert_eq!(fused.len(), portable.len());
        assert_eq!(hashed, portable);
        assert_eq!(hashed.len(), portable.len());

        // a mapped copy: first insert copies the map, then everything matches
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bloom");
        fused.save(&path).unwrap();
        let mut mapped = BlockedBloomFilter::open_mmap(&path, format::Verify::Checksum).unwrap();
        assert!(mapped.is_mapped());
        assert_eq!(mapped.write, Fused::No);
        for k in &keys[3000..3600] {
            let h = hasher.hash(k);
            let new = portable.insert_hashed(h);
            assert_eq!(fused.insert(k), new, "{k}");
            assert_eq!(mapped.insert(k), new, "{k}");
        }
        assert!(!mapped.is_mapped());
        assert_eq!(mapped.write, fused.write);
        assert_eq!(mapped, portable);
        assert_eq!(fused, portable);

        // queries: present, absent and false-positive keys all agree across the paths
        let probe: Vec<String> = (0..20_000u32).map(|i| format!("key-{i}")).collect();
        let mut batch = vec![false; probe.len()];
        fused.contains_batch(&probe, &mut batch).unwrap();
        let hashes: Vec<Hashed> = probe.iter().map(|k| hasher.hash(k)).collect();
        let (mut pre_fused, mut pre_portable) =
            (vec![false; probe.len()], vec![false; probe.len()]);
        fused
            .contains_hashed_batch(&hashes, &mut pre_fused)
            .unwrap();
        portable
            .contains_hashed_batch(&hashes, &mut pre_portable)
            .unwrap();
        assert!(fused
            .contains_hashed_batch(&hashes, &mut [false; 2])
            .is_err());
        let mut hits = 0;
        for (i, (k, &b)) in probe.iter().zip(&batch).enumerate() {
            let want = portable.contains_hashed(hasher.hash(k));
            assert_eq!(fused.contains(k), want, "{k}");
            assert_eq!(fused.contains_hashed(hasher.hash(k)), want, "{k}");
            assert_eq!(b, want, "{k}");
            assert_eq!((pre_fused[i], pre_portable[i]), (want, want), "{k}");
            hits += usize::from(want);
        }
        assert_eq!(fused.count_batch(&probe), hits);
        // batches shorter than the pipeline's distance
        for n in [0, 1, BATCH_AHEAD - 1, BATCH_AHEAD, BATCH_AHEAD + 1] {
            let mut short = vec![false; n];
            fused
                .contains_batch(&probe[3590..3590 + n], &mut short)
                .unwrap();
            assert_eq!(short, batch[3590..3590 + n], "{n} keys");
        }
        // every inserted key, plus false positives among the 16,400 absent ones (~1%)
        assert!((3600..3600 + 16_400 / 20).contains(&hits), "hits {hits}");
    }
}

#[test]
fn sectors_file_with_another_k_is_refused() {
    // the kind-specific parameters start right after the 72-byte fixed header:
    // blocks (u64), then k (u32)
    let with_k = |bytes: &[u8], k: u32| {
        let mut b = bytes.to_vec();
        b[80..84].copy_from_slice(&k.to_le_bytes());
        let body = b.len() - 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&b[..body]);
        b[body..].copy_from_slice(&sum.to_le_bytes());
        b
    };
    let sectors = BlockedBloomFilter::try_with_sectors(4).unwrap().to_bytes();
    assert!(BlockedBloomFilter::from_bytes(&with_k(&sectors, 8)).is_ok());
    let e = BlockedBloomFilter::from_bytes(&with_k(&sectors, 7)).unwrap_err();
    assert!(e.to_string().contains("layout=sectors"), "{e}");
    assert!(crate::any::filter::AnyFilter::from_bytes(&with_k(&sectors, 7)).is_err());
    let positions = BlockedBloomFilter::try_with_shape(4, 8).unwrap().to_bytes();
    let p7 = BlockedBloomFilter::from_bytes(&with_k(&positions, 7)).unwrap();
    assert_eq!((p7.layout(), p7.hashes()), (BlockLayout::Positions, 7));
}

#[test]
fn automatic_layout_choice() {
    // salted where sectors cost at most SECTORS_MAX_EXTRA more memory, with the sectors'
    // block count, hashed with xxh3-64 ...
    let f = BlockedBloomFilter::try_new(100_000, 0.01).unwrap();
    assert_eq!(f.layout(), BlockLayout::Salted);
    assert_eq!(f.hasher().algorithm(), crate::hash::HashAlgorithm::Xxh3_64);
    let best = params::blocked_shape(100_000, 0.01, BLOCK_BITS).unwrap();
    assert!(f.blocks() as f64 <= best.blocks as f64 * SECTORS_MAX_EXTRA);
    let sectors = BlockedBloomFilter::builder()
        .capacity(100_000)
        .fpr(0.01)
        .layout(BlockLayout::Sectors)
        .try_build()
        .unwrap();
    assert_eq!(f.blocks(), sectors.blocks());
    assert_eq!(sectors.hasher(), &KeyHasher::new());
    // ... sectors with a hasher the salted layout does not take (Parquet's xxh64) ...
    let p = BlockedBloomFilter::builder()
        .capacity(100_000)
        .fpr(0.01)
        .hasher(KeyHasher::parquet())
        .try_build()
        .unwrap();
    assert_eq!(p.layout(), BlockLayout::Sectors);
    let e = BlockedBloomFilter::builder()
        .capacity(100_000)
        .fpr(0.01)
        .hasher(KeyHasher::parquet())
        .layout(BlockLayout::Salted)
        .try_build();
    assert!(e.unwrap_err().to_string().contains("salted"));
    // ... positions where they would cost more (10%: k = 8 is far from optimal) ...
    let f = BlockedBloomFilter::try_new(100_000, 0.1).unwrap();
    assert_eq!(f.layout(), BlockLayout::Positions);
    // ... and whenever the caller fixes k or the bits, or forces a layout
    let f = BlockedBloomFilter::builder()
        .capacity(100_000)
        .fpr(0.01)
        .hashes(6)
        .try_build();
    assert_eq!(f.unwrap().layout(), BlockLayout::Positions);
    let f = BlockedBloomFilter::builder()
        .bits(1 << 20)
        .hashes(6)
        .try_build()
        .unwrap();
    assert_eq!(f.layout(), BlockLayout::Positions);
    let f = BlockedBloomFilter::builder()
        .capacity(100_000)
        .fpr(0.1)
        .layout(BlockLayout::Sectors)
        .try_build()
        .unwrap();
    assert_eq!(f.layout(), BlockLayout::Sectors);
    assert!(params::fpr_sectors(100_000, f.blocks()) <= 0.1);
    let e = BlockedBloomFilter::builder()
        .capacity(10)
        .fpr(0.1)
        .hashes(3)
        .layout(BlockLayout::Sectors)
        .try_build();
    assert!(e.is_err());
    // no two layouts merge
    let mut a = BlockedBloomFilter::try_with_sectors(8).unwrap();
    let b = BlockedBloomFilter::try_with_shape(8, 8).unwrap();
    assert!(a.union_with(&b).is_err());
    let mut c = BlockedBloomFilter::try_with_salted(8).unwrap();
    assert!(c.union_with(&a).is_err() && c.union_with(&b).is_err());
}

#[cfg(feature = "rayon")]
#[test]
fn par_insert_hashed_equals_sequential() {
    let hasher = KeyHasher::new();
    let hashes: Vec<Hashed> = (0..60_000u64).map(|i| hasher.hash(&i)).collect();
    for blocks in [1u64, 3, 1000, 1171] {
        let mut a = BlockedBloomFilter::try_with_shape(blocks, 6).unwrap();
        let mut b = a.clone();
        for h in &hashes {
            a.insert_hashed(*h);
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        pool.install(|| b.par_insert_hashed(&hashes));
        assert_eq!(a.as_words(), b.as_words(), "blocks={blocks}");
        assert!(b.len() <= 60_000 && b.len() * 10 >= a.len() * 9);
    }
}

#[cfg(feature = "rayon")]
#[test]
fn par_insert_bucketed_equals_sequential_items_included() {
    let hasher = KeyHasher::new();
    // duplicates and near-full blocks: the item count depends on the insert order
    let hashes: Vec<Hashed> = (0..40_000u64).map(|i| hasher.hash(&(i % 25_000))).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    for blocks in [1u64, 3, 200, 1171] {
        let mut a = BlockedBloomFilter::try_with_shape(blocks, 6).unwrap();
        let mut b = a.clone();
        for h in &hashes {
            a.insert_hashed(*h);
        }
        let regions = b.insert_regions(5);
        assert!(regions.count() >= 1 && regions.count() <= 5);
        // three batches in input order, each bucketed by region
        let batches: Vec<Vec<Vec<Hashed>>> = hashes
            .chunks(15_000)
            .map(|c| {
                let mut out = vec![Vec::new(); regions.count()];
                for h in c {
                    out[regions.region_of(*h)].push(*h);
                }
                out
            })
            .collect();
        let new = pool.install(|| b.par_insert_bucketed(&regions, &batches));
        assert_eq!(a, b, "blocks={blocks}");
        assert_eq!(new, a.len());
    }
}

#[test]
fn region_of_is_the_block_index_divided_by_the_region_size() {
    let hasher = KeyHasher::new();
    let hashes: Vec<Hashed> = (0..20_000u64).map(|i| hasher.hash(&i)).collect();
    // shapes without building filters of those sizes: only `blocks` matters here
    let mut shape = BlockedBloomFilter::try_with_shape(1, 6).unwrap();
    let mut edges = vec![
        Hashed { lo: 0, hi: 0 },
        Hashed {
            lo: u64::MAX,
            hi: 0,
        },
        Hashed { lo: 1 << 63, hi: 0 },
    ];
    edges.extend(hashes);
    for blocks in [
        1u64,
        2,
        3,
        7,
        1000,
        1171,
        65_537,
        (1 << 32) - 1,
        1 << 32,
        u64::MAX / 64,
    ] {
        shape.blocks = blocks;
        for n in [1usize, 2, 3, 4, 7, 8, 13, 64] {
            let r = shape.insert_regions(n);
            assert_eq!(r.magic != 0, blocks < 1 << 32 && r.per_region > 1);
            for &h in &edges {
                let want = (block_index(h, blocks) as u64 / r.per_region) as usize;
                assert_eq!(r.region_of(h), want, "blocks={blocks} n={n}");
                assert!(want < r.count());
            }
        }
    }
}

#[cfg(feature = "rayon")]
#[test]
fn par_insert_bucketed_inserts_misplaced_hashes() {
    let hasher = KeyHasher::new();
    let hashes: Vec<Hashed> = (0..5_000u64).map(|i| hasher.hash(&i)).collect();
    let mut a = BlockedBloomFilter::try_with_shape(100, 6).unwrap();
    let mut b = a.clone();
    a.insert_pipelined(hashes.iter().copied());
    // everything in region 0's list, plus lists beyond the region count
    let regions = b.insert_regions(4);
    let batch = vec![
        hashes[..4000].to_vec(),
        vec![],
        vec![],
        vec![],
        hashes[4000..].to_vec(),
    ];
    b.par_insert_bucketed(&regions, &[batch]);
    assert_eq!(a.as_words(), b.as_words());
    // a split made for another shape
    let mut c = BlockedBloomFilter::try_with_shape(100, 6).unwrap();
    let other = BlockedBloomFilter::try_with_shape(7, 6)
        .unwrap()
        .insert_regions(4);
    c.par_insert_bucketed(&other, &[vec![hashes.clone()]]);
    assert_eq!(a, c);
}

#[cfg(feature = "rayon")]
#[test]
fn parallel_build_equals_sequential() {
    let keys: Vec<u64> = (0..50_000).collect();
    let mut a = BlockedBloomFilter::try_new(50_000, 0.01).unwrap();
    let mut b = a.clone();
    a.extend(keys.iter().copied());
    b.par_insert_all(&keys);
    assert_eq!(a.as_words(), b.as_words());
}

#[test]
fn atomic_concurrent_inserts() {
    let f = AtomicBlockedBloomFilter::try_new(20_000, 0.01).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let f = &f;
            s.spawn(move || {
                for i in 0..5000u64 {
                    f.insert(&(t * 5000 + i));
                }
            });
        }
    });
    assert!((0..20_000u64).all(|i| f.contains(&i)));
    let plain = f.into_filter();
    assert!((0..20_000u64).all(|i| plain.contains(&i)));
}

#[test]
fn fold_equals_half() {
    let mut big = BlockedBloomFilter::try_with_shape(64, 6).unwrap();
    let mut half = BlockedBloomFilter::try_with_shape(32, 6).unwrap();
    let mut big_s = BlockedBloomFilter::try_with_sectors(64).unwrap();
    let mut half_s = BlockedBloomFilter::try_with_sectors(32).unwrap();
    for i in 0..500u32 {
        big.insert(&i);
        half.insert(&i);
        big_s.insert(&i);
        half_s.insert(&i);
    }
    assert_eq!(big.fold().unwrap().as_words(), half.as_words());
    assert_eq!(big_s.fold().unwrap(), half_s);
    let mut big_t = BlockedBloomFilter::try_with_salted(64).unwrap();
    let mut half_t = BlockedBloomFilter::try_with_salted(32).unwrap();
    for i in 0..500u32 {
        big_t.insert(&i);
        half_t.insert(&i);
    }
    assert_eq!(big_t.fold().unwrap(), half_t);
}

/// Any even block count halves into exactly the fresh filter of half the blocks, in both
/// layouts; an odd count is refused with the reason.
#[test]
fn fold_any_even_block_count() {
    for blocks in [2u64, 6, 38, 19_726] {
        let mut big = BlockedBloomFilter::try_with_shape(blocks, 6).unwrap();
        let mut half = BlockedBloomFilter::try_with_shape(blocks / 2, 6).unwrap();
        let mut big_s = BlockedBloomFilter::try_with_sectors(blocks).unwrap();
        let mut half_s = BlockedBloomFilter::try_with_sectors(blocks / 2).unwrap();
        for i in 0..blocks * 20 {
            big.insert(&i);
            half.insert(&i);
            big_s.insert(&i);
            half_s.insert(&i);
        }
        assert_eq!(big.fold().unwrap().as_words(), half.as_words(), "{blocks}");
        assert_eq!(
            big_s.fold().unwrap().as_words(),
            half_s.as_words(),
            "{blocks}"
        );
    }
    for blocks in [1u64, 3, 19_727] {
        let e = BlockedBloomFilter::try_with_shape(blocks, 6)
            .unwrap()
            .fold();
        assert!(e.unwrap_err().to_string().contains("even block count"));
    }
}

/// Sized by capacity and rate, the block count folds several times (19,726 blocks, the
/// shape of 100,000 keys at 1e-4, becomes 64·309) at under 0.4 % more memory.
#[test]
fn sized_filters_fold() {
    for (n, p) in [
        (2000u64, 0.01),
        (100_000, 0.01),
        (1_000_000, 1e-4),
        (1_000_000, 0.1),
    ] {
        let f = BlockedBloomFilter::try_new(n, p).unwrap();
        let unrounded = match f.layout() {
            BlockLayout::Sectors | BlockLayout::Salted => params::sectors_blocks(n, p).unwrap(),
            BlockLayout::Salted256 => params::salted256_lines(n, p).unwrap(),
            BlockLayout::Positions => params::blocked_shape(n, p, BLOCK_BITS).unwrap().blocks,
        };
        assert!(f.blocks() >= unrounded);
        assert!((f.blocks() - unrounded) as f64 <= (unrounded as f64 * 0.004).max(1.0));
        let times = (f.blocks() / 256).max(2).ilog2();
        let mut g = f.clone();
        for _ in 0..times {
            g = g.fold().unwrap();
        }
        assert_eq!(g.blocks() << times, f.blocks(), "n={n} p={p}");
    }
    assert_eq!(params::foldable_blocks(19_726), 19_776);
    assert_eq!(params::foldable_blocks(3), 4);
    assert_eq!(params::foldable_blocks(1), 1);
}

/// The salted-256 layout's bits, written out plainly for a filter of `lines` lines: the
/// 256-bit block `⌊lo · 2·lines / 2⁶⁴⌋` (words `4b..4b+4`), and in its 32-bit lane j (the low
/// or high half of word `4b + j/2`) bit `((lo mod 2³²) · salt_j mod 2³²) >> 27`, with the
/// eight salts of the Parquet specification.
fn reference_salted256(h: Hashed, lines: u64) -> Vec<u64> {
    let salts: [u64; 8] = [
        0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947,
        0x5c6bfb31,
    ];
    let mut words = vec![0u64; lines as usize * BLOCK_WORDS];
    let b = ((u128::from(h.lo) * u128::from(2 * lines)) >> 64) as usize;
    for (j, salt) in salts.into_iter().enumerate() {
        let bit = (((h.lo & 0xFFFF_FFFF) * salt) & 0xFFFF_FFFF) >> 27;
        words[4 * b + j / 2] |= 1u64 << (32 * (j as u64 % 2) + bit);
    }
    words
}

/// Every path of the salted-256 layout (portable and AVX2 kernels, single keys, pre-hashed,
/// batched, atomic, regions) sets and tests exactly the reference bits.
#[test]
fn salted256_matches_the_reference_mapping_on_every_path() {
    let lines = 97;
    let mut f = BlockedBloomFilter::try_with_salted256(lines).unwrap();
    let hasher = *f.hasher();
    assert_eq!(hasher.algorithm(), crate::hash::HashAlgorithm::Xxh3_64);
    assert_eq!(
        (f.layout(), f.hashes(), f.blocks()),
        (BlockLayout::Salted256, 8, lines)
    );
    assert_eq!(f.bit_len(), lines * 512);
    let mut want_all = vec![0u64; lines as usize * BLOCK_WORDS];
    for i in 0..400u64 {
        let h = hasher.hash(&i);
        assert_eq!(h.lo, xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes()));
        let want = reference_salted256(h, lines);
        // one key alone: exactly its bits, on the single-key and pre-hashed paths
        let mut g = BlockedBloomFilter::try_with_salted256(lines).unwrap();
        assert!(g.insert(&i));
        assert_eq!(g.as_words(), &want[..], "key={i}");
        let mut g2 = BlockedBloomFilter::try_with_salted256(lines).unwrap();
        assert!(g2.insert_hashed(h));
        assert_eq!(g2.as_words(), &want[..], "key={i}");
        // the line mask of the place
        let (at, half) = place(h, lines, BlockLayout::Salted256);
        assert_eq!(
            &Block::mask(h, 8, BlockLayout::Salted256, half).0[..],
            &want[at..at + 8]
        );
        for (a, w) in want_all.iter_mut().zip(&want) {
            *a |= w;
        }
        f.insert(&i);
    }
    assert_eq!(f.as_words(), &want_all[..]);
    let keys: Vec<u64> = (0..400).collect();
    assert_eq!(f.count_batch(&keys), 400);
    let atomic = BlockedBloomFilter::try_with_salted256(lines)
        .unwrap()
        .into_atomic();
    for k in &keys {
        atomic.insert(k);
    }
    assert_eq!(atomic.into_filter(), f);
    let mut r = BlockedBloomFilter::try_with_salted256(lines).unwrap();
    let hashes: Vec<Hashed> = keys.iter().map(|k| hasher.hash(k)).collect();
    let regions = r.insert_regions(3);
    r.fill_regions(&regions, |ws| {
        for h in &hashes {
            ws[regions.region_of(*h)].insert_batch(&[*h]);
        }
    });
    assert_eq!(r, f);
    let g = BlockedBloomFilter::from_bytes(&f.to_bytes()).unwrap();
    assert_eq!(g.layout(), BlockLayout::Salted256);
    assert_eq!(f, g);
}

/// The key's line under the salted-256 layout is the line of every layout (`block_index`),
/// so prefetches, regions and sweeps that work by line find its block.
#[test]
fn salted256_block_lies_in_the_line_of_every_layout() {
    let hasher = KeyHasher::new().to_xxh3_64();
    for lines in [1u64, 2, 3, 97, 1 << 20, (1 << 31) - 1] {
        for i in 0..2000u64 {
            let h = hasher.hash(&i);
            let (at, half) = place(h, lines, BlockLayout::Salted256);
            assert_eq!(at, block_start(h, lines), "lines={lines}");
            assert!(half < 2);
        }
    }
}

/// Halving a salted-256 filter gives exactly the fresh filter of half the lines built from the
/// same keys (its 256-bit blocks 2b and 2b+1 OR into block b), and streamed folds of a file
/// agree with it.
#[test]
fn salted256_folds_exactly() {
    for lines in [2u64, 6, 64, 1000] {
        let mut big = BlockedBloomFilter::try_with_salted256(lines).unwrap();
        let mut half = BlockedBloomFilter::try_with_salted256(lines / 2).unwrap();
        for i in 0..lines * 30 {
            big.insert(&i);
            half.insert(&i);
        }
        assert_eq!(
            big.fold().unwrap().as_words(),
            half.as_words(),
            "lines={lines}"
        );
    }
    #[cfg(feature = "mmap")]
    {
        use crate::any::filter::AnyFilter;
        let dir = tempfile::tempdir().unwrap();
        let mut f = BlockedBloomFilter::try_with_salted256(1 << 12).unwrap();
        for i in 0..50_000u64 {
            f.insert(&i);
        }
        let path = dir.path().join("f.bloom");
        f.save(&path).unwrap();
        let file = crate::io::mapped::MappedFile::open(&path).unwrap();
        for times in [1u32, 3] {
            let out = dir.path().join(format!("f{times}.bloom"));
            AnyFilter::fold_file(&file, times, &out, format::Verify::Checksum, &mut |_| {})
                .unwrap();
            let mut want = f.clone();
            for _ in 0..times {
                want = want.fold().unwrap();
            }
            assert_eq!(
                std::fs::read(&out).unwrap(),
                want.to_bytes(),
                "times={times}"
            );
        }
    }
}

/// The exact rate of a salted-256 filter's contents (mean over its 256-bit blocks of the
/// product of its eight lanes' fill) equals the rate counted directly from the words, and a
/// filter filled to capacity has a current rate near its model's.
#[test]
fn salted256_current_rate_counts_lanes() {
    let mut f = BlockedBloomFilter::builder()
        .capacity(20_000)
        .fpr(0.01)
        .layout(BlockLayout::Salted256)
        .try_build()
        .unwrap();
    for i in 0..20_000u64 {
        f.insert(&i);
    }
    let direct: f64 = f
        .as_words()
        .chunks_exact(4)
        .map(|b| {
            (0..8)
                .map(|j| f64::from(((b[j / 2] >> (32 * (j % 2))) as u32).count_ones()) / 32.0)
                .product::<f64>()
        })
        .sum::<f64>()
        / (2 * f.blocks()) as f64;
    let counted = f.current_fpr();
    assert!(
        (counted - direct).abs() <= 1e-12 * direct,
        "{counted} {direct}"
    );
    let model = params::fpr_salted256(20_000, f.blocks());
    assert!(model <= 0.01);
    // the contents' rate is the model's up to the spread of 20,000 keys' blocks
    assert!((counted / model - 1.0).abs() < 0.1, "{counted} vs {model}");
}
