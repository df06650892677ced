//! Property tests (proptest): zero false negatives for every structure after every operation
//! that may keep or combine keys, and the algebra of union and intersection on the bit level.
//!
//! Case counts are modest (see `cfg`) so the file runs in a few seconds in a debug build; the
//! keys are random, so every run of CI explores new inputs of the same shapes. Regressions are
//! not persisted to files (`failure_persistence: None`): proptest prints the failing input and
//! its seed, which is what a bug report needs.
// some imports serve only the tests of optional features
#![cfg_attr(not(all(feature = "mmap", feature = "rayon")), allow(unused_imports))]

use std::fmt::Debug;

use bloomery::prelude::*;
use bloomery::{
    AtomicBlockedBloomFilter, BlockedCountingBloomFilter, Error, Incompatibility, Kind, Verify,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

fn cfg(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn keys() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(any::<u64>(), 0..300)
}

/// Capacity of the sized (AnyFilter) filters: the properties must hold whatever the fill, so
/// tests also insert more keys than this.
const CAP: u64 = 200;

/// The set filters behind `AnyFilter` (other kinds in `Kind::ALL` are not set filters).
const SET_KINDS: [Kind; 8] = [
    Kind::Classic,
    Kind::Partitioned,
    Kind::Blocked,
    Kind::BlockedSectors,
    Kind::BlockedSalted,
    Kind::BlockedSalted256,
    Kind::SplitBlock,
    Kind::Scalable,
];

/// The bits of a structure, for the laws of union and intersection.
trait Bits {
    fn bits(&self) -> Vec<u64>;
}

impl Bits for BloomFilter {
    fn bits(&self) -> Vec<u64> {
        self.as_words().to_vec()
    }
}
impl Bits for PartitionedBloomFilter {
    fn bits(&self) -> Vec<u64> {
        self.as_words().to_vec()
    }
}
impl Bits for BlockedBloomFilter {
    fn bits(&self) -> Vec<u64> {
        self.as_words().to_vec()
    }
}
impl Bits for SplitBlockBloomFilter {
    fn bits(&self) -> Vec<u64> {
        self.as_words().to_vec()
    }
}
impl Bits for ScalableBloomFilter {
    fn bits(&self) -> Vec<u64> {
        self.filters()
            .iter()
            .flat_map(|f| f.as_words().to_vec())
            .collect()
    }
}

// Explicit shapes (about 10 bits per key at CAP): sizing searches are slow in debug builds and
// are tested elsewhere; these properties hold for any shape.
fn make_classic(seed: u64) -> BloomFilter {
    BloomFilter::builder()
        .bits(2000)
        .hashes(7)
        .seed(seed)
        .try_build()
        .unwrap()
}
fn make_partitioned(seed: u64) -> PartitionedBloomFilter {
    PartitionedBloomFilter::builder()
        .bits(2001)
        .hashes(7)
        .seed(seed)
        .try_build()
        .unwrap()
}
fn make_blocked(seed: u64) -> BlockedBloomFilter {
    BlockedBloomFilter::builder()
        .bits(4 * 512)
        .hashes(7)
        .seed(seed)
        .try_build()
        .unwrap()
}
fn make_split(seed: u64) -> SplitBlockBloomFilter {
    SplitBlockBloomFilter::builder()
        .bits(8 * 256)
        .seed(seed)
        .try_build()
        .unwrap()
}
/// A small initial capacity so that a few hundred keys make it grow several times.
fn make_scalable(seed: u64) -> ScalableBloomFilter {
    ScalableBloomFilter::builder()
        .capacity(16)
        .fpr(0.01)
        .seed(seed)
        .try_build()
        .unwrap()
}

/// One sized filter of every set kind (built once: sizing is slow in debug builds). The
/// scalable one has room for every key the tests insert, so both sides keep the same shape.
fn any_templates() -> &'static [AnyFilter] {
    static T: std::sync::OnceLock<Vec<AnyFilter>> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        SET_KINDS
            .iter()
            .map(|&kind| {
                let cap = if kind == Kind::Scalable { 1000 } else { CAP };
                let b = AnyFilter::builder(kind).capacity(cap).fpr(0.01).seed(11);
                // at 1% `blocked` picks the sectors layout by itself: fixing k keeps the
                // positions layout (kind 3) covered too
                let b = if kind == Kind::Blocked {
                    b.hashes(7)
                } else {
                    b
                };
                b.try_build().unwrap()
            })
            .collect()
    })
}

/// Every key answers present. Keys go through [`KeySet`] as their little-endian bytes, the
/// bytes a [`Filter`] hashes for a `u64`, so one helper serves every set structure.
fn no_false_negatives<F: KeySet>(f: &F, keys: &[u64], what: &str) -> Result<(), TestCaseError> {
    for k in keys {
        prop_assert!(
            f.contains_key(&k.to_le_bytes()),
            "{what}: false negative for key {k}"
        );
    }
    Ok(())
}

fn filled<F: KeySet>(mut f: F, keys: &[u64]) -> F {
    for k in keys {
        f.try_insert_key(&k.to_le_bytes()).unwrap();
    }
    f
}

/// Every property that every structure must have, for one structure type.
fn check_structure<F>(make: impl Fn(u64) -> F, a: &[u64], b: &[u64]) -> Result<(), TestCaseError>
where
    F: Filter + Merge + Persist + Bits + Clone + PartialEq + Debug,
{
    let fa = filled(make(7), a);
    let fb = filled(make(7), b);
    no_false_negatives(&fa, a, "after inserts")?;

    // union: keys of both; intersection: keys of both sides
    let mut u = fa.clone();
    u.union_with(&fb).unwrap();
    no_false_negatives(&u, a, "union (left keys)")?;
    no_false_negatives(&u, b, "union (right keys)")?;
    let mut i = fa.clone();
    let intersects = match i.intersect_with(&fb) {
        Ok(()) => true,
        Err(e) => {
            // only a grown scalable filter refuses, rather than lose keys
            prop_assert!(matches!(e, Error::Unsupported(_)), "{e}");
            false
        }
    };
    if intersects {
        let both: Vec<u64> = a.iter().copied().filter(|k| b.contains(k)).collect();
        no_false_negatives(&i, &both, "intersection (common keys)")?;
    }

    // laws on the bit level (an intersection's item count is an estimate, Broder & Mitzenmacher §2.4)
    let mut u2 = fb.clone();
    u2.union_with(&fa).unwrap();
    prop_assert_eq!(&u, &u2, "union is commutative");
    if intersects {
        let mut i2 = fb.clone();
        i2.intersect_with(&fa).unwrap();
        prop_assert_eq!(i.bits(), i2.bits(), "intersection is commutative");
        prop_assert_eq!(i.len(), i2.len(), "the estimate is symmetric");
        let mut same = fa.clone();
        same.intersect_with(&fa).unwrap();
        prop_assert_eq!(same.bits(), fa.bits(), "intersection is idempotent");
        prop_assert!(same.len() <= fa.len(), "at most the items of either side");
    }
    let mut same = fa.clone();
    same.union_with(&fa).unwrap();
    prop_assert_eq!(&same, &fa, "union is idempotent");
    for (side, s) in [("left", &fa), ("right", &fb)] {
        for ((uw, iw), sw) in u.bits().iter().zip(i.bits()).zip(s.bits()) {
            prop_assert_eq!(uw & sw, sw, "union ⊇ {}", side);
            if intersects {
                prop_assert_eq!(iw & sw, iw, "intersection ⊆ {}", side);
            }
        }
    }
    // the union's bits are exactly the OR of the two sides
    let or: Vec<u64> = fa
        .bits()
        .iter()
        .zip(fb.bits())
        .map(|(x, y)| x | y)
        .collect();
    prop_assert_eq!(u.bits(), or);

    // save/load: bytes, file, and mmap (verified and header-only) give the same filter
    let back = F::from_bytes(&fa.to_bytes()).unwrap();
    prop_assert_eq!(&back, &fa);
    no_false_negatives(&back, a, "from_bytes")?;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bloom");
    fa.save(&path).unwrap();
    let loaded = F::load(&path).unwrap();
    prop_assert_eq!(&loaded, &fa);
    #[cfg(feature = "mmap")]
    for verify in [Verify::Checksum, Verify::HeaderOnly] {
        let mapped = F::open_mmap(&path, verify).unwrap();
        prop_assert_eq!(&mapped, &fa);
        no_false_negatives(&mapped, a, "open_mmap")?;
    }
    Ok(())
}

fn check_associative<F>(
    make: impl Fn(u64) -> F,
    a: &[u64],
    b: &[u64],
    c: &[u64],
) -> Result<(), TestCaseError>
where
    F: Filter + Merge + Bits + Clone + PartialEq + Debug,
{
    let (fa, fb, fc) = (filled(make(3), a), filled(make(3), b), filled(make(3), c));
    let mut left = fa.clone();
    left.union_with(&fb).unwrap();
    left.union_with(&fc).unwrap();
    let mut bc = fb.clone();
    bc.union_with(&fc).unwrap();
    let mut right = fa.clone();
    right.union_with(&bc).unwrap();
    prop_assert_eq!(&left, &right, "union is associative");
    let mut left = fa.clone();
    if left.intersect_with(&fb).is_err() {
        // a grown scalable filter refuses intersections (see check_structure)
        return Ok(());
    }
    left.intersect_with(&fc).unwrap();
    let mut bc = fb.clone();
    bc.intersect_with(&fc).unwrap();
    let mut right = fa;
    right.intersect_with(&bc).unwrap();
    prop_assert_eq!(left.bits(), right.bits(), "intersection is associative");
    Ok(())
}

fn is_hashing(e: Error) -> bool {
    matches!(e, Error::Incompatible(Incompatibility::Hashing))
}
fn is_shape(e: Error) -> bool {
    matches!(e, Error::Incompatible(Incompatibility::Shape { .. }))
}

proptest! {
    #![proptest_config(cfg(24))]

    #[test]
    fn classic(a in keys(), b in keys(), c in keys()) {
        check_structure(make_classic, &a, &b)?;
        check_associative(make_classic, &a, &b, &c)?;
    }

    #[test]
    fn partitioned(a in keys(), b in keys(), c in keys()) {
        check_structure(make_partitioned, &a, &b)?;
        check_associative(make_partitioned, &a, &b, &c)?;
    }

    #[test]
    fn blocked(a in keys(), b in keys(), c in keys()) {
        check_structure(make_blocked, &a, &b)?;
        check_associative(make_blocked, &a, &b, &c)?;
    }

    #[test]
    fn split_block(a in keys(), b in keys(), c in keys()) {
        check_structure(make_split, &a, &b)?;
        check_associative(make_split, &a, &b, &c)?;
    }

}

proptest! {
    // Scalable filters size every new sub-filter with the blocked model, which is slow in a
    // debug build (~0.1 s per growth): fewer cases.
    #![proptest_config(cfg(3))]

    /// Scalable filters: union needs equal sub-filter shapes, so both sides get the same
    /// number of keys (and so grow the same way); the keys themselves differ.
    #[test]
    fn scalable(pairs in prop::collection::vec((any::<u64>(), any::<u64>()), 0..100)) {
        let a: Vec<u64> = pairs.iter().map(|p| p.0).collect();
        let b: Vec<u64> = pairs.iter().map(|p| p.1).collect();
        let fa = filled(make_scalable(7), &a);
        let fb = filled(make_scalable(7), &b);
        if fa.filters().len() == fb.filters().len() {
            check_structure(make_scalable, &a, &b)?;
            check_associative(make_scalable, &a, &b, &a)?;
        } else {
            // different growth: typed error, never a wrong answer
            let mut x = fa.clone();
            prop_assert!(is_shape(x.union_with(&fb).unwrap_err()));
            no_false_negatives(&fa, &a, "scalable")?;
        }
    }

    /// Growth: many more keys than the initial capacity, all found, compound rate promised.
    #[test]
    fn scalable_growth(n in 0usize..400, seed in any::<u64>()) {
        let mut f = make_scalable(seed);
        let keys: Vec<u64> = (0..n as u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed).collect();
        for k in &keys {
            f.try_insert(k).unwrap();
        }
        no_false_negatives(&f, &keys, "scalable growth")?;
        // the batched query answers as the single one, over the keys and as many others
        let asked: Vec<u64> = keys.iter().flat_map(|&k| [k, !k]).collect();
        let mut found = vec![false; asked.len()];
        f.contains_batch(&asked, &mut found).unwrap();
        for (k, hit) in asked.iter().zip(&found) {
            prop_assert_eq!(*hit, f.contains(k), "batched query of {}", k);
        }
        if n > 200 {
            prop_assert!(f.filters().len() >= 3, "sub-filters of 16, 32, 64, ... keys");
        }
        let back = ScalableBloomFilter::from_bytes(&f.to_bytes()).unwrap();
        prop_assert_eq!(&back, &f);
        no_false_negatives(&back, &keys, "scalable after load")?;
    }

}

proptest! {
    #![proptest_config(cfg(12))]

    /// AnyFilter of every kind: inserts, union, save/load through the dynamic type.
    #[test]
    fn any_filter(a in keys(), b in keys()) {
        for (kind, template) in SET_KINDS.iter().zip(any_templates()) {
            let kind = *kind;
            let fa = filled(template.clone(), &a);
            let fb = filled(template.clone(), &b);
            prop_assert_eq!(fa.kind(), kind);
            no_false_negatives(&fa, &a, kind.name())?;
            let mut u = fa.clone();
            u.union_with(&fb).unwrap();
            no_false_negatives(&u, &a, "any union")?;
            no_false_negatives(&u, &b, "any union")?;
            let back = AnyFilter::from_bytes(&fa.to_bytes()).unwrap();
            prop_assert_eq!(&back, &fa);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("any.bloom");
            fa.save(&path).unwrap();
            prop_assert_eq!(&AnyFilter::load(&path).unwrap(), &fa);
            #[cfg(feature = "mmap")]
            {
                let mapped = AnyFilter::open_mmap(&path, Verify::Checksum).unwrap();
                no_false_negatives(&mapped, &a, "any mmap")?;
                prop_assert_eq!(&mapped, &fa);
            }
        }
    }

    /// Folding (classic and blocked, power-of-two sizes) keeps every key and equals the
    /// half-size filter built from the same keys.
    #[test]
    fn fold(a in keys(), log_m in 7u32..14, k in 1u32..9) {
        let m = 1u64 << log_m;
        let mut big = BloomFilter::try_with_shape(m, k).unwrap();
        let mut half = BloomFilter::try_with_shape(m / 2, k).unwrap();
        for key in &a {
            big.insert(key);
            half.insert(key);
        }
        let folded = big.fold().unwrap();
        no_false_negatives(&folded, &a, "classic fold")?;
        prop_assert_eq!(folded.as_words(), half.as_words());
        let twice = folded.fold().unwrap();
        no_false_negatives(&twice, &a, "classic fold twice")?;

        let blocks = 1u64 << (log_m - 6);
        let mut big = BlockedBloomFilter::try_with_shape(blocks, k).unwrap();
        let mut half = BlockedBloomFilter::try_with_shape(blocks / 2, k).unwrap();
        for key in &a {
            big.insert(key);
            half.insert(key);
        }
        let folded = big.fold().unwrap();
        no_false_negatives(&folded, &a, "blocked fold")?;
        prop_assert_eq!(folded.as_words(), half.as_words());
        let any = AnyFilter::Blocked(big.clone()).fold().unwrap();
        no_false_negatives(&any, &a, "any fold")?;
    }

    #[cfg(feature = "rayon")]
    /// Parallel bulk build and concurrent inserts through `&self`: same bits as sequential.
    #[test]
    fn parallel_and_atomic(a in prop::collection::vec(any::<u64>(), 0..6000)) {
        let mut seq = make_blocked(5);
        let mut par = seq.clone();
        for k in &a {
            seq.insert(k);
        }
        par.par_insert_all(&a);
        no_false_negatives(&par, &a, "par_insert_all")?;
        prop_assert_eq!(par.as_words(), seq.as_words());

        let atomic: AtomicBlockedBloomFilter = make_blocked(5).into_atomic();
        std::thread::scope(|s| {
            for chunk in a.chunks(a.len().div_ceil(3).max(1)) {
                let atomic = &atomic;
                s.spawn(move || {
                    for k in chunk {
                        atomic.insert(k);
                    }
                });
            }
        });
        for k in &a {
            prop_assert!(atomic.contains(k));
        }
        let plain = atomic.into_filter();
        no_false_negatives(&plain, &a, "atomic")?;
        prop_assert_eq!(plain.as_words(), seq.as_words());
    }
}

proptest! {
    #![proptest_config(cfg(3))]

    /// Incompatible shapes and hashers: a typed error, and the left side is untouched.
    #[test]
    fn incompatible_merges(a in keys(), s1 in any::<u64>(), s2 in any::<u64>()) {
        prop_assume!(s1 != s2);
        macro_rules! check {
            ($make:expr, $other_shape:expr) => {{
                let x = filled($make(s1), &a);
                let mut fresh = $make(s1);
                prop_assert!(is_hashing(fresh.union_with(&$make(s2)).unwrap_err()));
                prop_assert!(is_hashing(fresh.intersect_with(&$make(s2)).unwrap_err()));
                prop_assert_eq!(&fresh, &$make(s1));
                let mut y = x.clone();
                prop_assert!(is_shape(y.union_with(&$other_shape).unwrap_err()));
                prop_assert!(is_shape(y.intersect_with(&$other_shape).unwrap_err()));
                prop_assert_eq!(&y, &x);
            }};
        }
        check!(make_classic, BloomFilter::builder().bits(999).hashes(3).seed(s1).try_build().unwrap());
        check!(make_partitioned, PartitionedBloomFilter::builder().bits(999).hashes(3).seed(s1).try_build().unwrap());
        check!(make_blocked, BlockedBloomFilter::builder().bits(512).hashes(3).seed(s1).try_build().unwrap());
        check!(make_split, SplitBlockBloomFilter::builder().bits(256).seed(s1).try_build().unwrap());
        check!(make_scalable, ScalableBloomFilter::builder().capacity(1000).fpr(0.01).seed(s1).try_build().unwrap());

        // different kinds behind AnyFilter
        let mut x = AnyFilter::Classic(make_classic(s1));
        let y = AnyFilter::Blocked(make_blocked(s1));
        let is_kind = |e: Error| matches!(e, Error::Incompatible(Incompatibility::Kind { .. }));
        prop_assert!(is_kind(x.union_with(&y).unwrap_err()));
        prop_assert!(is_kind(x.intersect_with(&y).unwrap_err()));
    }
}

/// Blocked counting filter (kind 21): 16 lines of `width`-bit counters, k = 5.
fn make_blocked_counting(seed: u64, width: u32) -> BlockedCountingBloomFilter {
    BlockedCountingBloomFilter::builder()
        .counters(16 * bloomery::BlockedCountingBloomFilter::cells_per_line_at(width))
        .hashes(5)
        .counter_width(width)
        .seed(seed)
        .try_build()
        .unwrap()
}

proptest! {
    #![proptest_config(cfg(24))]

    /// The counting semantics of the blocked counting filter: no false negatives after
    /// inserts, removes of present items, unions and intersections, and save/load (bytes, file,
    /// mmap); counts never below the true count while no counter saturated; a refused remove
    /// changes nothing.
    #[test]
    fn blocked_counting(
        a in keys(),
        b in keys(),
        drop in prop::collection::vec(any::<prop::sample::Index>(), 0..100),
        width in prop_oneof![Just(4u32), 1u32..=32],
    ) {
        let fa = filled(make_blocked_counting(7, width), &a);
        let fb = filled(make_blocked_counting(7, width), &b);
        // removes of present items
        let mut r = fa.clone();
        let mut left: std::collections::HashMap<u64, u64> = Default::default();
        for k in &a {
            *left.entry(*k).or_default() += 1;
        }
        if !a.is_empty() {
            for i in &drop {
                let k = a[i.index(a.len())];
                let c = left.get_mut(&k).unwrap();
                if *c > 0 {
                    r.remove(&k).unwrap();
                    *c -= 1;
                }
            }
        }
        let kept: Vec<u64> = left.iter().filter(|(_, c)| **c > 0).map(|(k, _)| *k).collect();
        no_false_negatives(&r, &kept, "after removes")?;
        if r.saturated_counters() == 0 {
            for (k, c) in &left {
                prop_assert!(r.count(k) >= *c, "count of {} below {}", k, c);
            }
        }
        // a refused remove changes nothing
        for k in 0..50u64 {
            let before = r.clone();
            if r.remove(&(k | (1 << 63))).is_err() {
                prop_assert_eq!(&r, &before);
            } else {
                r = before;
            }
        }
        // union and intersection
        let mut u = fa.clone();
        u.union_with(&fb).unwrap();
        no_false_negatives(&u, &a, "union (left keys)")?;
        no_false_negatives(&u, &b, "union (right keys)")?;
        let mut u2 = fb.clone();
        u2.union_with(&fa).unwrap();
        prop_assert_eq!(&u, &u2, "union is commutative");
        let mut i = fa.clone();
        i.intersect_with(&fb).unwrap();
        let both: Vec<u64> = a.iter().copied().filter(|k| b.contains(k)).collect();
        no_false_negatives(&i, &both, "intersection (common keys)")?;
        // save/load
        for f in [&r, &u, &i] {
            let back = BlockedCountingBloomFilter::from_bytes(&f.to_bytes()).unwrap();
            prop_assert_eq!(&back, f);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bloom");
        u.save(&path).unwrap();
        prop_assert_eq!(&BlockedCountingBloomFilter::load(&path).unwrap(), &u);
        #[cfg(feature = "mmap")]
        {
            let mapped = BlockedCountingBloomFilter::open_mmap(&path, Verify::Checksum).unwrap();
            prop_assert_eq!(&mapped, &u);
            no_false_negatives(&mapped, &a, "open_mmap")?;
        }
        // incompatible merges are typed and change nothing
        let mut x = fa.clone();
        prop_assert!(is_hashing(x.union_with(&make_blocked_counting(8, width)).unwrap_err()));
        let other = BlockedCountingBloomFilter::try_with_shape(3, 5, width).unwrap();
        prop_assert!(is_shape(x.intersect_with(&other).unwrap_err()));
        prop_assert_eq!(&x, &fa);
    }
}

proptest! {
    #![proptest_config(cfg(16))]

    /// A sweep in block order (`insert_sorted`, what updates of big files use) sets the same
    /// bits and counts the same items as inserting the keys in input order, in one call or in
    /// several; the ranges it reports done are consecutive from the first word, end at a step
    /// boundary or the end of the filter, and cover every word the keys changed.
    #[test]
    fn sorted_insert_equals_input_order(
        keys in prop::collection::vec(any::<u64>(), 0..3000),
        blocks in prop_oneof![1u64..64, 100_000u64..400_000],
        k in 1u32..12,
        split in 0usize..3000,
    ) {
        let empty = BlockedBloomFilter::try_with_shape(blocks, k).unwrap();
        let mut want = empty.clone();
        for key in &keys {
            want.insert(key);
        }
        let total = blocks * 64;
        let mut got = empty.clone();
        let mut hashes: Vec<_> = keys.iter().map(|key| got.hasher().hash(key)).collect();
        let split = split.min(hashes.len());
        let (first, second) = hashes.split_at_mut(split);
        let mut new = 0;
        let mut max_end = 0;
        for part in [first, second] {
            let mut done = 0u64;
            new += got.insert_sorted(part, |r| {
                assert_eq!(r.start, done, "ranges are consecutive from the start");
                assert!(r.end > r.start && r.end <= total, "{r:?} of {total}");
                assert!(r.end == total || r.end % bloomery::lines::SWEEP_STEP == 0, "{r:?}");
                done = r.end;
            });
            max_end = max_end.max(done);
        }
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(new, want.len());
        let changed = got
            .as_words()
            .iter()
            .zip(empty.as_words())
            .rposition(|(a, b)| a != b);
        if let Some(w) = changed {
            prop_assert!((w as u64 + 1) * 8 <= max_end, "word {} beyond {}", w, max_end);
        }
        no_false_negatives(&got, &keys, "sorted insert")?;
    }
}
