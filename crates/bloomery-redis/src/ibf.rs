//! `IBF.*`: bloomery's Iterative Bloom Filter ([`IterativeBloomFilter`]) with the `BF.*`
//! conventions; repeats are counted in the filter's bits.

use bloomery::{IterativeBloomFilter, Stats};
use redis_module::{Context, RedisError, RedisResult, RedisString};

use crate::config;
use crate::dump;
use crate::errors::lib_error;
use crate::limits::{OWN_DEFAULT_CAPACITY, OWN_DEFAULT_ERROR_RATE};
use crate::own::{
    add_generic, count_generic, exists_generic, info_generic, reserve_generic, size, sizing,
};
use crate::reply::int;
use crate::types::IBF_TYPE;

fn build(capacity: u64, error: f64) -> Result<IterativeBloomFilter, RedisError> {
    let key = format!(
        "ibf {} {} {}",
        capacity,
        error.to_bits(),
        config::max_bytes()
    );
    crate::templates::get_or_make(&key, || {
        IterativeBloomFilter::builder()
            .capacity(capacity)
            .fpr(error)
            .max_bytes(config::max_bytes())
            .try_build()
            .map_err(lib_error)
    })
}

fn default() -> Result<IterativeBloomFilter, RedisError> {
    build(OWN_DEFAULT_CAPACITY, OWN_DEFAULT_ERROR_RATE)
}

/// `IBF.RESERVE key capacity error`.
pub fn reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 4 {
        return Err(RedisError::WrongArity);
    }
    let (capacity, error) = sizing(&args)?;
    let filter = build(capacity, error)?;
    reserve_generic(ctx, &IBF_TYPE, &args[1], filter)
}

/// `IBF.ADD key item`: 1 if the item was new, 0 for a repeat (which is counted).
pub fn add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    add_generic(ctx, &IBF_TYPE, &args, &default)
}

/// `IBF.EXISTS key item`.
pub fn exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    exists_generic::<IterativeBloomFilter>(ctx, &IBF_TYPE, &args)
}

/// `IBF.COUNT key item`: the observed count (0 when absent).
pub fn count(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    count_generic::<IterativeBloomFilter>(ctx, &IBF_TYPE, &args)
}

/// `IBF.INFO key`.
pub fn info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    info_generic(ctx, &IBF_TYPE, &args, |f: &IterativeBloomFilter| {
        vec![
            ("Capacity", int(Stats::capacity(f))),
            ("Size", size(f)),
            ("Number of bits", int(f.bits())),
            ("Number of hash functions", int(u64::from(f.hashes()))),
            ("Number of items inserted", int(f.total_inserts())),
            ("Distinct items", int(f.distinct_inserts())),
            ("Repeats counted", int(f.repeats_counted())),
            ("Counting stopped", int(u64::from(f.counting_stopped()))),
        ]
    })
}

/// `IBF.SCANDUMP key iterator`.
pub fn scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::scandump::<IterativeBloomFilter>(ctx, args, &IBF_TYPE)
}

/// `IBF.LOADCHUNK key iterator data`.
pub fn loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::loadchunk::<IterativeBloomFilter>(ctx, args, &IBF_TYPE)
}
