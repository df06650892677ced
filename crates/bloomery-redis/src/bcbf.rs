//! `BCBF.*`: bloomery's blocked counting Bloom filter ([`BlockedCountingBloomFilter`], library
//! module [`bloomery::blocked_counting`]) with the `BF.*` conventions — the counting filter of
//! seed 002 §2.5 (w-bit saturating counters, so items can be deleted) in the blocked layout: an
//! item's k counters sit in one 64-byte line.
//!
//! The commands mirror `CBF.*` ([`crate::cbf`]) — arguments, replies, errors, flags and
//! replication, with the one exception below — and have the same semantics: `DEL` refuses an item that is certainly absent (one of
//! its counters is zero) and changes nothing; `COUNT` is the minimum of the item's counters;
//! saturated counters are never decremented. Only the layout differs, and so `INFO`: it reports
//! the number of lines and the counters per line (`⌊512 / w⌋`).
//!
//! Pick `BCBF.*` over `CBF.*` when the filter outgrows the CPU caches: each operation is one
//! cache miss instead of k (2–3× faster single-item operations in the library), for about 13%
//! more memory at 1% false positives (more at lower rates, 35% at 0.1%).
//!
//! The exception: `BCBF.RESERVE` refuses error rates so close to 1 that a line would hold more
//! than [`MAX_ITEMS_PER_LINE`] items on average (see there; above about 0.9988 with 4-bit
//! counters and a capacity over 50000), because sizing such a shape costs the library's blocked model time
//! and memory in proportion to the items per line.

use bloomery::blocked_counting::{cells_per_line, DEFAULT_COUNTER_WIDTH};
use bloomery::params::bits_asymptotic;
use bloomery::{BlockedCountingBloomFilter, Filter, Stats};
use redis_module::{Context, RedisError, RedisResult, RedisString};

use crate::config;
use crate::dump;
use crate::own::{
    add_generic, count_generic, counting_sizing, del_generic, exists_generic, info_generic, int,
    lib_error, reserve_generic, size, DEFAULT_CAPACITY, DEFAULT_ERROR,
};
use crate::types::BCBF_TYPE;

/// Largest average number of items per line a reservation may ask for.
///
/// The library sizes the blocked layout with its exact model ([`bloomery::params::BlockedModel`]),
/// whose cost in time and memory (outside `MAX-BYTES`) grows with the items per line of the
/// shapes it tries: its occupancy distribution and per-occupancy rates run to about `λ + 14√λ`
/// entries for λ items per line. The first shape tried has `capacity / ⌈bits / ⌊512 / w⌋⌉`
/// items per line with `bits = capacity · ln(1/error) / ln²2` (so about
/// `⌊512 / w⌋ · ln²2 / ln(1/error)` for large capacities), which grows without bound as the
/// error rate nears 1: a single `RESERVE` with capacity 10⁸ and error 0.999999 would block the
/// server for minutes (debug build) and ask for gigabytes. Requests over this bound are refused
/// before sizing: error rates above about 0.9951 (1-bit counters), 0.9988 (4-bit) or 0.99985
/// (32-bit) for capacities over 50000. No useful filter is refused: such a filter answers
/// "maybe" to nearly everything.
pub const MAX_ITEMS_PER_LINE: u64 = 50_000;

/// Refuse shapes whose sizing would face more than [`MAX_ITEMS_PER_LINE`] items per line.
fn check_crowding(capacity: u64, error: f64, bits: u32) -> Result<(), RedisError> {
    let cells = cells_per_line(bits) as f64;
    let lines = (bits_asymptotic(capacity, error) / cells).ceil().max(1.0);
    let per_line = capacity as f64 / lines;
    if per_line > MAX_ITEMS_PER_LINE as f64 {
        return Err(RedisError::String(format!(
            "ERR error rate {error} too close to 1 for the blocked layout with {bits}-bit \
             counters: about {per_line:.0} items per line, at most {MAX_ITEMS_PER_LINE}"
        )));
    }
    Ok(())
}

fn build(capacity: u64, error: f64, bits: u32) -> Result<BlockedCountingBloomFilter, RedisError> {
    check_crowding(capacity, error, bits)?;
    BlockedCountingBloomFilter::builder()
        .capacity(capacity)
        .fpr(error)
        .counter_width(bits)
        .max_bytes(config::max_bytes())
        .try_build()
        .map_err(lib_error)
}

fn default() -> Result<BlockedCountingBloomFilter, RedisError> {
    build(DEFAULT_CAPACITY, DEFAULT_ERROR, DEFAULT_COUNTER_WIDTH)
}

/// `BCBF.RESERVE key capacity error [COUNTERBITS w]` (w in 1..=32, default 4; a line holds
/// `⌊512 / w⌋` counters).
pub fn reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let (capacity, error, bits) = counting_sizing(&args, DEFAULT_COUNTER_WIDTH)?;
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
        assert_eq!(Stats::capacity(&f), DEFAULT_CAPACITY);
        assert_eq!(
            f,
            BlockedCountingBloomFilter::try_new(DEFAULT_CAPACITY, DEFAULT_ERROR).unwrap()
        );
    }

    /// Every accepted width builds a small filter, and refuses absurd sizes with an error.
    #[test]
    fn every_width_builds_or_errs() {
        for bits in 1..=bloomery::counters::MAX_WIDTH {
            let f = build(100, 0.01, bits).unwrap();
            assert_eq!(f.counter_width(), bits);
            assert_eq!(f.cells_per_line(), u64::from(512 / bits));
            for (capacity, error) in [(i64::MAX as u64, 0.01), (i64::MAX as u64, 0.999)] {
                assert!(build(capacity, error, bits).is_err(), "{bits} {capacity}");
            }
        }
    }

    #[test]
    fn crowded_lines_are_refused_before_sizing() {
        // The bounds quoted in MAX_ITEMS_PER_LINE's docs.
        for (bits, ok, refused) in [
            (1, 0.995, 0.9952),
            (4, 0.9987, 0.9989),
            (32, 0.99984, 0.99986),
        ] {
            assert!(check_crowding(100_000_000, ok, bits).is_ok(), "{bits} {ok}");
            let e = check_crowding(100_000_000, refused, bits).unwrap_err();
            assert!(
                matches!(&e, RedisError::String(s) if s.contains("too close to 1")),
                "{e:?}"
            );
        }
        // Small capacities never crowd a line past the bound, whatever the rate.
        assert!(check_crowding(MAX_ITEMS_PER_LINE, 0.999_999_9, 1).is_ok());
        assert!(check_crowding(10_000, 0.999_999_9, 4).is_ok());
        assert!(build(10_000, 0.999_999_9, 4).is_ok());
        // Usual rates are far from it.
        for bits in 1..=32 {
            assert!(check_crowding(u64::MAX, 0.5, bits).is_ok(), "{bits}");
        }
    }
}
