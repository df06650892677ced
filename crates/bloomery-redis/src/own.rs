//! Helpers shared by [`crate::counting`] (`CBF.*`, `BCBF.*`), [`crate::ibf`] and [`crate::mlbf`]:
//! bloomery's own filters with the `BF.*` conventions — the counting Bloom filter in its
//! classic ([`CountingBloomFilter`](bloomery::CountingBloomFilter)) and blocked
//! ([`BlockedCountingBloomFilter`](bloomery::BlockedCountingBloomFilter)) layouts (deletions),
//! the Iterative Bloom Filter ([`IterativeBloomFilter`](bloomery::IterativeBloomFilter), small
//! per-item counts without counters) and the multi-layer URL filter.
//!
//! `RESERVE key capacity error [...]` creates; `ADD` auto-creates with `BF.ADD`'s defaults
//! (capacity 100, error 0.01); `ADD`, `EXISTS` and `DEL` answer booleans (`true`/`false` in
//! RESP3, `1`/`0` in RESP2) like `BF.*`; `EXISTS`/`COUNT` answer `false`/0 for a missing key;
//! `INFO` and `DEL` answer `ERR not found` for one. Sizes are bounded by `MAX-BYTES` like every other type.

use bloomery::{Count, Filter, Remove, RemoveError};
use redis_module::native_types::RedisType;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args;
use crate::errors::{ITEM_EXISTS, NOT_FOUND};
use crate::keys;
use crate::limits::COUNTER_BITS;
use crate::reply;
use crate::types::{value_size, Structure};

/// `RESERVE`: store `filter` under a key that must not exist.
pub(crate) fn reserve_generic<T: Structure>(
    ctx: &Context,
    ty: &RedisType,
    key: &RedisString,
    filter: T,
) -> RedisResult {
    keys::create(ctx, ty, key, ITEM_EXISTS, filter)
}

/// Run `f` on the structure under `key`, created with `create` if missing.
pub(crate) fn with_filter<T: Structure, R>(
    ctx: &Context,
    ty: &RedisType,
    key: &RedisString,
    create: Option<&dyn Fn() -> Result<T, RedisError>>,
    f: impl FnOnce(&mut T) -> R,
) -> Result<R, RedisError> {
    keys::write(ctx, ty, key, create, NOT_FOUND, f)
}

pub(crate) fn add_generic<T: Structure + Filter>(
    ctx: &Context,
    ty: &RedisType,
    args: &[RedisString],
    create: &dyn Fn() -> Result<T, RedisError>,
) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let new = with_filter(ctx, ty, &args[1], Some(create), |f: &mut T| {
        f.insert(args[2].as_slice())
    })?;
    crate::keys::written(ctx, &args[1]);
    Ok(reply::bool(new))
}

pub(crate) fn exists_generic<T: Structure + Filter>(
    ctx: &Context,
    ty: &RedisType,
    args: &[RedisString],
) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    keys::read(ctx, ty, &args[1], |f: Option<&T>| {
        reply::bool(f.is_some_and(|f| f.contains(args[2].as_slice())))
    })
}

pub(crate) fn count_generic<T: Structure + Count>(
    ctx: &Context,
    ty: &RedisType,
    args: &[RedisString],
) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    keys::read(ctx, ty, &args[1], |f: Option<&T>| {
        reply::int(f.map_or(0, |f| f.count(args[2].as_slice())))
    })
}

/// `capacity error` at `args[2..4]`, with BF.RESERVE's error strings (the error rate is
/// checked first, as BF.RESERVE does).
pub(crate) fn sizing(args: &[RedisString]) -> Result<(u64, f64), RedisError> {
    let error = args::float(&args[3]).ok_or(RedisError::Str("ERR bad error rate"))?;
    if !(error > 0.0 && error < 1.0) {
        return Err(RedisError::Str("ERR (0 < error rate range < 1) "));
    }
    let capacity = args::int(&args[2]).ok_or(RedisError::Str("ERR bad capacity"))?;
    if capacity < 1 {
        return Err(RedisError::Str("ERR (capacity should be larger than 0)"));
    }
    Ok((capacity as u64, error))
}

/// `RESERVE key capacity error [COUNTERBITS w]` of the counting filters (`CBF.*`, `BCBF.*`):
/// capacity, error rate and counter width (w in 1..=32, `default_bits` when absent), with
/// BF.RESERVE's error strings, checked in that order after the arity.
pub(crate) fn counting_sizing(
    args: &[RedisString],
    default_bits: u32,
) -> Result<(u64, f64, u32), RedisError> {
    if args.len() != 4 && args.len() != 6 {
        return Err(RedisError::WrongArity);
    }
    let (capacity, error) = sizing(args)?;
    let mut bits = default_bits;
    if args.len() == 6 {
        if !args::is(&args[4], "COUNTERBITS") {
            return Err(unknown(&args[4]));
        }
        bits = args::int_in(&args[5], 1, i64::from(COUNTER_BITS.1))
            .ok_or(RedisError::Str("ERR bad counter bits (1..=32)"))?;
    }
    Ok((capacity, error, bits))
}

/// `DEL key item` of the counting filters: 1; an item that is certainly absent is refused with
/// `ERR item not present` and nothing changed (removing it would create false negatives for
/// other items); `ERR not found` for a missing key. Replicated only when it succeeded.
pub(crate) fn del_generic<T: Structure + Remove>(
    ctx: &Context,
    ty: &RedisType,
    args: &[RedisString],
) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    with_filter(ctx, ty, &args[1], None, |f: &mut T| {
        f.remove(args[2].as_slice())
    })?
    .map_err(|e| match e {
        RemoveError::NotPresent => RedisError::Str("ERR item not present"),
        other => RedisError::String(format!("ERR {other}")),
    })?;
    crate::keys::written(ctx, &args[1]);
    Ok(reply::bool(true))
}

/// `INFO key`: the name-value pairs `fields` gives for the structure (a RESP3 map, a RESP2
/// array); `ERR not found` for a missing key.
pub(crate) fn info_generic<T: Structure>(
    ctx: &Context,
    ty: &RedisType,
    args: &[RedisString],
    fields: impl FnOnce(&T) -> Vec<(&'static str, RedisValue)>,
) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let pairs = keys::read_existing(ctx, ty, &args[1], NOT_FOUND, fields)?;
    reply::map(ctx, pairs)
}

/// The `Size` field of `INFO`: the value's `MEMORY USAGE` without the key.
pub(crate) fn size<T: Structure>(f: &T) -> RedisValue {
    reply::int(value_size(f))
}

/// An option the command does not know.
pub(crate) fn unknown(arg: &RedisString) -> RedisError {
    RedisError::String(format!("ERR unknown argument '{}'", arg.to_string_lossy()))
}
