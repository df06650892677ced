//! `BCBF.*`: bloomery's blocked counting Bloom filter ([`BlockedCountingBloomFilter`], library) with the `BF.*` conventions — the counting filter of
//! Broder & Mitzenmacher §2.5 (w-bit saturating counters, so items can be deleted) in the blocked layout: an
//! item's k counters sit in one 64-byte line.
//!
//! The commands mirror `CBF.*` ([`crate::cbf`]) — arguments, replies, errors, flags and
//! replication — and have the same semantics: `DEL` refuses an item that is certainly absent (one of
//! its counters is zero) and changes nothing; `COUNT` is the minimum of the item's counters;
//! saturated counters are never decremented. Only the layout differs, and so `INFO`: it reports
//! the number of lines and the counters per line (`⌊512 / w⌋`).
//!
//! Pick `BCBF.*` over `CBF.*` when the filter is far larger than the CPU caches: each operation
//! is one cache miss instead of k (at 10M items and 1%, 2–3× faster single-item operations in
//! the library; at a few times the cache size, 1M items, it measured slower), for about 13%
//! more memory at 1% false positives (more at lower rates: 32% at 0.1%, 1.6–2.7× at
//! 10⁻⁴…10⁻⁶, where `CBF.*` is the better choice).

use bloomery::{BlockedCountingBloomFilter, Filter, Stats};
use redis_module::{Context, RedisError, RedisResult, RedisString};

use crate::config;
use crate::dump;
use crate::errors::lib_error;
use crate::limits::{COUNTER_BITS, OWN_DEFAULT_CAPACITY, OWN_DEFAULT_ERROR_RATE};
use crate::own::{
    add_generic, count_generic, counting_sizing, del_generic, exists_generic, info_generic,
    reserve_generic, size,
};
use crate::reply::int;
use crate::types::BCBF_TYPE;

fn build(capacity: u64, error: f64, bits: u32) -> Result<BlockedCountingBloomFilter, RedisError> {
    let key = format!(
        "bcbf {} {} {} {}",
        capacity,
        error.to_bits(),
        bits,
        config::max_bytes()
    );
    crate::templates::get_or_make(&key, || {
        BlockedCountingBloomFilter::builder()
            .capacity(capacity)
            .fpr(error)
            .counter_width(bits)
            .max_bytes(config::max_bytes())
            .try_build()
            .map_err(lib_error)
    })
}

fn default() -> Result<BlockedCountingBloomFilter, RedisError> {
    build(OWN_DEFAULT_CAPACITY, OWN_DEFAULT_ERROR_RATE, COUNTER_BITS.0)
}

/// `BCBF.RESERVE key capacity error [COUNTERBITS w]` (w in 1..=32, default 4; a line holds
/// `⌊512 / w⌋` counters).
pub fn reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let (capacity, error, bits) = counting_sizing(&args, COUNTER_BITS.0)?;
    let filter = build(capacity, error, bits)?;
    reserve_generic(ctx, &BCBF_TYPE, &args[1], filter)
}

/// `BCBF.ADD key item`: 1 if the item was new (one of its counters was zero), else 0.
pub fn add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    add_generic(ctx, &BCBF_TYPE, &args, &default)
}

/// `BCBF.DEL key item`: 1; an item that is certainly absent is refused with an error reply
/// (removing it would create false negatives for other items).
pub fn del(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    del_generic::<BlockedCountingBloomFilter>(ctx, &BCBF_TYPE, &args)
}

/// `BCBF.EXISTS key item`.
pub fn exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    exists_generic::<BlockedCountingBloomFilter>(ctx, &BCBF_TYPE, &args)
}

/// `BCBF.COUNT key item`: the minimum of the item's counters (an upper bound on its count).
pub fn count(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    count_generic::<BlockedCountingBloomFilter>(ctx, &BCBF_TYPE, &args)
}

/// `BCBF.INFO key`.
pub fn info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    info_generic(ctx, &BCBF_TYPE, &args, |f: &BlockedCountingBloomFilter| {
        vec![
            ("Capacity", int(Stats::capacity(f))),
            ("Size", size(f)),
            ("Number of lines", int(f.blocks())),
            ("Counters per line", int(f.cells_per_line())),
            ("Counter bits", int(u64::from(f.counter_width()))),
            ("Number of hash functions", int(u64::from(f.hashes()))),
            ("Number of items inserted", int(f.len())),
            ("Saturated counters", int(f.saturated_counters())),
        ]
    })
}

/// `BCBF.SCANDUMP key iterator`.
pub fn scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::scandump::<BlockedCountingBloomFilter>(ctx, args, &BCBF_TYPE)
}

/// `BCBF.LOADCHUNK key iterator data`.
pub fn loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::loadchunk::<BlockedCountingBloomFilter>(ctx, args, &BCBF_TYPE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_the_library_default() {
        let f = default().unwrap();
        assert_eq!(f.counter_width(), 4);
        assert_eq!(f.cells_per_line(), 128);
        assert_eq!(Stats::capacity(&f), OWN_DEFAULT_CAPACITY);
        assert_eq!(
            f,
            BlockedCountingBloomFilter::try_new(OWN_DEFAULT_CAPACITY, OWN_DEFAULT_ERROR_RATE)
                .unwrap()
        );
    }

    /// Every accepted width builds a small filter, and refuses absurd sizes with an error.
    #[test]
    fn every_width_builds_or_errs() {
        for bits in 1..=COUNTER_BITS.1 {
            let f = build(100, 0.01, bits).unwrap();
            assert_eq!(f.counter_width(), bits);
            assert_eq!(f.cells_per_line(), u64::from(512 / bits));
            for (capacity, error) in [(i64::MAX as u64, 0.01), (i64::MAX as u64, 0.999)] {
                assert!(build(capacity, error, bits).is_err(), "{bits} {capacity}");
            }
        }
    }

    /// Rates near 1 with huge capacities are sized at once by the library (its blocked model
    /// answers saturated loads without building the mixture).
    #[test]
    fn rates_near_one_build_small_filters() {
        let _limit = crate::config::default_limit_for_test();
        for bits in [1, 4, 32] {
            let f = build(100_000_000, 0.999_999, bits).unwrap();
            assert!(f.byte_len() < 64 << 20, "{bits}: {}", f.byte_len());
        }
    }
}
