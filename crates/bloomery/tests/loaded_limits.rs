//! Files that carry their own limits: whatever a loaded file says about how far it may grow or
//! how much work an operation may do, the process that loads it decides. A scalable filter's
//! `growth` (range-checked as on creation) and `max_bytes`, and a cuckoo filter's `max_iterations`, `expansion` and
//! `max_bytes` are forged (with a valid checksum) and the loaded structures must stay within
//! the loading process's memory limit (`store::max_bytes`).
//!
//! This binary sets the process-wide limit once, so its tests agree on it.

use std::sync::Once;

use bloomery::prelude::*;
use bloomery::{AnyFilter, CuckooFilter, Error};

/// The loading process's limit in these tests.
const LIMIT: u64 = 8 << 20;

fn limit() {
    static SET: Once = Once::new();
    SET.call_once(|| bloomery::tuning::set_max_bytes(LIMIT));
}

/// Recompute the xxh3-64 trailer after patching, so only the patched fields are wrong.
fn reseal(b: &mut [u8]) {
    let n = b.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&b[..n]);
    b[n..].copy_from_slice(&sum.to_le_bytes());
}

fn put(b: &mut [u8], at: usize, v: &[u8]) {
    b[at..at + v.len()].copy_from_slice(v);
}

// Header parameters start at byte 72 of a file (after the fixed header).
const SCALABLE_GROWTH: usize = 88;
const SCALABLE_MAX_BYTES: usize = 101;
const CUCKOO_MAX_ITERATIONS: usize = 84;
const CUCKOO_EXPANSION: usize = 88;
const CUCKOO_MAX_BYTES: usize = 100;

/// A scalable filter for `capacity` keys whose file says "grow by `growth`, up to 2^63 bytes".
fn forged_scalable(capacity: u64, growth: u32) -> Vec<u8> {
    let f = ScalableBloomFilter::builder()
        .capacity(capacity)
        .fpr(0.01)
        .try_build()
        .unwrap();
    let mut b = f.to_bytes();
    assert_eq!(
        u32::from_le_bytes(b[SCALABLE_GROWTH..SCALABLE_GROWTH + 4].try_into().unwrap()),
        2,
        "growth field moved"
    );
    put(&mut b, SCALABLE_GROWTH, &growth.to_le_bytes());
    put(&mut b, SCALABLE_MAX_BYTES, &(1u64 << 63).to_le_bytes());
    reseal(&mut b);
    b
}

fn stored_limit(b: &[u8]) -> u64 {
    u64::from_le_bytes(
        b[SCALABLE_MAX_BYTES..SCALABLE_MAX_BYTES + 8]
            .try_into()
            .unwrap(),
    )
}

#[test]
fn a_scalable_file_grows_only_as_far_as_the_loading_process_allows() {
    limit();
    // growth at its largest: the second sub-filter would hold 32.8M keys (about 50 MB)
    let growth = ScalableBloomFilter::MAX_GROWTH;
    let mut f = ScalableBloomFilter::from_bytes(&forged_scalable(1000, growth)).unwrap();
    assert_eq!(f.growth(), growth, "the file's growth is kept");
    let mut refused = None;
    for i in 0..2_000u32 {
        if let Err(e) = f.try_insert(&i) {
            refused = Some(e);
            break;
        }
    }
    assert!(
        matches!(refused, Some(Error::TooLarge { limit, .. }) if limit <= LIMIT),
        "{refused:?}"
    );
    assert!(f.allocated_bytes() <= LIMIT, "{}", f.allocated_bytes());
    assert_eq!(f.filters().len(), 1);
    // Without try_: keys still go in (into the newest sub-filter), nothing is allocated.
    for i in 0..2_000u32 {
        f.insert(&i);
    }
    assert!((0..2_000u32).all(|i| f.contains(&i)));
    assert_eq!(f.filters().len(), 1);
}

#[test]
fn a_scalable_file_with_growth_out_of_range_is_refused() {
    limit();
    // 6,000,000 turned a 392-byte file into 991 MB on the first growth; 24,000,000 into 3.96 GB
    for growth in [
        0u32,
        ScalableBloomFilter::MAX_GROWTH + 1,
        6_000_000,
        24_000_000,
        u32::MAX,
    ] {
        let e = ScalableBloomFilter::from_bytes(&forged_scalable(100, growth)).unwrap_err();
        assert!(e.to_string().contains("growth"), "{growth}: {e}");
        let e = AnyFilter::from_bytes(&forged_scalable(100, growth)).unwrap_err();
        assert!(e.to_string().contains("growth"), "{growth}: {e}");
    }
    // the same bound as on creation
    for growth in [0u32, ScalableBloomFilter::MAX_GROWTH + 1, 6_000_000] {
        let e = ScalableBloomFilter::builder()
            .capacity(100)
            .fpr(0.01)
            .growth(growth)
            .try_build()
            .unwrap_err();
        assert!(e.to_string().contains("growth"), "{growth}: {e}");
    }
    let ok = forged_scalable(100, ScalableBloomFilter::MAX_GROWTH);
    assert!(ScalableBloomFilter::from_bytes(&ok).is_ok());
}

#[test]
fn a_scalable_file_with_a_smaller_limit_keeps_it() {
    limit();
    let f = ScalableBloomFilter::builder()
        .capacity(100)
        .fpr(0.01)
        .max_bytes(4096)
        .try_build()
        .unwrap();
    assert_eq!(
        stored_limit(&f.to_bytes()),
        4096,
        "an explicit limit is stored"
    );
    let mut g = ScalableBloomFilter::from_bytes(&f.to_bytes()).unwrap();
    assert_eq!(g, f, "a file within the process limit loads unchanged");
    let mut grew_until = 0;
    for i in 0..100_000u32 {
        if g.try_insert(&i).is_err() {
            grew_until = i;
            break;
        }
    }
    assert!(grew_until > 100, "it grew at all");
    assert!(g.allocated_bytes() <= 4096, "{}", g.allocated_bytes());
}

#[test]
fn a_scalable_file_does_not_store_the_creators_process_limit() {
    limit();
    // Built under this process's 8 MiB limit without a limit of its own: the file says "none"
    // (u64::MAX), so a process with a larger limit may grow it further.
    let f = ScalableBloomFilter::try_new(100, 0.01).unwrap();
    let b = f.to_bytes();
    assert_eq!(stored_limit(&b), u64::MAX);
    let g = ScalableBloomFilter::from_bytes(&b).unwrap();
    assert_eq!(
        stored_limit(&g.to_bytes()),
        u64::MAX,
        "saving again keeps none"
    );
    // a limit given explicitly, even the process's own value, is stored
    let f = ScalableBloomFilter::builder()
        .capacity(100)
        .fpr(0.01)
        .max_bytes(LIMIT)
        .try_build()
        .unwrap();
    assert_eq!(stored_limit(&f.to_bytes()), LIMIT);
}

fn cuckoo_file(capacity: u64, patch: &[(usize, &[u8])]) -> Vec<u8> {
    let mut f = CuckooFilter::try_new(capacity).unwrap();
    for i in 0..capacity {
        f.insert(&i).unwrap();
    }
    let mut b = f.to_bytes();
    for (at, v) in patch {
        put(&mut b, *at, v);
    }
    reseal(&mut b);
    b
}

#[test]
fn cuckoo_max_iterations_is_validated_on_create_and_on_load() {
    limit();
    // Creation refuses what RedisBloom's CF.RESERVE refuses.
    for m in [0u32, 65_536, 16_777_216, 2_147_483_668] {
        let b = CuckooFilter::builder().capacity(1000).max_iterations(m);
        assert!(b.try_build().is_err(), "{m}");
    }
    let b = CuckooFilter::builder()
        .capacity(1000)
        .max_iterations(CuckooFilter::MAX_ITERATIONS);
    assert!(b.try_build().is_ok());
    // Loading refuses the same values (a forged 2^31 + 20 made an insert allocate 2^31 undo
    // entries; 2^24 blocked an insert for seconds).
    for m in [0u32, 65_536, 16_777_216, 2_147_483_668] {
        let b = cuckoo_file(64, &[(CUCKOO_MAX_ITERATIONS, &m.to_le_bytes())]);
        let e = CuckooFilter::from_bytes(&b).unwrap_err();
        assert!(e.to_string().contains("cuckoo parameters"), "{m}: {e}");
    }
    let b = cuckoo_file(64, &[(CUCKOO_MAX_ITERATIONS, &65_535u32.to_le_bytes())]);
    let f = CuckooFilter::from_bytes(&b).unwrap();
    assert_eq!(f.max_iterations(), 65_535);
}

#[test]
fn a_cuckoo_file_grows_only_as_far_as_the_loading_process_allows() {
    limit();
    let b = cuckoo_file(
        64,
        &[
            (CUCKOO_EXPANSION, &1_000_000u32.to_le_bytes()),
            (CUCKOO_MAX_BYTES, &(1u64 << 63).to_le_bytes()),
        ],
    );
    let mut f = CuckooFilter::from_bytes(&b).unwrap();
    let mut refused = None;
    for i in 64..10_000u64 {
        if let Err(e) = f.insert(&i) {
            refused = Some(e);
            break;
        }
    }
    assert!(
        matches!(refused, Some(Error::TooLarge { limit, .. }) if limit <= LIMIT),
        "{refused:?}"
    );
    assert!(f.allocated_bytes() <= LIMIT, "{}", f.allocated_bytes());
}
