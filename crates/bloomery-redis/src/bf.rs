//! `BF.*`: RedisBloom's Bloom-filter commands on bloomery's [`ScalableBloomFilter`].

use bloomery::{Error, Filter, ScalableBloomFilter};
use redis_module::{raw, Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::{self, ArgError};
use crate::config;
use crate::dump;
use crate::own;
use crate::types::{Slot, BF_TYPE};

/// Capacity of auto-created filters (RedisBloom's default).
pub const DEFAULT_CAPACITY: u64 = 100;
/// Error rate of auto-created filters.
pub const DEFAULT_ERROR_RATE: f64 = 0.01;
/// Expansion of auto-created filters.
pub const DEFAULT_EXPANSION: u32 = 2;
/// Largest EXPANSION accepted (RedisBloom's bound).
pub const MAX_EXPANSION: i64 = 32768;

/// Creation parameters.
#[derive(Debug, Clone, Copy)]
struct Params {
    capacity: u64,
    error_rate: f64,
    expansion: u32,
    scaling: bool,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            capacity: DEFAULT_CAPACITY,
            error_rate: DEFAULT_ERROR_RATE,
            expansion: DEFAULT_EXPANSION,
            scaling: true,
        }
    }
}

/// Library errors as error replies.
pub fn lib_error(e: Error) -> RedisError {
    match e {
        Error::Full { .. } => RedisError::Str("ERR non scaling filter is full"),
        Error::TooLarge { requested, limit } => RedisError::String(format!(
            "ERR filter would need {requested} bytes, over the module's MAX-BYTES limit of {limit}"
        )),
        other => RedisError::String(format!("ERR {other}")),
    }
}

fn create(p: Params) -> Result<ScalableBloomFilter, RedisError> {
    ScalableBloomFilter::builder()
        .capacity(p.capacity)
        .fpr(p.error_rate)
        .growth(p.expansion.max(1))
        .scaling(p.scaling)
        .max_bytes(config::max_bytes())
        .try_build()
        .map_err(lib_error)
}

/// Run `f` on the filter under `key`, creating it with `create_with` if absent (None: reply
/// "ERR not found" instead).
fn with_filter<R>(
    ctx: &Context,
    key: &RedisString,
    create_with: Option<Params>,
    f: impl FnOnce(&mut ScalableBloomFilter) -> R,
) -> Result<R, RedisError> {
    let make = create_with.map(|p| move || create(p));
    let make = make
        .as_ref()
        .map(|m| m as &dyn Fn() -> Result<ScalableBloomFilter, RedisError>);
    own::with_filter(ctx, &BF_TYPE, key, make, f)
}

/// Run `f` on the filter under `key` (None when the key is missing).
fn read<R>(
    ctx: &Context,
    key: &RedisString,
    f: impl FnOnce(Option<&ScalableBloomFilter>) -> R,
) -> Result<R, RedisError> {
    own::read(ctx, &BF_TYPE, key, f)
}

/// Add each item; a per-item error (full, or cannot grow) becomes an error element, like
/// RedisBloom. Once the filter has refused to grow, later items of the same command are not
/// retried (sizing a sub-filter that cannot be allocated is not free): they answer 0 if
/// present, the same error if not.
fn add_all(filter: &mut ScalableBloomFilter, items: &[RedisString]) -> Vec<RedisValue> {
    let mut refused: Option<&'static str> = None;
    items
        .iter()
        .map(|it| {
            if let Some(e) = refused {
                return if filter.contains(it.as_slice()) {
                    RedisValue::Integer(0)
                } else {
                    RedisValue::StaticError(e)
                };
            }
            match filter.try_insert(it.as_slice()) {
                Ok(new) => RedisValue::Integer(i64::from(new)),
                Err(e) => {
                    let msg = match lib_error(e) {
                        RedisError::Str(s) => s,
                        _ => CANNOT_GROW,
                    };
                    refused = Some(msg);
                    RedisValue::StaticError(msg)
                }
            }
        })
        .collect()
}

const CANNOT_GROW: &str = "ERR the filter cannot grow (MAX-BYTES limit or growth limit reached)";

/// `BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]`.
pub fn reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 4 {
        return Err(RedisError::WrongArity);
    }
    let mut p = Params {
        error_rate: args::error_rate(&args[2])?,
        capacity: args::capacity(&args[3])?,
        ..Params::default()
    };
    let mut expansion_given = false;
    let mut i = 4;
    while i < args.len() {
        if args::is(&args[i], "NONSCALING") {
            p.scaling = false;
            i += 1;
        } else if args::is(&args[i], "EXPANSION") {
            let v = args.get(i + 1).ok_or(RedisError::WrongArity)?;
            p.expansion = args::bounded(v, 1, MAX_EXPANSION, ArgError::BadExpansion)?;
            expansion_given = true;
            i += 2;
        } else {
            return Err(ArgError::UnknownOption(args[i].to_string_lossy()).into());
        }
    }
    if expansion_given && !p.scaling {
        return Err(ArgError::NonScalingExpansion.into());
    }
    let k = ctx.open_key_writable(&args[1]);
    if !k.is_empty() {
        return Err(RedisError::Str("ERR item exists"));
    }
    let filter = create(p)?;
    k.set_value(&BF_TYPE, Slot::Ready(filter))?;
    ctx.replicate_verbatim();
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// `BF.ADD key item`.
pub fn add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let r = with_filter(ctx, &args[1], Some(Params::default()), |f| {
        f.try_insert(args[2].as_slice())
    })?;
    let new = r.map_err(lib_error)?;
    ctx.replicate_verbatim();
    Ok(RedisValue::Integer(i64::from(new)))
}

/// `BF.MADD key item [item ...]`.
pub fn madd(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    let out = with_filter(ctx, &args[1], Some(Params::default()), |f| {
        add_all(f, &args[2..])
    })?;
    ctx.replicate_verbatim();
    Ok(RedisValue::Array(out))
}

/// `BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] ITEMS item...`.
pub fn insert(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 4 {
        return Err(RedisError::WrongArity);
    }
    let mut p = Params::default();
    let (mut nocreate, mut sized, mut expansion_given) = (false, false, false);
    let mut i = 2;
    let items = loop {
        let Some(a) = args.get(i) else {
            return Err(ArgError::NoItems.into());
        };
        let value = || args.get(i + 1).ok_or(RedisError::WrongArity);
        if args::is(a, "ITEMS") {
            let items = &args[i + 1..];
            if items.is_empty() {
                return Err(ArgError::NoItems.into());
            }
            break items;
        } else if args::is(a, "CAPACITY") {
            p.capacity = args::capacity(value()?)?;
            sized = true;
            i += 2;
        } else if args::is(a, "ERROR") {
            p.error_rate = args::error_rate(value()?)?;
            sized = true;
            i += 2;
        } else if args::is(a, "EXPANSION") {
            p.expansion = args::bounded(value()?, 1, MAX_EXPANSION, ArgError::BadExpansion)?;
            expansion_given = true;
            i += 2;
        } else if args::is(a, "NOCREATE") {
            nocreate = true;
            i += 1;
        } else if args::is(a, "NONSCALING") {
            p.scaling = false;
            i += 1;
        } else {
            return Err(ArgError::UnknownOption(a.to_string_lossy()).into());
        }
    };
    if nocreate && sized {
        return Err(ArgError::NoCreateWithOptions.into());
    }
    if expansion_given && !p.scaling {
        return Err(ArgError::NonScalingExpansion.into());
    }
    let out = with_filter(ctx, &args[1], (!nocreate).then_some(p), |f| {
        add_all(f, items)
    })?;
    ctx.replicate_verbatim();
    Ok(RedisValue::Array(out))
}

/// `BF.EXISTS key item`.
pub fn exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    read(ctx, &args[1], |f| {
        RedisValue::Integer(i64::from(f.is_some_and(|f| f.contains(args[2].as_slice()))))
    })
}

/// `BF.MEXISTS key item [item ...]`.
pub fn mexists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    read(ctx, &args[1], |f| {
        RedisValue::Array(
            args[2..]
                .iter()
                .map(|it| {
                    RedisValue::Integer(i64::from(f.is_some_and(|f| f.contains(it.as_slice()))))
                })
                .collect(),
        )
    })
}

/// `BF.CARD key`: items added (0 for a missing key).
pub fn card(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    read(ctx, &args[1], |f| {
        RedisValue::Integer(f.map_or(0, |f| f.len()) as i64)
    })
}

fn int(v: u64) -> RedisValue {
    RedisValue::Integer(i64::try_from(v).unwrap_or(i64::MAX))
}

/// `BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION]`.
///
/// All fields: a map in RESP3, the flat name/value array in RESP2 (Redis flattens maps).
/// One field: a one-element array, as RedisBloom answers.
pub fn info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if !(2..=3).contains(&args.len()) {
        return Err(RedisError::WrongArity);
    }
    let fields = read(ctx, &args[1], |f| {
        f.map(|f| {
            let expansion = if f.is_scaling() {
                int(u64::from(f.growth()))
            } else {
                RedisValue::Null
            };
            [
                ("Capacity", "CAPACITY", int(f.capacity())),
                (
                    "Size",
                    "SIZE",
                    int(f.allocated_bytes() + std::mem::size_of_val(f) as u64),
                ),
                (
                    "Number of filters",
                    "FILTERS",
                    int(f.filters().len() as u64),
                ),
                ("Number of items inserted", "ITEMS", int(f.len())),
                ("Expansion rate", "EXPANSION", expansion),
            ]
        })
    })?
    .ok_or(RedisError::Str("ERR not found"))?;
    if let Some(which) = args.get(2) {
        let (_, _, v) = fields
            .into_iter()
            .find(|(_, kw, _)| args::is(which, kw))
            .ok_or(RedisError::Str("ERR Invalid information value"))?;
        return Ok(RedisValue::Array(vec![v]));
    }
    reply_map(
        ctx,
        fields.into_iter().map(|(name, _, v)| (name, v)).collect(),
    )
}

/// Reply with an ordered map: RESP3 map, flattened to name/value pairs by Redis for RESP2.
pub fn reply_map(ctx: &Context, pairs: Vec<(&'static str, RedisValue)>) -> RedisResult {
    raw::reply_with_map(ctx.ctx, pairs.len() as std::os::raw::c_long);
    for (name, v) in pairs {
        ctx.reply(Ok(RedisValue::SimpleStringStatic(name)));
        ctx.reply(Ok(v));
    }
    Ok(RedisValue::NoReply)
}

/// `BF.SCANDUMP key iterator`.
pub fn scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::scandump::<ScalableBloomFilter>(ctx, args, &BF_TYPE)
}

/// `BF.LOADCHUNK key iterator data`.
pub fn loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::loadchunk::<ScalableBloomFilter>(ctx, args, &BF_TYPE)
}
