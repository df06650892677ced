//! `CBF.*`: bloomery's counting Bloom filter ([`CountingBloomFilter`]) with the `BF.*`
//! conventions; `DEL` refuses items that are certainly absent.

use bloomery::{CountingBloomFilter, Filter, Remove, Stats};
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::{self, ArgError};
use crate::bf::reply_map;
use crate::config;
use crate::dump;
use crate::own::{
    add_generic, count_generic, exists_generic, int, lib_error, read, reserve_generic, sizing,
    with_filter, DEFAULT_CAPACITY, DEFAULT_ERROR,
};
use crate::types::{Structure, CBF_TYPE};

fn build(capacity: u64, error: f64, bits: u32) -> Result<CountingBloomFilter, RedisError> {
    CountingBloomFilter::builder()
        .capacity(capacity)
        .fpr(error)
        .counter_width(bits)
        .max_bytes(config::max_bytes())
        .try_build()
        .map_err(lib_error)
}

fn default() -> Result<CountingBloomFilter, RedisError> {
    build(
        DEFAULT_CAPACITY,
        DEFAULT_ERROR,
        bloomery::counting::DEFAULT_COUNTER_WIDTH,
    )
}

/// `CBF.RESERVE key capacity error [COUNTERBITS w]` (w in 1..=32, default 4).
pub fn reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 4 && args.len() != 6 {
        return Err(RedisError::WrongArity);
    }
    let (capacity, error) = sizing(&args)?;
    let mut bits = bloomery::counting::DEFAULT_COUNTER_WIDTH;
    if args.len() == 6 {
        if !args::is(&args[4], "COUNTERBITS") {
            return Err(ArgError::UnknownOption(args[4].to_string_lossy()).into());
        }
        bits = args::bounded(
            &args[5],
            1,
            i64::from(bloomery::counters::MAX_WIDTH),
            ArgError::Other("ERR bad counter bits (1..=32)"),
        )?;
    }
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
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    with_filter(
        ctx,
        &CBF_TYPE,
        &args[1],
        None,
        |f: &mut CountingBloomFilter| f.remove(args[2].as_slice()),
    )?
    .map_err(|e| match e {
        bloomery::RemoveError::NotPresent => RedisError::Str("ERR item not present"),
        other => RedisError::String(format!("ERR {other}")),
    })?;
    ctx.replicate_verbatim();
    Ok(RedisValue::Integer(1))
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
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let pairs = read(
        ctx,
        &CBF_TYPE,
        &args[1],
        |f: Option<&CountingBloomFilter>| {
            f.map(|f| {
                vec![
                    ("Capacity", int(Stats::capacity(f))),
                    (
                        "Size",
                        int(f.storage_bytes() + std::mem::size_of_val(f) as u64),
                    ),
                    ("Number of counters", int(f.counter_len())),
                    ("Counter bits", int(u64::from(f.counter_width()))),
                    ("Number of hash functions", int(u64::from(f.hashes()))),
                    ("Number of items inserted", int(f.len())),
                    ("Saturated counters", int(f.saturated_counters())),
                ]
            })
        },
    )?
    .ok_or(RedisError::Str("ERR not found"))?;
    reply_map(ctx, pairs)
}

/// `CBF.SCANDUMP key iterator`.
pub fn scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::scandump::<CountingBloomFilter>(ctx, args, &CBF_TYPE)
}

/// `CBF.LOADCHUNK key iterator data`.
pub fn loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::loadchunk::<CountingBloomFilter>(ctx, args, &CBF_TYPE)
}
