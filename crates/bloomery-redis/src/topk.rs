//! `TOPK.*`: RedisBloom's top-k commands on bloomery's HeavyKeeper ([`TopK`]).
//!
//! `TOPK.RESERVE key topk [width depth decay]` creates (defaults 8, 7, 0.9); `ADD` and `INCRBY`
//! answer, per item, the item expelled from the top-k list or nil; `QUERY` answers 1/0, `COUNT`
//! the estimated counts (lower bounds), `LIST [WITHCOUNT]` the list largest first, `INFO` k,
//! width, depth and decay. Every command but RESERVE needs an existing key
//! (`TopK: key does not exist`).
//!
//! The library's decay decisions are drawn from a generator seeded by the item's hash and saved
//! with the structure, so replaying the same commands gives the same structure: replicas (writes
//! are replicated verbatim) and AOF replays stay identical to the primary.

use bloomery::{Count, Error, TopK};
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::{self, int};
use crate::config;
use crate::dump;
use crate::errors::{create_error, NO_MEMORY_TOPK};
use crate::keys;
use crate::limits::{TOPK_DEFAULTS, TOPK_MAX_DEPTH, TOPK_MAX_INCREMENT, TOPK_MAX_K};
use crate::reply::{self, int as count};
use crate::types::TOPK_TYPE;

const NO_KEY: &str = "TopK: key does not exist";
const EXISTS: &str = "TopK: key already exists";
/// RedisBloom's text, spaces included.
const BAD_INCREMENT: &str = "TopK: increment must be an integer greater or equal to 0                            and smaller or equal to 100,000";

/// `TOPK.RESERVE key topk [width depth decay]`.
pub fn reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 && args.len() != 6 {
        return Err(RedisError::WrongArity);
    }
    keys::must_be_missing(ctx, &args[1], EXISTS)?;
    let k = int(&args[2])
        .filter(|&k| (1..=i64::from(TOPK_MAX_K)).contains(&k))
        .ok_or(RedisError::Str("TopK: invalid k"))? as u32;
    let (mut width, mut depth, mut decay) = TOPK_DEFAULTS;
    if args.len() == 6 {
        // RedisBloom keeps the width in 32 bits
        width = int(&args[3])
            .filter(|&w| (1..=i64::from(u32::MAX)).contains(&w))
            .ok_or(RedisError::Str("TopK: invalid width"))? as u64;
        // as the width, 32 bits; more than TOPK_MAX_DEPTH rows is refused below, after the
        // memory (RedisBloom's order: a shape too big to allocate is refused as such)
        let rows = int(&args[4])
            .filter(|&d| (1..=i64::from(u32::MAX)).contains(&d))
            .ok_or(RedisError::Str("TopK: invalid depth"))? as u64;
        decay = args::float(&args[5])
            .filter(|&d| d > 0.0 && d <= 1.0)
            .ok_or(RedisError::Str(
                "TopK: invalid decay value. must be '<= 1' & '> 0'",
            ))?;
        let bytes = width.saturating_mul(rows).saturating_mul(8);
        if bytes > config::max_bytes() {
            return Err(create_error(NO_MEMORY_TOPK)(Error::TooLarge {
                requested: bytes,
                limit: config::max_bytes(),
            }));
        }
        depth = u32::try_from(rows)
            .ok()
            .filter(|&d| d <= TOPK_MAX_DEPTH)
            .ok_or(RedisError::Str("TopK: invalid depth"))?;
    }
    let topk = TopK::builder(k)
        .redisbloom_list(true)
        .width(width)
        .depth(depth)
        .decay(decay)
        .max_bytes(config::max_bytes())
        .try_build()
        .map_err(create_error(NO_MEMORY_TOPK))?;
    keys::create(ctx, &TOPK_TYPE, &args[1], EXISTS, topk)
}

fn with_topk<R>(
    ctx: &Context,
    key: &RedisString,
    f: impl FnOnce(&mut TopK) -> R,
) -> Result<R, RedisError> {
    keys::write(ctx, &TOPK_TYPE, key, None, NO_KEY, f)
}

fn read<R>(ctx: &Context, key: &RedisString, f: impl FnOnce(&TopK) -> R) -> Result<R, RedisError> {
    keys::read_existing(ctx, &TOPK_TYPE, key, NO_KEY, f)
}

fn expelled(v: Option<Vec<u8>>) -> RedisValue {
    v.map_or(RedisValue::Null, RedisValue::StringBuffer)
}

/// `TOPK.ADD key item [item ...]`: per item, the item expelled from the list, or nil.
pub fn add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    let out = with_topk(ctx, &args[1], |t| {
        args[2..]
            .iter()
            .map(|it| expelled(t.incr_by(it.as_slice(), 1)))
            .collect::<Vec<_>>()
    })?;
    crate::keys::written_through(ctx, &args[1]);
    Ok(RedisValue::Array(out))
}

/// `TOPK.INCRBY key item increment [item increment ...]`: increments are integers in
/// `0..=100000` (0 changes nothing); as in RedisBloom, an increment outside them answers the
/// error in its item's place and the other items are applied.
pub fn incrby(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 4 || !args.len().is_multiple_of(2) {
        return Err(RedisError::WrongArity);
    }
    let out = with_topk(ctx, &args[1], |t| {
        args[2..]
            .chunks(2)
            .map(
                |p| match int(&p[1]).filter(|&n| (0..=TOPK_MAX_INCREMENT).contains(&n)) {
                    Some(n) => expelled(t.incr_by(p[0].as_slice(), n as u32)),
                    None => RedisValue::StaticError(BAD_INCREMENT),
                },
            )
            .collect::<Vec<_>>()
    })?;
    crate::keys::written_through(ctx, &args[1]);
    Ok(RedisValue::Array(out))
}

/// `TOPK.QUERY key item [item ...]`: `true`/`1` for items in the top-k list, else
/// `false`/`0`.
pub fn query(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    read(ctx, &args[1], |t| {
        RedisValue::Array(
            args[2..]
                .iter()
                .map(|it| reply::bool(t.contains(it.as_slice())))
                .collect(),
        )
    })
}

/// `TOPK.COUNT key item [item ...]` (deprecated by RedisBloom, kept): estimated counts, never
/// above the true counts.
pub fn count_cmd(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    read(ctx, &args[1], |t| {
        RedisValue::Array(
            args[2..]
                .iter()
                .map(|it| count(t.count(it.as_slice())))
                .collect(),
        )
    })
}

/// `TOPK.LIST key [WITHCOUNT]`: the list, largest count first.
pub fn list(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 && args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let with_count = args.len() == 3;
    if with_count && !args::is(&args[2], "WITHCOUNT") {
        return Err(RedisError::Str("WITHCOUNT keyword expected"));
    }
    read(ctx, &args[1], |t| {
        let mut out = Vec::new();
        for (item, c) in t.list() {
            out.push(RedisValue::StringBuffer(item.to_vec()));
            if with_count {
                out.push(count(c));
            }
        }
        RedisValue::Array(out)
    })
}

/// `TOPK.INFO key`: k, width, depth, decay (a map in RESP3, the flat array in RESP2; decay is
/// a double, sent as a bulk string in RESP2).
pub fn info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let pairs = read(ctx, &args[1], |t| {
        vec![
            ("k", count(u64::from(t.k()))),
            ("width", count(t.width())),
            ("depth", count(u64::from(t.depth()))),
            ("decay", RedisValue::Float(t.decay())),
        ]
    })?;
    reply::map(ctx, pairs)
}

/// `TOPK.SCANDUMP key iterator` (bloomery extension; the AOF rewrite uses `TOPK.LOADCHUNK`).
pub fn scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::scandump::<TopK>(ctx, args, &TOPK_TYPE)
}

/// `TOPK.LOADCHUNK key iterator data` (bloomery extension).
pub fn loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::loadchunk::<TopK>(ctx, args, &TOPK_TYPE)
}
