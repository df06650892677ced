//! `CBF.*`: bloomery's counting Bloom filter ([`CountingBloomFilter`]) with the `BF.*`
//! conventions; `DEL` refuses items that are certainly absent. `BCBF.*` ([`crate::bcbf`]) is
//! the same family on the blocked layout.

use bloomery::{CountingBloomFilter, Filter, Stats};
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
use crate::types::CBF_TYPE;

fn build(capacity: u64, error: f64, bits: u32) -> Result<CountingBloomFilter, RedisError> {
    let key = format!(
        "cbf {} {} {} {}",
        capacity,
        error.to_bits(),
        bits,
        config::max_bytes()
    );
    crate::templates::get_or_make(&key, || {
        CountingBloomFilter::builder()
            .capacity(capacity)
            .fpr(error)
            .counter_width(bits)
            .max_bytes(config::max_bytes())
            .try_build()
            .map_err(lib_error)
    })
}

fn default() -> Result<CountingBloomFilter, RedisError> {
    build(OWN_DEFAULT_CAPACITY, OWN_DEFAULT_ERROR_RATE, COUNTER_BITS.0)
}

/// `CBF.RESERVE key capacity error [COUNTERBITS w]` (w in 1..=32, default 4).
pub fn reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let (capacity, error, bits) = counting_sizing(&args, COUNTER_BITS.0)?;
    let filter = build(capacity, error, bits)?;
    reserve_generic(ctx, &CBF_TYPE, &args[1], filter)
}

/// `CBF.ADD key item`: 1 if the item was new (one of its counters was zero), else 0.
pub fn add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    add_generic(ctx, &CBF_TYPE, &args, &default)
}

/// `CBF.DEL key item`: 1; an item that is certainly absent is refused with an error reply
/// (removing it would create false negatives for other items).
pub fn del(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    del_generic::<CountingBloomFilter>(ctx, &CBF_TYPE, &args)
}

/// `CBF.EXISTS key item`.
pub fn exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    exists_generic::<CountingBloomFilter>(ctx, &CBF_TYPE, &args)
}

/// `CBF.COUNT key item`: the minimum of the item's counters (an upper bound on its count).
pub fn count(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    count_generic::<CountingBloomFilter>(ctx, &CBF_TYPE, &args)
}

/// `CBF.INFO key`.
pub fn info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    info_generic(ctx, &CBF_TYPE, &args, |f: &CountingBloomFilter| {
        vec![
            ("Capacity", int(Stats::capacity(f))),
            ("Size", size(f)),
            ("Number of counters", int(f.counter_len())),
            ("Counter bits", int(u64::from(f.counter_width()))),
            ("Number of hash functions", int(u64::from(f.hashes()))),
            ("Number of items inserted", int(f.len())),
            ("Saturated counters", int(f.saturated_counters())),
        ]
    })
}

/// `CBF.SCANDUMP key iterator`.
pub fn scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::scandump::<CountingBloomFilter>(ctx, args, &CBF_TYPE)
}

/// `CBF.LOADCHUNK key iterator data`.
pub fn loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::loadchunk::<CountingBloomFilter>(ctx, args, &CBF_TYPE)
}
