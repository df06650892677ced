//! `CBF.*` and `BCBF.*`: bloomery's counting Bloom filter in its classic layout
//! ([`CountingBloomFilter`]) and its blocked one ([`BlockedCountingBloomFilter`]), with the
//! `BF.*` conventions — the counting filter of Broder & Mitzenmacher §2.5 (w-bit saturating
//! counters, so items can be deleted). One command shell serves both ([`Counting`] says what
//! differs: the Redis type, the builder and the `INFO` fields).
//!
//! Both families have the same arguments, replies, errors, flags and replication: `RESERVE
//! key capacity error [COUNTERBITS w]` (w in 1..=32, default 4); `ADD` auto-creates with
//! capacity 100 and error 0.01 and answers 1 when the item was new (one of its counters was
//! zero); `DEL` refuses an item that is certainly absent (one of its counters is zero) and
//! changes nothing; `COUNT` is the minimum of the item's counters (an upper bound on its
//! count); saturated counters are never decremented. Only the layout differs, and so `INFO`:
//! the blocked layout reports the number of lines and the counters per line (`⌊512 / w⌋`).
//!
//! Pick `BCBF.*` over `CBF.*` when the filter is far larger than the CPU caches: each operation
//! is one cache miss instead of k (at 10M items and 1%, 2–3× faster single-item operations in
//! the library; at a few times the cache size, 1M items, it measured slower), for about 13%
//! more memory at 1% false positives (more at lower rates: 32% at 0.1%, 1.6–2.7× at
//! 10⁻⁴…10⁻⁶, where `CBF.*` is the better choice).

use bloomery::{BlockedCountingBloomFilter, Count, CountingBloomFilter, Filter, Remove, Stats};
use redis_module::native_types::RedisType;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::config;
use crate::dump;
use crate::errors::lib_error;
use crate::limits::{COUNTER_BITS, OWN_DEFAULT_CAPACITY, OWN_DEFAULT_ERROR_RATE};
use crate::own::{
    add_generic, count_generic, counting_sizing, del_generic, exists_generic, info_generic,
    reserve_generic, size,
};
use crate::reply::int;
use crate::types::{Structure, BCBF_TYPE, CBF_TYPE};

/// What one counting family is: its Redis type, how it is built, what `INFO` shows.
pub trait Counting: Structure + Filter + Count + Remove + Stats + Send + Sync {
    /// The Redis type its keys hold.
    fn redis_type() -> &'static RedisType;
    /// An empty filter for `capacity` items at rate `error` with `bits`-bit counters, within
    /// `max_bytes`.
    fn try_build(capacity: u64, error: f64, bits: u32, max_bytes: u64) -> bloomery::Result<Self>;
    /// The `INFO` fields after `Capacity` and `Size`: the layout's, then the counters'.
    fn shape(&self) -> Vec<(&'static str, RedisValue)>;
}

impl Counting for CountingBloomFilter {
    fn redis_type() -> &'static RedisType {
        &CBF_TYPE
    }
    fn try_build(capacity: u64, error: f64, bits: u32, max_bytes: u64) -> bloomery::Result<Self> {
        CountingBloomFilter::builder()
            .capacity(capacity)
            .fpr(error)
            .counter_width(bits)
            .max_bytes(max_bytes)
            .try_build()
    }
    fn shape(&self) -> Vec<(&'static str, RedisValue)> {
        vec![
            ("Number of counters", int(self.counter_len())),
            ("Counter bits", int(u64::from(self.counter_width()))),
            ("Number of hash functions", int(u64::from(self.hashes()))),
            ("Number of items inserted", int(self.len())),
            ("Saturated counters", int(self.saturated_counters())),
        ]
    }
}

impl Counting for BlockedCountingBloomFilter {
    fn redis_type() -> &'static RedisType {
        &BCBF_TYPE
    }
    fn try_build(capacity: u64, error: f64, bits: u32, max_bytes: u64) -> bloomery::Result<Self> {
        BlockedCountingBloomFilter::builder()
            .capacity(capacity)
            .fpr(error)
            .counter_width(bits)
            .max_bytes(max_bytes)
            .try_build()
    }
    fn shape(&self) -> Vec<(&'static str, RedisValue)> {
        vec![
            ("Number of lines", int(self.blocks())),
            ("Counters per line", int(self.cells_per_line())),
            ("Counter bits", int(u64::from(self.counter_width()))),
            ("Number of hash functions", int(u64::from(self.hashes()))),
            ("Number of items inserted", int(self.len())),
            ("Saturated counters", int(self.saturated_counters())),
        ]
    }
}

/// An empty filter, copied from the kept one of the same parameters (see
/// [`crate::templates`]).
fn build<T: Counting>(capacity: u64, error: f64, bits: u32) -> Result<T, RedisError> {
    let key = format!(
        "{} {} {} {} {}",
        T::INFO,
        capacity,
        error.to_bits(),
        bits,
        config::max_bytes()
    );
    crate::templates::get_or_make(&key, || {
        T::try_build(capacity, error, bits, config::max_bytes()).map_err(lib_error)
    })
}

/// What `ADD` creates: capacity 100, error 0.01, 4-bit counters.
fn default<T: Counting>() -> Result<T, RedisError> {
    build(OWN_DEFAULT_CAPACITY, OWN_DEFAULT_ERROR_RATE, COUNTER_BITS.0)
}

/// `RESERVE key capacity error [COUNTERBITS w]` (w in 1..=32, default 4).
pub fn reserve<T: Counting>(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let (capacity, error, bits) = counting_sizing(&args, COUNTER_BITS.0)?;
    let filter = build::<T>(capacity, error, bits)?;
    reserve_generic(ctx, T::redis_type(), &args[1], filter)
}

/// `ADD key item`: 1 if the item was new (one of its counters was zero), else 0.
pub fn add<T: Counting>(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    add_generic(ctx, T::redis_type(), &args, &default::<T>)
}

/// `DEL key item`: 1; an item that is certainly absent is refused with an error reply
/// (removing it would create false negatives for other items).
pub fn del<T: Counting>(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    del_generic::<T>(ctx, T::redis_type(), &args)
}

/// `EXISTS key item`.
pub fn exists<T: Counting>(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    exists_generic::<T>(ctx, T::redis_type(), &args)
}

/// `COUNT key item`: the minimum of the item's counters (an upper bound on its count).
pub fn count<T: Counting>(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    count_generic::<T>(ctx, T::redis_type(), &args)
}

/// `INFO key`: Capacity, Size, the layout's fields, Counter bits, Number of hash functions,
/// Number of items inserted, Saturated counters.
pub fn info<T: Counting>(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    info_generic(ctx, T::redis_type(), &args, |f: &T| {
        let mut v = vec![("Capacity", int(Stats::capacity(f))), ("Size", size(f))];
        v.extend(f.shape());
        v
    })
}

/// `SCANDUMP key iterator`.
pub fn scandump<T: Counting>(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::scandump::<T>(ctx, args, T::redis_type())
}

/// `LOADCHUNK key iterator data`.
pub fn loadchunk<T: Counting>(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::loadchunk::<T>(ctx, args, T::redis_type())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_library_defaults() {
        let f = default::<BlockedCountingBloomFilter>().unwrap();
        assert_eq!(f.counter_width(), 4);
        assert_eq!(f.cells_per_line(), 128);
        assert_eq!(Stats::capacity(&f), OWN_DEFAULT_CAPACITY);
        assert_eq!(
            f,
            BlockedCountingBloomFilter::try_new(OWN_DEFAULT_CAPACITY, OWN_DEFAULT_ERROR_RATE)
                .unwrap()
        );
        let c = default::<CountingBloomFilter>().unwrap();
        assert_eq!(c.counter_width(), 4);
        assert_eq!(Stats::capacity(&c), OWN_DEFAULT_CAPACITY);
    }

    /// Every accepted width builds a small filter, and refuses absurd sizes with an error.
    #[test]
    fn every_width_builds_or_errs() {
        for bits in 1..=COUNTER_BITS.1 {
            let f = build::<BlockedCountingBloomFilter>(100, 0.01, bits).unwrap();
            assert_eq!(f.counter_width(), bits);
            assert_eq!(f.cells_per_line(), u64::from(512 / bits));
            let c = build::<CountingBloomFilter>(100, 0.01, bits).unwrap();
            assert_eq!(c.counter_width(), bits);
            for (capacity, error) in [(i64::MAX as u64, 0.01), (i64::MAX as u64, 0.999)] {
                let b = build::<BlockedCountingBloomFilter>(capacity, error, bits);
                assert!(b.is_err(), "{bits} {capacity}");
                let c = build::<CountingBloomFilter>(capacity, error, bits);
                assert!(c.is_err(), "{bits} {capacity}");
            }
        }
    }

    /// Rates near 1 with huge capacities are sized at once by the library (its blocked model
    /// answers saturated loads without building the mixture).
    #[test]
    fn rates_near_one_build_small_filters() {
        let _limit = crate::config::default_limit_for_test();
        for bits in [1, 4, 32] {
            let f = build::<BlockedCountingBloomFilter>(100_000_000, 0.999_999, bits).unwrap();
            assert!(f.byte_len() < 64 << 20, "{bits}: {}", f.byte_len());
        }
    }
}
