//! `CMS.*`: RedisBloom's count-min sketch commands on bloomery's [`CountMinSketch32`].
//!
//! Counters are 32-bit, as RedisBloom 2.6's: an `INCRBY` that takes one of an item's counters
//! past `u32::MAX` leaves it at `u32::MAX` and answers `CMS: INCRBY overflow` in that item's
//! place (the other items are applied); `MERGE` with signed weights refuses a result with a
//! counter outside `0..=u32::MAX` or a negative total. The total count (`CMS.INFO`'s count)
//! stays at most `i64::MAX` (what a RESP integer carries): an `INCRBY` or `MERGE` that would
//! take it further is refused whole and changes nothing.

use bloomery::{Count, CountMinSketch, CountMinSketch32, Error};
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::{self, int};
use crate::config;
use crate::dump;
use crate::errors::{create_error, lib_error, NO_MEMORY_CMS};
use crate::keys;
use crate::limits::{CMS_MAX_DEPTH, CMS_MAX_TOTAL};
use crate::reply::{self, int as count};
use crate::types::CMS_TYPE;

const NO_KEY: &str = "CMS: key does not exist";
const EXISTS: &str = "CMS: key already exists";
const INCRBY_OVERFLOW: &str = "CMS: INCRBY overflow";
const MERGE_OVERFLOW: &str = "CMS: MERGE overflow";

fn prob(arg: &RedisString) -> Option<f64> {
    args::float(arg).filter(|&v| v > 0.0 && v < 1.0)
}

/// The dimensions `CMS.INITBYPROB ε δ` gives, RedisBloom's: `width = ⌈2/ε⌉`,
/// `depth = ⌈log₁₀ δ / log₁₀ 0.5⌉` evaluated in single precision as RedisBloom does (so the
/// same arguments give the same `CMS.INFO` and sketches that merge with RedisBloom-sized
/// ones made by `INITBYDIM`). `None` when they are out of range (width beyond 2^63, or more
/// than 64 rows: δ below about 5·10⁻²⁰).
pub fn dims_from_prob(epsilon: f64, delta: f64) -> Option<(u64, u32)> {
    let width = (2.0 / epsilon).ceil();
    let depth = ((delta as f32).log10() / 0.5f32.log10()).ceil();
    let ok = (1.0..9.2e18).contains(&width) && (1.0..=CMS_MAX_DEPTH as f32).contains(&depth);
    ok.then_some((width as u64, depth as u32))
}

fn create(ctx: &Context, key: &RedisString, width: u64, depth: u32) -> RedisResult {
    let sketch = CountMinSketch::builder()
        .dimensions(width, depth)
        .max_bytes(config::max_bytes())
        .try_build_u32()
        .map_err(create_error(NO_MEMORY_CMS))?;
    keys::create(ctx, &CMS_TYPE, key, EXISTS, sketch)
}

/// `CMS.INITBYDIM key width depth` (depth at most 64).
pub fn initbydim(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 4 {
        return Err(RedisError::WrongArity);
    }
    keys::must_be_missing(ctx, &args[1], EXISTS)?;
    let width = int(&args[2])
        .filter(|&w| w >= 1)
        .ok_or(RedisError::Str("CMS: invalid width"))?;
    let depth = int(&args[3])
        .filter(|&d| d >= 1)
        .ok_or(RedisError::Str("CMS: invalid depth"))?;
    // RedisBloom's order: a shape whose cell count overflows is invalid; one too big to
    // allocate is refused as such, before the row limit (64 here, none there) is checked.
    let cells = (width as u64)
        .checked_mul(depth as u64)
        .ok_or(RedisError::Str("CMS: invalid init arguments"))?;
    let bytes = cells.saturating_mul(4);
    if bytes > config::max_bytes() {
        return Err(create_error(NO_MEMORY_CMS)(Error::TooLarge {
            requested: bytes,
            limit: config::max_bytes(),
        }));
    }
    if depth > i64::from(CMS_MAX_DEPTH) {
        return Err(RedisError::Str("CMS: invalid depth"));
    }
    create(ctx, &args[1], width as u64, depth as u32)
}

/// `CMS.INITBYPROB key error probability`: sized as RedisBloom sizes it ([`dims_from_prob`]).
pub fn initbyprob(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 4 {
        return Err(RedisError::WrongArity);
    }
    keys::must_be_missing(ctx, &args[1], EXISTS)?;
    let epsilon = prob(&args[2]).ok_or(RedisError::Str("CMS: invalid overestimation value"))?;
    let delta = prob(&args[3]).ok_or(RedisError::Str("CMS: invalid prob value"))?;
    let (width, depth) =
        dims_from_prob(epsilon, delta).ok_or(RedisError::Str("CMS: invalid init arguments"))?;
    create(ctx, &args[1], width, depth)
}

fn with_sketch<R>(
    ctx: &Context,
    key: &RedisString,
    f: impl FnOnce(&mut CountMinSketch32) -> Result<R, RedisError>,
) -> Result<R, RedisError> {
    keys::write(ctx, &CMS_TYPE, key, None, NO_KEY, f)?
}

fn read<R>(
    ctx: &Context,
    key: &RedisString,
    f: impl FnOnce(&CountMinSketch32) -> R,
) -> Result<R, RedisError> {
    keys::read_existing(ctx, &CMS_TYPE, key, NO_KEY, f)
}

/// `CMS.INCRBY key item increment [item increment ...]`: each item's count right after its
/// increment, or `CMS: INCRBY overflow` in the place of an item whose count reached
/// `u32::MAX` (its counters saturate there, as RedisBloom 2.6's do).
/// Increments are integers ≥ 0; an update taking the total past `i64::MAX` is refused whole.
pub fn incrby(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 4 || !args.len().is_multiple_of(2) {
        return Err(RedisError::WrongArity);
    }
    // The key is checked first, then every increment, then the total, before any change.
    // an increment as a count, or the error that refuses the whole command
    let increment = |p: &RedisString| -> Result<u64, RedisError> {
        let inc = int(p).ok_or(RedisError::Str("CMS: Cannot parse number"))?;
        u64::try_from(inc).map_err(|_| RedisError::Str("CMS: Number cannot be negative"))
    };
    let out = with_sketch(ctx, &args[1], |s| {
        // every increment is checked, and their sum against the total, before any change
        // (then parsed again as it is applied: no list of pairs is allocated per call)
        let mut sum: u64 = 0;
        for p in args[2..].chunks(2) {
            sum = sum
                .checked_add(increment(&p[1])?)
                .ok_or(RedisError::Str("CMS: INCRBY overflow"))?;
        }
        if s.total()
            .checked_add(sum)
            .filter(|&t| t <= CMS_MAX_TOTAL)
            .is_none()
        {
            return Err(RedisError::Str("CMS: INCRBY overflow"));
        }
        Ok(args[2..]
            .chunks(2)
            .map(|p| {
                // hash once: the update and the count read the same cells
                let h = s.hasher().hash(p[0].as_slice());
                let inc = increment(&p[1]).unwrap_or(0);
                match s.insert_many_hashed(h, inc) {
                    c if c >= u64::from(u32::MAX) => RedisValue::StaticError(INCRBY_OVERFLOW),
                    c => count(c),
                }
            })
            .collect::<Vec<_>>())
    })?;
    crate::keys::written_through(ctx, &args[1]);
    Ok(RedisValue::Array(out))
}

/// `CMS.QUERY key item [item ...]`.
pub fn query(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    read(ctx, &args[1], |s| {
        RedisValue::Array(
            args[2..]
                .iter()
                .map(|it| count(s.count(it.as_slice())))
                .collect(),
        )
    })
}

/// `CMS.MERGE destination numKeys source [source ...] [WEIGHTS weight [weight ...]]`: the
/// destination (which must exist; it may also be a source) becomes `Σ weight·source`. Weights
/// are signed integers (default 1; a negative one subtracts). Each counter of the result is
/// computed in 64-bit signed arithmetic, as RedisBloom does: a product or partial sum beyond
/// it, a counter outside `0..=u32::MAX`, or a total below 0 or above `i64::MAX`, answers
/// `CMS: MERGE overflow` and the destination is left untouched.
pub fn merge(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if keys::answered_key_positions(ctx, &args, false) {
        return Ok(RedisValue::NoReply);
    }
    if args.len() < 4 {
        return Err(RedisError::WrongArity);
    }
    // RedisBloom's order: the destination, the key count, the keys and weights.
    let (width, depth) = read(ctx, &args[1], |d| (d.width(), d.depth()))?;
    let n = int(&args[2]).ok_or(RedisError::Str("CMS: invalid numkeys"))?;
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or(RedisError::Str("CMS: Number of keys must be positive"))?;
    if args.len() < 3 + n {
        return Err(RedisError::Str("CMS: wrong number of keys"));
    }
    let sources = &args[3..3 + n];
    let rest = &args[3 + n..];
    let weights: Vec<i64> = if rest.is_empty() {
        vec![1; n]
    } else {
        if !args::is(&rest[0], "WEIGHTS") {
            return Err(RedisError::Str("CMS: wrong number of keys"));
        }
        if rest.len() != n + 1 {
            return Err(RedisError::Str("CMS: wrong number of keys/weights"));
        }
        rest[1..]
            .iter()
            .map(|w| int(w).ok_or(RedisError::Str("CMS: invalid weight value")))
            .collect::<Result<_, _>>()?
    };
    // First pass: shapes, before anything is allocated or changed.
    for key in sources {
        let (sw, sd) = read(ctx, key, |s| (s.width(), s.depth()))?;
        if sw != width || sd != depth {
            return Err(RedisError::Str("CMS: width/depth is not equal"));
        }
    }
    // Second pass: the weighted sums, one source at a time (a work area of 8 bytes a
    // counter); the destination is changed only when every counter and the total fit.
    let mut acc: Vec<i64> = Vec::new();
    let mut total: i64 = 0;
    for (key, &w) in sources.iter().zip(&weights) {
        read(ctx, key, |s| -> Result<(), RedisError> {
            total = i64::try_from(s.total())
                .ok()
                .and_then(|t| t.checked_mul(w))
                .and_then(|t| t.checked_add(total))
                .ok_or(RedisError::Str(MERGE_OVERFLOW))?;
            s.accumulate_weighted(&mut acc, w)
                .map_err(|_| RedisError::Str(MERGE_OVERFLOW))
        })??;
    }
    let total = u64::try_from(total).map_err(|_| RedisError::Str(MERGE_OVERFLOW))?;
    // sources with another hasher than the destination's cannot be summed into it
    for key in sources {
        read(ctx, key, |s| {
            read(ctx, &args[1], |d| d.check_mergeable(s).map_err(lib_error))
        })???;
    }
    with_sketch(ctx, &args[1], |d| {
        d.assign_accumulated(&acc, total)
            .map_err(|_| RedisError::Str(MERGE_OVERFLOW))
    })?;
    crate::keys::written(ctx, &args[1]);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// `CMS.INFO key`: width, depth, count (a map in RESP3, the flat array in RESP2).
pub fn info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let pairs = read(ctx, &args[1], |s| {
        vec![
            ("width", count(s.width())),
            ("depth", count(u64::from(s.depth()))),
            ("count", count(s.total())),
        ]
    })?;
    reply::map(ctx, pairs)
}

/// `CMS.SCANDUMP key iterator` (bloomery extension; the AOF rewrite uses `CMS.LOADCHUNK`).
pub fn scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::scandump::<CountMinSketch32>(ctx, args, &CMS_TYPE)
}

/// `CMS.LOADCHUNK key iterator data` (bloomery extension).
pub fn loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::loadchunk::<CountMinSketch32>(ctx, args, &CMS_TYPE)
}
