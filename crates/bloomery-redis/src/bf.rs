//! `BF.*`: RedisBloom's Bloom-filter commands on bloomery's [`ScalableBloomFilter`], with
//! RedisBloom's replies (booleans in RESP3), partial-failure shapes and error texts.

use bloomery::{Error, Filter, Hashed, ScalableBloomFilter};
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args;
use crate::config;
use crate::dump;
use crate::errors::{create_error, lib_error, BF_FULL, ITEM_EXISTS, NOT_FOUND, NO_MEMORY_FILTER};
use crate::keys;
use crate::limits::{
    BF_DEFAULT_CAPACITY, BF_DEFAULT_ERROR_RATE, BF_DEFAULT_EXPANSION, BF_MAX_EXPANSION,
    BF_TIGHTENING_GROWN, BF_TIGHTENING_NONSCALING, BF_TIGHTENING_RESERVED,
};
use crate::reply;
use crate::types::BF_TYPE;

/// Creation parameters.
#[derive(Debug, Clone, Copy)]
struct Params {
    capacity: u64,
    error_rate: f64,
    expansion: u32,
    scaling: bool,
    /// Whether the capacity was given (`BF.RESERVE`, `BF.INSERT CAPACITY`).
    reserved: bool,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            capacity: BF_DEFAULT_CAPACITY,
            error_rate: BF_DEFAULT_ERROR_RATE,
            expansion: BF_DEFAULT_EXPANSION,
            scaling: true,
            reserved: false,
        }
    }
}

impl Params {
    /// The tightening ratio: how the error budget is split between the sub-filters (see
    /// [`BF_TIGHTENING_GROWN`] and the other two).
    fn tightening(&self) -> f64 {
        if !self.scaling {
            BF_TIGHTENING_NONSCALING
        } else if self.reserved {
            BF_TIGHTENING_RESERVED
        } else {
            BF_TIGHTENING_GROWN
        }
    }
}

fn create(p: Params) -> Result<ScalableBloomFilter, RedisError> {
    let key = format!(
        "bf {} {} {} {} {} {}",
        p.capacity,
        p.error_rate.to_bits(),
        p.expansion,
        p.scaling,
        p.reserved,
        config::max_bytes()
    );
    crate::templates::get_or_make(&key, || {
        ScalableBloomFilter::builder()
            .capacity(p.capacity)
            .fpr(p.error_rate)
            .growth(p.expansion)
            .tightening(p.tightening())
            .scaling(p.scaling)
            .max_bytes(config::max_bytes())
            .try_build()
            .map_err(create_error(NO_MEMORY_FILTER))
    })
}

/// Run `f` on the filter under `key`, creating it with `create_with` if absent (`None`: reply
/// `ERR not found` instead).
fn write<R>(
    ctx: &Context,
    key: &RedisString,
    create_with: Option<Params>,
    f: impl FnOnce(&mut ScalableBloomFilter) -> R,
) -> Result<R, RedisError> {
    let make = create_with.map(|p| move || create(p));
    let make = make
        .as_ref()
        .map(|m| m as &dyn Fn() -> Result<ScalableBloomFilter, RedisError>);
    keys::write(ctx, &BF_TYPE, key, make, NOT_FOUND, f)
}

/// The growth refusal of a filter that needed a new sub-filter and could not have it.
const CANNOT_GROW: &str = "ERR the filter cannot grow (MAX-BYTES limit or growth limit reached)";

/// Add each item, answering per item as RedisBloom does: `true`/`1` new, `false`/`0` present;
/// a full non-scaling filter answers its error and ends the array there; a filter that cannot
/// grow answers an error for the item and goes on with the next. Once growth has been refused,
/// later items of the same command are not retried (sizing a sub-filter that cannot be
/// allocated is not free): they answer `false` if present, the same error if not.
fn add_all(filter: &mut ScalableBloomFilter, items: &[RedisString]) -> Vec<RedisValue> {
    // every item hashed first, its blocks prefetched a few items ahead of its insert, so the
    // cache misses of a large filter overlap
    let hashes: Vec<Hashed> = (items.iter())
        .map(|it| filter.hasher().hash(it.as_slice()))
        .collect();
    let mut out = Vec::with_capacity(items.len());
    let mut refused = false;
    for (i, &h) in hashes.iter().enumerate() {
        if let Some(&ahead) = hashes.get(i + ADD_AHEAD) {
            filter.prefetch_hashed(ahead);
        }
        if refused {
            out.push(if filter.contains_hashed(h) {
                reply::bool(false)
            } else {
                RedisValue::StaticError(CANNOT_GROW)
            });
            continue;
        }
        match filter.try_insert_hashed(h) {
            Ok(new) => out.push(reply::bool(new)),
            Err(Error::Full { .. }) => {
                out.push(RedisValue::StaticError(BF_FULL));
                break;
            }
            Err(_) => {
                refused = true;
                out.push(RedisValue::StaticError(CANNOT_GROW));
            }
        }
    }
    out
}

/// How many items ahead `BF.MADD` and `BF.INSERT` prefetch (each item's block in every
/// sub-filter: a few lines per item in flight).
const ADD_AHEAD: usize = 8;

/// An error rate as `BF.RESERVE` reads it.
fn reserve_error_rate(arg: &RedisString) -> Result<f64, RedisError> {
    let v = args::float(arg).ok_or(RedisError::Str("ERR bad error rate"))?;
    if v > 0.0 && v < 1.0 {
        Ok(v)
    } else {
        Err(RedisError::Str("ERR (0 < error rate range < 1) "))
    }
}

/// A capacity as `BF.RESERVE` reads it.
fn reserve_capacity(arg: &RedisString) -> Result<u64, RedisError> {
    let v = args::int(arg).ok_or(RedisError::Str("ERR bad capacity"))?;
    if v > 0 {
        Ok(v as u64)
    } else {
        Err(RedisError::Str("ERR (capacity should be larger than 0)"))
    }
}

const BAD_EXPANSION_RANGE: &str = "ERR expansion should be greater or equal to 1";
const EXPANSION_TOO_LARGE: &str = "ERR expansion must be in the range [1, 32768]";
const NONSCALING_EXPANSION: &str = "Nonscaling filters cannot expand";

/// `BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]`.
pub fn reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if !(4..=7).contains(&args.len()) {
        return Err(RedisError::WrongArity);
    }
    let mut p = Params {
        error_rate: reserve_error_rate(&args[2])?,
        capacity: reserve_capacity(&args[3])?,
        reserved: true,
        ..Params::default()
    };
    let rest = &args[4..];
    p.scaling = !rest.iter().any(|a| args::is(a, "NONSCALING"));
    let mut i = 0;
    while i < rest.len() {
        if args::is(&rest[i], "NONSCALING") {
            i += 1;
        } else if args::is(&rest[i], "EXPANSION") {
            let v = rest.get(i + 1).ok_or(RedisError::Str("ERR no expansion"))?;
            if !p.scaling {
                return Err(RedisError::Str(NONSCALING_EXPANSION));
            }
            let e = args::int(v).ok_or(RedisError::Str("ERR bad expansion"))?;
            if e < 1 {
                return Err(RedisError::Str(BAD_EXPANSION_RANGE));
            }
            p.expansion = u32::try_from(e)
                .ok()
                .filter(|&e| e <= BF_MAX_EXPANSION)
                .ok_or(RedisError::Str(EXPANSION_TOO_LARGE))?;
            i += 2;
        } else {
            return Err(RedisError::String(format!(
                "ERR unknown argument '{}'",
                rest[i].to_string_lossy()
            )));
        }
    }
    keys::must_be_missing(ctx, &args[1], ITEM_EXISTS)?;
    let filter = create(p)?;
    keys::create(ctx, &BF_TYPE, &args[1], ITEM_EXISTS, filter)
}

/// `BF.ADD key item`: `true`/`1` if the item was new, `false`/`0` if it may have been added
/// before; creates the filter with the defaults if the key is missing.
pub fn add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let r = write(ctx, &args[1], Some(Params::default()), |f| {
        f.try_insert(args[2].as_slice())
    })?;
    let new = r.map_err(add_error)?;
    crate::keys::written_through(ctx, &args[1]);
    Ok(reply::bool(new))
}

/// The reply of `BF.ADD` when the item could not be added.
pub fn add_error(e: Error) -> RedisError {
    match e {
        Error::Full { .. } => RedisError::Str(BF_FULL),
        Error::TooLarge { .. } => RedisError::Str(CANNOT_GROW),
        other => lib_error(other),
    }
}

/// `BF.MADD key item [item ...]`: per item as `BF.ADD`; a full non-scaling filter ends the
/// array with its error.
pub fn madd(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    let out = write(ctx, &args[1], Some(Params::default()), |f| {
        add_all(f, &args[2..])
    })?;
    crate::keys::written_through(ctx, &args[1]);
    Ok(RedisValue::Array(out))
}

/// `BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] ITEMS item...`:
/// as `BF.MADD`, creating the filter with the given parameters (unless `NOCREATE`).
pub fn insert(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 4 {
        return Err(RedisError::WrongArity);
    }
    let mut p = Params::default();
    let (mut nocreate, mut sized, mut expansion_given) = (false, false, false);
    let (mut capacity, mut error_rate, mut expansion) =
        (p.capacity as i64, p.error_rate, i64::from(p.expansion));
    let mut i = 2;
    let items = loop {
        let Some(a) = args.get(i) else {
            return Err(RedisError::WrongArity);
        };
        let value = || args.get(i + 1).ok_or(RedisError::WrongArity);
        if args::is(a, "ITEMS") {
            let items = &args[i + 1..];
            if items.is_empty() {
                return Err(RedisError::WrongArity);
            }
            break items;
        } else if args::is(a, "CAPACITY") {
            capacity = args::int(value()?).ok_or(RedisError::Str("Bad capacity"))?;
            sized = true;
            p.reserved = true;
            i += 2;
        } else if args::is(a, "ERROR") {
            error_rate = args::float(value()?).ok_or(RedisError::Str("Bad error rate"))?;
            sized = true;
            i += 2;
        } else if args::is(a, "EXPANSION") {
            expansion = args::int(value()?).ok_or(RedisError::Str("Bad expansion"))?;
            expansion_given = true;
            i += 2;
        } else if args::is(a, "NOCREATE") {
            nocreate = true;
            i += 1;
        } else if args::is(a, "NONSCALING") {
            p.scaling = false;
            i += 1;
        } else {
            return Err(RedisError::Str("Unknown argument received"));
        }
    };
    if !(error_rate > 0.0 && error_rate < 1.0) || capacity < 1 || expansion < 1 {
        return Err(RedisError::Str("Bad argument received"));
    }
    if expansion > i64::from(BF_MAX_EXPANSION) {
        return Err(RedisError::Str(EXPANSION_TOO_LARGE));
    }
    if nocreate && sized {
        return Err(RedisError::Str(
            "ERR NOCREATE cannot be used together with CAPACITY or ERROR",
        ));
    }
    if expansion_given && !p.scaling {
        return Err(RedisError::Str(NONSCALING_EXPANSION));
    }
    p.capacity = capacity as u64;
    p.error_rate = error_rate;
    p.expansion = expansion as u32;
    let out = write(ctx, &args[1], (!nocreate).then_some(p), |f| {
        add_all(f, items)
    })?;
    crate::keys::written_through(ctx, &args[1]);
    Ok(RedisValue::Array(out))
}

/// `BF.EXISTS key item`: `true`/`1` if the item may have been added, `false`/`0` if certainly
/// not (also for a missing key).
pub fn exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    keys::read(
        ctx,
        &BF_TYPE,
        &args[1],
        |f: Option<&ScalableBloomFilter>| {
            reply::bool(f.is_some_and(|f| f.contains(args[2].as_slice())))
        },
    )
}

/// `BF.MEXISTS key item [item ...]`: per item as `BF.EXISTS`, answered through the filter's
/// batched query (each item's memory prefetched ahead of its probe, so the cache misses of a
/// large filter overlap).
pub fn mexists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    keys::read(
        ctx,
        &BF_TYPE,
        &args[1],
        |f: Option<&ScalableBloomFilter>| {
            let items: Vec<&[u8]> = args[2..].iter().map(RedisString::as_slice).collect();
            let mut found = vec![false; items.len()];
            // one answer slot per item: the batched query cannot refuse them
            if let Some(f) = f {
                let _ = f.contains_batch(&items, &mut found);
            }
            RedisValue::Array(found.into_iter().map(reply::bool).collect())
        },
    )
}

/// `BF.CARD key`: items added (0 for a missing key).
pub fn card(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    keys::read(
        ctx,
        &BF_TYPE,
        &args[1],
        |f: Option<&ScalableBloomFilter>| reply::int(f.map_or(0, |f| f.len())),
    )
}

/// `BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION]`.
///
/// All fields: a map in RESP3, the flat name/value array in RESP2. One field: `{name: value}`
/// in RESP3, `[value]` in RESP2, as RedisBloom answers. `Size` is the value's `MEMORY USAGE`
/// (without the key).
pub fn info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if !(2..=3).contains(&args.len()) {
        return Err(RedisError::WrongArity);
    }
    let fields = keys::read_existing(
        ctx,
        &BF_TYPE,
        &args[1],
        NOT_FOUND,
        |f: &ScalableBloomFilter| {
            let expansion = if f.is_scaling() {
                reply::int(u64::from(f.growth()))
            } else {
                RedisValue::Null
            };
            [
                ("Capacity", "CAPACITY", reply::int(f.capacity())),
                ("Size", "SIZE", reply::int(crate::types::value_size(f))),
                (
                    "Number of filters",
                    "FILTERS",
                    reply::int(f.filters().len() as u64),
                ),
                ("Number of items inserted", "ITEMS", reply::int(f.len())),
                ("Expansion rate", "EXPANSION", expansion),
            ]
        },
    )?;
    if let Some(which) = args.get(2) {
        let (name, _, v) = fields
            .into_iter()
            .find(|(_, kw, _)| args::is(which, kw))
            .ok_or(RedisError::Str("Invalid information value"))?;
        return reply::field(ctx, name, v);
    }
    reply::map(
        ctx,
        fields.into_iter().map(|(name, _, v)| (name, v)).collect(),
    )
}

/// `BF.SCANDUMP key iterator`.
pub fn scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::scandump::<ScalableBloomFilter>(ctx, args, &BF_TYPE)
}

/// `BF.LOADCHUNK key iterator data`.
pub fn loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::loadchunk::<ScalableBloomFilter>(ctx, args, &BF_TYPE)
}

/// `BF.MERGE dest numkeys src [src ...]`: `dest` becomes the union of itself (when it exists)
/// and the sources, which must have been made with the same parameters; a missing `dest` is
/// created as a copy of the first source. Filters that grew to different numbers of
/// sub-filters merge (the result has the most); any other difference of shape is refused and
/// nothing changes. `OK`.
pub fn merge(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if keys::answered_key_positions(ctx, &args, true) {
        return Ok(RedisValue::NoReply);
    }
    if args.len() < 4 {
        return Err(RedisError::WrongArity);
    }
    let n = args::int(&args[2])
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n >= 1)
        .ok_or(RedisError::Str("ERR numkeys must be a positive integer"))?;
    if args.len() != 3 + n {
        return Err(RedisError::Str(
            "ERR the number of source keys does not match numkeys",
        ));
    }
    let sources = &args[3..];
    let existing = keys::read(
        ctx,
        &BF_TYPE,
        &args[1],
        |d: Option<&ScalableBloomFilter>| d.cloned(),
    )?;
    let mut result = match existing {
        Some(d) => d,
        None => keys::read_existing(
            ctx,
            &BF_TYPE,
            &sources[0],
            NOT_FOUND,
            |s: &ScalableBloomFilter| s.clone(),
        )?,
    };
    for key in sources {
        keys::read_existing(ctx, &BF_TYPE, key, NOT_FOUND, |s: &ScalableBloomFilter| {
            result.union_grown(s)
        })?
        .map_err(|e| match e {
            Error::TooLarge { requested, limit } => {
                RedisError::String(crate::errors::too_large(requested, limit))
            }
            other => RedisError::String(format!("ERR filters cannot be merged: {other}")),
        })?;
    }
    keys::replace(ctx, &BF_TYPE, &args[1], result)?;
    crate::keys::written(ctx, &args[1]);
    Ok(RedisValue::SimpleStringStatic("OK"))
}
