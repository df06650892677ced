//! Helpers shared by [`crate::cbf`], [`crate::bcbf`], [`crate::ibf`] and [`crate::mlbf`]:
//! bloomery's own filters with the `BF.*` conventions — the counting Bloom filter in its
//! classic ([`CountingBloomFilter`](bloomery::CountingBloomFilter)) and blocked
//! ([`BlockedCountingBloomFilter`](bloomery::BlockedCountingBloomFilter)) layouts (deletions),
//! the Iterative Bloom Filter ([`IterativeBloomFilter`](bloomery::IterativeBloomFilter), small
//! per-item counts without counters) and the multi-layer URL filter.
//!
//! `RESERVE key capacity error [...]` creates; `ADD` auto-creates with `BF.ADD`'s defaults
//! (capacity 100, error 0.01); `EXISTS`/`COUNT` answer 0 for a missing key; `INFO` and `DEL`
//! answer `ERR not found` for one. Sizes are bounded by `MAX-BYTES` like every other type.

use bloomery::{Count, Error, Filter, Remove, RemoveError};
use redis_module::native_types::RedisType;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::{self, ArgError};
use crate::bf::reply_map;
use crate::types::{Slot, Structure};

/// Capacity of auto-created filters (`BF.ADD`'s default).
pub const DEFAULT_CAPACITY: u64 = 100;
/// Error rate of auto-created filters.
pub const DEFAULT_ERROR: f64 = 0.01;

pub(crate) const LOADING: &str = "ERR filter is being loaded (LOADCHUNK in progress)";

pub(crate) fn lib_error(e: Error) -> RedisError {
    match e {
        Error::TooLarge { requested, limit } => RedisError::String(format!(
            "ERR filter would need {requested} bytes, over the module's MAX-BYTES limit of {limit}"
        )),
        other => RedisError::String(format!("ERR {other}")),
    }
}

pub(crate) fn int(v: u64) -> RedisValue {
    RedisValue::Integer(i64::try_from(v).unwrap_or(i64::MAX))
}

pub(crate) fn with_filter<T: Structure, R>(
    ctx: &Context,
    ty: &RedisType,
    key: &RedisString,
    create: Option<&dyn Fn() -> Result<T, RedisError>>,
    f: impl FnOnce(&mut T) -> R,
) -> Result<R, RedisError> {
    let k = ctx.open_key_writable(key);
    match k
        .get_value::<Slot<T>>(ty)
        .map_err(|_| RedisError::WrongType)?
    {
        Some(Slot::Ready(filter)) => Ok(f(filter)),
        Some(Slot::Loading(_)) => Err(RedisError::Str(LOADING)),
        None => {
            let make = create.ok_or(RedisError::Str("ERR not found"))?;
            let mut filter = make()?;
            let r = f(&mut filter);
            k.set_value(ty, Slot::Ready(filter))?;
            Ok(r)
        }
    }
}

pub(crate) fn read<T: Structure, R>(
    ctx: &Context,
    ty: &RedisType,
    key: &RedisString,
    f: impl FnOnce(Option<&T>) -> R,
) -> Result<R, RedisError> {
    let k = ctx.open_key(key);
    match k
        .get_value::<Slot<T>>(ty)
        .map_err(|_| RedisError::WrongType)?
    {
        Some(Slot::Ready(filter)) => Ok(f(Some(filter))),
        Some(Slot::Loading(_)) => Err(RedisError::Str(LOADING)),
        None => Ok(f(None)),
    }
}

pub(crate) fn reserve_generic<T: Structure>(
    ctx: &Context,
    ty: &RedisType,
    key: &RedisString,
    filter: T,
) -> RedisResult {
    let k = ctx.open_key_writable(key);
    if !k.is_empty() {
        return Err(RedisError::Str("ERR item exists"));
    }
    k.set_value(ty, Slot::Ready(filter))?;
    ctx.replicate_verbatim();
    Ok(RedisValue::SimpleStringStatic("OK"))
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
    ctx.replicate_verbatim();
    Ok(RedisValue::Integer(i64::from(new)))
}

pub(crate) fn exists_generic<T: Structure + Filter>(
    ctx: &Context,
    ty: &RedisType,
    args: &[RedisString],
) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    read(ctx, ty, &args[1], |f: Option<&T>| {
        RedisValue::Integer(i64::from(f.is_some_and(|f| f.contains(args[2].as_slice()))))
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
    read(ctx, ty, &args[1], |f: Option<&T>| {
        int(f.map_or(0, |f| f.count(args[2].as_slice())))
    })
}

/// `capacity error` at `args[2..4]`, with BF.RESERVE's error strings.
pub(crate) fn sizing(args: &[RedisString]) -> Result<(u64, f64), RedisError> {
    let error = args::error_rate(&args[3])?;
    let capacity = args::capacity(&args[2])?;
    Ok((capacity, error))
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
            return Err(ArgError::UnknownOption(args[4].to_string_lossy()).into());
        }
        bits = args::bounded(
            &args[5],
            1,
            i64::from(bloomery::MAX_COUNTER_WIDTH),
            ArgError::Other("ERR bad counter bits (1..=32)"),
        )?;
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
    ctx.replicate_verbatim();
    Ok(RedisValue::Integer(1))
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
    let pairs = read(ctx, ty, &args[1], |f: Option<&T>| f.map(fields))?
        .ok_or(RedisError::Str("ERR not found"))?;
    reply_map(ctx, pairs)
}

/// The `Size` field of `INFO`: bytes of storage plus the structure itself.
pub(crate) fn size<T: Structure>(f: &T) -> RedisValue {
    int(f.storage_bytes() + std::mem::size_of_val(f) as u64)
}
