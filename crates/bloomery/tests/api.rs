//! The public API's promises: keyed mode, parameter validation on every builder, corruption
//! tolerance, estimates, and batched queries.

use std::time::{Duration, Instant};

use bloomery::hashing::SeedKind;
use bloomery::prelude::*;
use bloomery::{CountMinSketch, CuckooFilter, Error, Incompatibility, Kind, XorFilter};

// ---------------------------------------------------------------------------------------------
// Keyed mode
// ---------------------------------------------------------------------------------------------

#[test]
fn keyed_filters_differ_and_do_not_merge() {
    let make = || {
        BlockedBloomFilter::builder()
            .bits(8192)
            .hashes(7)
            .keyed()
            .unwrap()
            .try_build()
            .unwrap()
    };
    let (mut a, mut b) = (make(), make());
    assert_eq!(a.hasher().seed_kind(), SeedKind::Keyed);
    assert_ne!(a.hasher(), b.hasher(), "fresh secret per filter");
    for i in 0..200u32 {
        a.insert(&i);
        b.insert(&i);
    }
    assert_ne!(
        a.as_words(),
        b.as_words(),
        "same keys, different bits under different secrets"
    );
    assert!(matches!(
        a.union_with(&b),
        Err(Error::Incompatible(Incompatibility::Hashing))
    ));
    assert!(matches!(
        a.intersect_with(&b),
        Err(Error::Incompatible(Incompatibility::Hashing))
    ));
    assert!(matches!(
        a.estimate_union(&b),
        Err(Error::Incompatible(Incompatibility::Hashing))
    ));

    // keyed vs. default hasher, every kind
    let mut c = BloomFilter::builder()
        .bits(1000)
        .hashes(3)
        .keyed()
        .unwrap()
        .try_build()
        .unwrap();
    let d = BloomFilter::builder()
        .bits(1000)
        .hashes(3)
        .try_build()
        .unwrap();
    assert!(matches!(
        c.union_with(&d),
        Err(Error::Incompatible(Incompatibility::Hashing))
    ));
    let mut c = ScalableBloomFilter::builder()
        .capacity(100)
        .fpr(0.01)
        .keyed()
        .unwrap()
        .try_build()
        .unwrap();
    let d = ScalableBloomFilter::builder()
        .capacity(100)
        .fpr(0.01)
        .try_build()
        .unwrap();
    assert!(matches!(
        c.union_with(&d),
        Err(Error::Incompatible(Incompatibility::Hashing))
    ));

    // the same secret does merge
    let secret = a.hasher().seed();
    let mut same = BlockedBloomFilter::builder()
        .bits(8192)
        .hashes(7)
        .hasher(KeyHasher::with_secret(secret))
        .try_build()
        .unwrap();
    same.union_with(&a).unwrap();
    assert_eq!(same.as_words(), a.as_words());
}

#[test]
fn keyed_save_load_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = PartitionedBloomFilter::builder()
        .capacity(500)
        .fpr(0.01)
        .keyed()
        .unwrap()
        .try_build()
        .unwrap();
    for i in 0..500u32 {
        f.insert(&i);
    }
    let path = dir.path().join("keyed.bloom");
    f.save(&path).unwrap();
    let g = PartitionedBloomFilter::load(&path).unwrap();
    assert_eq!(g, f);
    assert_eq!(g.hasher(), f.hasher(), "the secret is stored");
    assert!((0..500u32).all(|i| g.contains(&i)));
    let any = AnyFilter::load(&path).unwrap();
    assert_eq!(any.info().seed_kind, "keyed");
    assert_eq!(any.info().hash, "siphash13-128");
}

// ---------------------------------------------------------------------------------------------
// Parameter validation
// ---------------------------------------------------------------------------------------------

fn invalid<T: std::fmt::Debug>(r: bloomery::Result<T>, what: &str) {
    match r {
        Err(Error::InvalidParameter { .. }) => {}
        other => panic!("{what}: expected InvalidParameter, got {other:?}"),
    }
}

fn too_large<T: std::fmt::Debug>(r: bloomery::Result<T>, what: &str) {
    match r {
        Err(Error::TooLarge { .. }) => {}
        other => panic!("{what}: expected TooLarge, got {other:?}"),
    }
}

const BAD_FPR: [f64; 7] = [
    0.0,
    1.0,
    -1.0,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    1e-300,
];

/// Runs the same bad-parameter checks on one structure's builder.
macro_rules! check_builder {
    ($t:ty, $name:expr, max_k = $max_k:expr) => {{
        let name = $name;
        let b = || <$t>::builder();
        invalid(b().try_build(), &format!("{name}: nothing given"));
        invalid(
            b().capacity(0).fpr(0.01).try_build(),
            &format!("{name}: n = 0"),
        );
        invalid(b().capacity(100).try_build(), &format!("{name}: no fpr"));
        invalid(b().fpr(0.01).try_build(), &format!("{name}: no capacity"));
        for p in BAD_FPR {
            invalid(
                b().capacity(100).fpr(p).try_build(),
                &format!("{name}: fpr {p}"),
            );
        }
        if let Some(max_k) = $max_k {
            invalid(
                b().capacity(100).fpr(0.01).hashes(0).try_build(),
                &format!("{name}: k = 0"),
            );
            invalid(
                b().capacity(100).fpr(0.01).hashes(max_k + 1).try_build(),
                &format!("{name}: k too large"),
            );
            invalid(
                b().capacity(100).fpr(0.01).hashes(u32::MAX).try_build(),
                &format!("{name}: k = MAX"),
            );
            invalid(
                b().bits(1000).hashes(0).try_build(),
                &format!("{name}: bits, k = 0"),
            );
            invalid(
                b().bits(0).hashes(3).try_build(),
                &format!("{name}: bits = 0"),
            );
            invalid(
                b().bits(0).capacity(10).try_build(),
                &format!("{name}: bits = 0 with capacity"),
            );
        }
        // capacity too large for the limit: refused up front, quickly
        let t = Instant::now();
        too_large(
            b().capacity(u64::MAX).fpr(0.01).try_build(),
            &format!("{name}: n = MAX"),
        );
        too_large(
            b().capacity(1 << 40).fpr(1e-12).try_build(),
            &format!("{name}: 2^40 at 1e-12"),
        );
        too_large(
            b().capacity(10_000_000)
                .fpr(0.01)
                .max_bytes(1 << 20)
                .try_build(),
            &format!("{name}: over max_bytes"),
        );
        if $max_k.is_some() {
            too_large(
                b().capacity(u64::MAX).fpr(0.01).hashes(3).try_build(),
                &format!("{name}: n = MAX, k = 3"),
            );
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{name}: refusing took {:?}",
            t.elapsed()
        );
    }};
}

#[test]
fn every_builder_refuses_bad_parameters() {
    check_builder!(BloomFilter, "classic", max_k = Some(64u32));
    check_builder!(PartitionedBloomFilter, "partitioned", max_k = Some(64u32));
    check_builder!(BlockedBloomFilter, "blocked", max_k = Some(32u32));
    check_builder!(ScalableBloomFilter, "scalable", max_k = None::<u32>);
    check_builder!(SplitBlockBloomFilter, "split-block", max_k = None::<u32>);
    // split-block: k is fixed at 8; zero bits
    invalid(
        SplitBlockBloomFilter::builder()
            .capacity(100)
            .fpr(0.01)
            .hashes(7)
            .try_build(),
        "split k=7",
    );
    invalid(
        SplitBlockBloomFilter::builder().bits(0).try_build(),
        "split bits = 0",
    );
    invalid(SplitBlockBloomFilter::try_with_bytes(0), "split 0 bytes");
    invalid(SplitBlockBloomFilter::try_with_bytes(33), "split 33 bytes");
    // scalable: growth and tightening
    let s = || ScalableBloomFilter::builder().capacity(100).fpr(0.01);
    invalid(s().growth(0).try_build(), "growth 0");
    for r in [0.0, 1.0, -0.5, 2.0, f64::NAN] {
        invalid(s().tightening(r).try_build(), &format!("tightening {r}"));
    }
    // explicit shapes
    invalid(BloomFilter::try_with_shape(0, 3), "classic m = 0");
    invalid(BloomFilter::try_with_shape(100, 0), "classic k = 0");
    invalid(BloomFilter::try_with_shape(100, 65), "classic k = 65");
    invalid(
        PartitionedBloomFilter::try_with_shape(0, 3),
        "partitioned s = 0",
    );
    invalid(
        PartitionedBloomFilter::try_with_shape(10, 0),
        "partitioned k = 0",
    );
    invalid(BlockedBloomFilter::try_with_shape(0, 3), "blocked 0 blocks");
    invalid(BlockedBloomFilter::try_with_shape(4, 0), "blocked k = 0");
    invalid(BlockedBloomFilter::try_with_shape(4, 33), "blocked k = 33");
    too_large(BloomFilter::try_with_shape(u64::MAX, 3), "classic m = MAX");
    too_large(
        BlockedBloomFilter::try_with_shape(1 << 40, 3),
        "blocked 2^40 blocks",
    );
    // AnyFilter builder for every set kind
    for kind in [
        Kind::Classic,
        Kind::Partitioned,
        Kind::Blocked,
        Kind::SplitBlock,
        Kind::Scalable,
    ] {
        invalid(
            AnyFilter::builder(kind).capacity(0).fpr(0.01).try_build(),
            kind.name(),
        );
        invalid(
            AnyFilter::builder(kind)
                .capacity(10)
                .fpr(f64::NAN)
                .try_build(),
            kind.name(),
        );
        too_large(
            AnyFilter::builder(kind)
                .capacity(u64::MAX)
                .fpr(0.01)
                .try_build(),
            kind.name(),
        );
    }
    // non-scaling scalable filter: Full, and the key is still not lost by `insert`
    let mut f = ScalableBloomFilter::builder()
        .capacity(10)
        .fpr(0.01)
        .scaling(false)
        .try_build()
        .unwrap();
    let mut full = false;
    for i in 0..50u32 {
        if let Err(Error::Full { capacity }) = f.try_insert(&i) {
            assert_eq!(capacity, 10);
            full = true;
            f.insert(&i);
        }
    }
    assert!(full);
    assert!((0..50u32).all(|i| f.contains(&i)));
}

// ---------------------------------------------------------------------------------------------
// Corruption tolerance (Salman §3)
// ---------------------------------------------------------------------------------------------

#[test]
fn mark_damaged_keeps_zero_false_negatives() {
    let keys: Vec<u64> = (0..2000).collect();
    let mut fs = vec![
        AnyFilter::Classic(BloomFilter::try_with_shape(20_000, 7).unwrap()),
        AnyFilter::Partitioned(PartitionedBloomFilter::try_with_shape(3001, 7).unwrap()),
        AnyFilter::Blocked(BlockedBloomFilter::try_with_shape(40, 7).unwrap()),
        AnyFilter::SplitBlock(SplitBlockBloomFilter::try_with_bytes(2560).unwrap()),
    ];
    for f in &mut fs {
        for k in &keys {
            f.insert(k).unwrap();
        }
        let bytes = f.info().bits / 8;
        // simulate damage: the region was zeroed on disk; marking it all-ones restores
        // "maybe" for every key mapping there
        let before = f.clone();
        f.mark_damaged(bytes / 3..bytes / 3 + 100).unwrap();
        assert!(f.info().fill_ratio > before.info().fill_ratio);
        assert!(keys.iter().all(|k| f.contains(k)), "{:?}", f.kind());
        assert!(f.info().current_fpr >= before.info().current_fpr);
        // out of range, reversed: typed errors
        assert!(matches!(
            f.mark_damaged(0..bytes + 64),
            Err(Error::InvalidParameter { .. })
        ));
        #[allow(clippy::reversed_empty_ranges)]
        let rev = 10..5;
        assert!(matches!(
            f.mark_damaged(rev),
            Err(Error::InvalidParameter { .. })
        ));
        // whole array damaged: everything answers "maybe", nothing lost
        f.mark_damaged(0..bytes).unwrap();
        assert!(f.contains("never inserted"));
        // the damaged filter still saves and loads
        assert_eq!(&AnyFilter::from_bytes(&f.to_bytes()).unwrap(), f);
    }
    let mut s = AnyFilter::Scalable(ScalableBloomFilter::try_new(10, 0.01).unwrap());
    assert!(matches!(s.mark_damaged(0..1), Err(Error::Unsupported(_))));
}

#[test]
fn partitioned_mark_damaged_keeps_bits_past_m_clear() {
    // 3 slices of 7 bits: m = 21, one word; damaging the whole word must not set bits ≥ 21
    let mut f = PartitionedBloomFilter::try_with_shape(7, 3).unwrap();
    f.mark_damaged(0..8).unwrap();
    assert_eq!(f.count_ones(), 21);
    PartitionedBloomFilter::from_bytes(&f.to_bytes()).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Estimates (Broder & Mitzenmacher §2.1, §2.4)
// ---------------------------------------------------------------------------------------------

/// σ of the zero-count estimator n̂ = −(m/k)·ln(Z/m) by the delta method, with
/// Var(Z) ≤ m·p0·(1−p0) and p0 = e^{−kn/m}: σ ≈ (m/k)·sqrt(m·p0·(1−p0))/(m·p0).
fn sigma_items(n: f64, m: f64, k: f64) -> f64 {
    let p0 = (-k * n / m).exp();
    (m / k) * (m * p0 * (1.0 - p0)).sqrt() / (m * p0)
}

#[test]
fn estimates_on_known_sets() {
    let (m, k) = (200_000u64, 5u32);
    let (a_keys, b_keys) = (0..6000u64, 3000..9000u64); // |A∩B| = 3000, |A∪B| = 9000
    let (mf, kf) = (m as f64, k as f64);
    // A tolerance of 3σ for |A|, |A∪B|; the intersection estimate combines three zero counts,
    // so its error is bounded by the sum of their σ (errors add at most linearly).
    let (s_a, s_u) = (sigma_items(6000.0, mf, kf), sigma_items(9000.0, mf, kf));
    let s_i = 2.0 * s_a + s_u;

    let mut a = BloomFilter::try_with_shape(m, k).unwrap();
    let mut b = a.clone();
    a.extend(a_keys.clone());
    b.extend(b_keys.clone());
    let near = |got: f64, want: f64, tol: f64, what: &str| {
        assert!(
            (got - want).abs() <= tol,
            "{what}: estimated {got}, true {want}, tolerance {tol}"
        );
    };
    near(a.estimated_len(), 6000.0, 3.0 * s_a, "classic |A|");
    near(
        a.estimate_union(&b).unwrap(),
        9000.0,
        3.0 * s_u,
        "classic |A∪B|",
    );
    near(
        a.estimate_intersection(&b).unwrap(),
        3000.0,
        3.0 * s_i,
        "classic |A∩B|",
    );
    let j = a.estimate_jaccard(&b).unwrap();
    near(
        j,
        1.0 / 3.0,
        3.0 * s_i / 9000.0 + 3.0 * s_u * 3000.0 / 9000.0 / 9000.0,
        "classic Jaccard",
    );
    assert_eq!(a.estimate_jaccard(&a).unwrap(), 1.0);

    // partitioned and blocked: the same expected zero count per bit (each probe sets a bit
    // with probability 1/m), slightly larger variance from slice/block structure: 1.5×
    let mut pa = PartitionedBloomFilter::try_with_shape(m / u64::from(k), k).unwrap();
    let mut pb = pa.clone();
    pa.extend(a_keys.clone());
    pb.extend(b_keys.clone());
    near(pa.estimated_len(), 6000.0, 4.5 * s_a, "partitioned |A|");
    near(
        pa.estimate_union(&pb).unwrap(),
        9000.0,
        4.5 * s_u,
        "partitioned |A∪B|",
    );
    near(
        pa.estimate_intersection(&pb).unwrap(),
        3000.0,
        4.5 * s_i,
        "partitioned |A∩B|",
    );

    let mut ba = BlockedBloomFilter::try_with_shape(m / 512, k).unwrap();
    let mut bb = ba.clone();
    ba.extend(a_keys.clone());
    bb.extend(b_keys.clone());
    near(ba.estimated_len(), 6000.0, 4.5 * s_a, "blocked |A|");
    near(
        ba.estimate_union(&bb).unwrap(),
        9000.0,
        4.5 * s_u,
        "blocked |A∪B|",
    );
    near(
        ba.estimate_intersection(&bb).unwrap(),
        3000.0,
        4.5 * s_i,
        "blocked |A∩B|",
    );
    near(
        ba.estimate_jaccard(&bb).unwrap(),
        1.0 / 3.0,
        0.05,
        "blocked Jaccard",
    );

    // disjoint sets: intersection ≈ 0; AnyFilter's overlap estimate agrees
    let mut c = BloomFilter::try_with_shape(m, k).unwrap();
    c.extend(100_000..106_000u64);
    near(
        a.estimate_intersection(&c).unwrap(),
        0.0,
        3.0 * s_i,
        "disjoint |A∩C|",
    );
    let (i, u) = AnyFilter::Classic(a.clone())
        .estimate_overlap(&AnyFilter::Classic(b.clone()))
        .unwrap();
    assert_eq!(
        (i, u),
        (
            a.estimate_intersection(&b).unwrap(),
            a.estimate_union(&b).unwrap()
        )
    );
    // incompatible shapes: typed error
    let other = BloomFilter::try_with_shape(m + 1, k).unwrap();
    assert!(matches!(
        a.estimate_intersection(&other),
        Err(Error::Incompatible(Incompatibility::Shape { .. }))
    ));

    // empty and full filters
    let empty = BloomFilter::try_with_shape(1000, 3).unwrap();
    assert_eq!(empty.estimated_len(), 0.0);
    let mut full = empty.clone();
    full.mark_damaged(0..128).unwrap();
    assert!(full.estimated_len().is_infinite());
    let info = AnyFilter::Classic(full).info();
    assert!(
        info.estimated_items.is_infinite() && info.fill_ratio == 1.0 && info.current_fpr == 1.0
    );
}

#[test]
fn items_and_info_count_distinct_inserts() {
    let mut f = BlockedBloomFilter::try_new(1000, 0.01).unwrap();
    assert!(f.is_empty());
    assert!(f.insert("x"));
    assert!(!f.insert("x"), "a duplicate is not new");
    assert_eq!(f.len(), 1);
    let info = AnyFilter::Blocked(f.clone()).info();
    assert_eq!(
        (info.kind, info.items, info.capacity, info.target_fpr),
        ("blocked", 1, 1000, 0.01)
    );
    assert_eq!(info.layout, Some("salted"));
    assert_eq!(info.bits, f.blocks() * 512);
    assert!(info.lower_bound_bits > 0.0);
}

// ---------------------------------------------------------------------------------------------
// Batched queries
// ---------------------------------------------------------------------------------------------

#[test]
fn batch_queries_equal_contains() {
    let mut f = BlockedBloomFilter::try_new(5000, 0.05).unwrap();
    for i in (0..10_000u64).step_by(2) {
        f.insert(&i);
    }
    // inserted, absent, and lengths that are not multiples of the batch size
    for len in [0usize, 1, 15, 16, 17, 1000, 10_000] {
        let keys: Vec<u64> = (0..len as u64).map(|i| i * 7 % 10_007).collect();
        let mut out = vec![false; len];
        f.contains_batch(&keys, &mut out).unwrap();
        let want: Vec<bool> = keys.iter().map(|k| f.contains(k)).collect();
        assert_eq!(out, want, "len {len}");
        assert_eq!(f.count_batch(&keys), want.iter().filter(|&&b| b).count());
    }
    let keys = ["a", "b", "c"];
    let mut out = vec![true; 3];
    f.contains_batch(&keys, &mut out).unwrap();
    assert_eq!(out, keys.iter().map(|k| f.contains(k)).collect::<Vec<_>>());
    assert!(matches!(
        f.contains_batch(&keys, &mut [false; 2]),
        Err(Error::InvalidParameter { .. })
    ));
}

#[test]
fn classic_mark_damaged_keeps_bits_past_m_clear() {
    // m = 1000 is not a multiple of 64: the last word has 24 bits past m, which must stay
    // clear (a file with them set is refused as inconsistent).
    let mut f = BloomFilter::try_with_shape(1000, 3).unwrap();
    f.mark_damaged(0..128).unwrap();
    assert_eq!(f.count_ones(), 1000);
    assert_eq!(f.fill_ratio(), 1.0);
    assert_eq!(BloomFilter::from_bytes(&f.to_bytes()).unwrap(), f);
}

// ---------------------------------------------------------------------------------------------
// One trait surface: the same operation is the same call
// ---------------------------------------------------------------------------------------------

/// Any structure that holds a set of byte keys, through the one trait.
fn insert_all(set: &mut impl KeySet, keys: &[String]) -> usize {
    keys.iter()
        .filter(|k| set.try_insert_key(k.as_bytes()).unwrap())
        .count()
}

/// The cuckoo, d-left and xor filters answer [`KeySet`] like their own typed calls, and a
/// static xor filter refuses inserts with an error instead of dropping them.
#[test]
fn cuckoo_dleft_and_xor_are_key_sets() {
    let keys: Vec<String> = (0..2000).map(|i| format!("key-{i}")).collect();
    let mut cuckoo = CuckooFilter::try_new(4000).unwrap();
    for k in &keys {
        // new exactly when the filter did not already report it (a false positive is not new)
        let before = cuckoo.contains_key(k.as_bytes());
        assert_eq!(cuckoo.try_insert_key(k.as_bytes()).unwrap(), !before, "{k}");
    }
    // a set: the same keys again are not new, and take no room
    assert_eq!(insert_all(&mut cuckoo, &keys), 0);
    let mut dleft = bloomery::DLeftCountingBloomFilter::try_new(4000, 0.01).unwrap();
    insert_all(&mut dleft, &keys);
    let xor = XorFilter::try_from_keys(&keys).unwrap();
    for k in &keys {
        assert!(cuckoo.contains_key(k.as_bytes()) && cuckoo.contains(k));
        assert!(dleft.contains_key(k.as_bytes()) && dleft.contains(k));
        assert!(xor.contains_key(k.as_bytes()) && xor.contains(k));
    }
    let absent = (0..2000)
        .map(|i| format!("absent-{i}"))
        .filter(|k| cuckoo.contains_key(k.as_bytes()) != cuckoo.contains(k))
        .count();
    assert_eq!(absent, 0, "the byte and typed paths hash alike");
    let mut xor = xor;
    assert!(matches!(
        xor.try_insert_key(b"new"),
        Err(Error::Unsupported(_))
    ));
}

/// Count-min sketches merge through [`Merge`] like the filters: union adds the streams,
/// intersection keeps for each key at least the smaller of its two counts.
#[test]
fn count_min_sketches_merge_through_the_trait() {
    let mut a = CountMinSketch::try_with_shape(2048, 4).unwrap();
    let mut b = CountMinSketch::try_with_shape(2048, 4).unwrap();
    for i in 0..500u32 {
        a.insert_many(&i, 3);
        b.insert_many(&(i + 250), 5);
    }
    let mut u = a.clone();
    u.union_with(&b).unwrap();
    let mut n = a.clone();
    n.intersect_with(&b).unwrap();
    for i in 0..750u32 {
        let (ca, cb) = (u64::from(i < 500) * 3, u64::from(i >= 250) * 5);
        assert!(u.count(&i) >= ca + cb, "{i}");
        assert!(n.count(&i) >= ca.min(cb), "{i}");
        assert!(n.count(&i) <= a.count(&i).min(b.count(&i)), "{i}");
    }
    let other = CountMinSketch::try_with_shape(1024, 4).unwrap();
    assert!(u.union_with(&other).is_err() && n.intersect_with(&other).is_err());
}

/// The typed errors of the static builds and of the 32-bit count-min sketch are matchable from
/// the crate root, with the positions and values that caused them; nothing is changed by a
/// refused update.
#[test]
fn build_and_overflow_errors_are_typed() {
    use bloomery::{BloomierFilter, CountMinSketch32, CounterOverflow, PeelError};

    let dup = BloomierFilter::builder()
        .value_bits(4)
        .try_build(&[("a", 1u64), ("b", 2), ("a", 3)]);
    assert!(
        matches!(
            dup,
            Err(PeelError::DuplicateKey {
                first: 0,
                second: 2
            })
        ),
        "{dup:?}"
    );
    let wide = BloomierFilter::builder()
        .value_bits(4)
        .try_build(&[("a", 15u64), ("b", 16)]);
    assert!(
        matches!(
            wide,
            Err(PeelError::ValueTooWide {
                index: 1,
                value: 16,
                bits: 4
            })
        ),
        "{wide:?}"
    );

    let mut s = CountMinSketch32::try_with_shape(64, 4).unwrap();
    let h = s.hasher().hash("k");
    assert_eq!(
        s.try_insert_many_hashed(h, u64::from(u32::MAX)),
        Ok(u64::from(u32::MAX))
    );
    assert_eq!(s.try_insert_many_hashed(h, 1), Err(CounterOverflow));
    assert_eq!(s.count_hashed(h), u64::from(u32::MAX));
}

/// `hasher()` means one thing on every structure: with the prelude's `Filter` and `Count` both
/// in scope, a counting filter's `hasher()` is not ambiguous, and both traits answer the hasher
/// its keys go through.
#[test]
fn one_hasher_accessor_for_sets_and_counters() {
    use bloomery::builders::SpectralMethod;
    use bloomery::{CountMinSketch, CountingBloomFilter, SpectralBloomFilter};

    let f = CountingBloomFilter::builder()
        .capacity(100)
        .fpr(0.01)
        .seed(7)
        .try_build()
        .unwrap();
    assert_eq!(Filter::hasher(&f), Count::hasher(&f));
    assert_eq!(f.hasher(), Filter::hasher(&f));
    assert_eq!(f.hasher().hash("x"), KeyHasher::with_seed(7).hash("x"));
    let s = SpectralBloomFilter::try_new(100, 0.01, SpectralMethod::MinimumSelection).unwrap();
    assert_eq!(s.hasher(), Count::hasher(&s));
    let c = CountMinSketch::try_with_error(0.01, 0.01).unwrap();
    assert_eq!(c.hasher(), Count::hasher(&c));
}
