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

use crate::args;
use crate::bf::reply_map;
use crate::config;
use crate::dump;
use crate::types::{Slot, TOPK_TYPE};

const LOADING: &str = "ERR filter is being loaded (LOADCHUNK in progress)";
const NO_KEY: &str = "TopK: key does not exist";
/// Largest increment `TOPK.INCRBY` accepts per item (RedisBloom's limit).
pub const MAX_INCREMENT: i64 = 100_000;

fn lib_error(e: Error) -> RedisError {
    match e {
        Error::TooLarge { requested, limit } => RedisError::String(format!(
            "ERR top-k would need {requested} bytes, over the module's MAX-BYTES limit of {limit}"
        )),
        other => RedisError::String(format!("ERR {other}")),
    }
}

fn int(arg: &RedisString) -> Option<i64> {
    std::str::from_utf8(arg.as_slice())
        .ok()?
        .trim()
        .parse::<i64>()
        .ok()
}

fn count(v: u64) -> RedisValue {
    RedisValue::Integer(i64::try_from(v).unwrap_or(i64::MAX))
}

/// `TOPK.RESERVE key topk [width depth decay]`.
pub fn reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 && args.len() != 6 {
        return Err(RedisError::WrongArity);
    }
    let k = int(&args[2])
        .filter(|&k| (1..=i64::from(bloomery::TopK::MAX_K)).contains(&k))
        .ok_or(RedisError::Str("TopK: invalid k"))? as u32;
    let mut b = TopK::builder(k).max_bytes(config::max_bytes());
    if args.len() == 6 {
        let width = int(&args[3])
            .filter(|&w| w >= 1)
            .ok_or(RedisError::Str("TopK: invalid width"))?;
        let depth = int(&args[4])
            .filter(|&d| (1..=i64::from(bloomery::TopK::MAX_DEPTH)).contains(&d))
            .ok_or(RedisError::Str("TopK: invalid depth"))?;
        let decay = std::str::from_utf8(args[5].as_slice())
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|&d| d > 0.0 && d <= 1.0)
            .ok_or(RedisError::Str(
                "TopK: invalid decay value. must be '<= 1' & '> 0'",
            ))?;
        b = b.width(width as u64).depth(depth as u32).decay(decay);
    }
    let topk = b.try_build().map_err(lib_error)?;
    let key = ctx.open_key_writable(&args[1]);
    if !key.is_empty() {
        return Err(RedisError::Str("TopK: key already exists"));
    }
    key.set_value(&TOPK_TYPE, Slot::Ready(topk))?;
    ctx.replicate_verbatim();
    Ok(RedisValue::SimpleStringStatic("OK"))
}

fn with_topk<R>(
    ctx: &Context,
    key: &RedisString,
    f: impl FnOnce(&mut TopK) -> R,
) -> Result<R, RedisError> {
    let k = ctx.open_key_writable(key);
    match k
        .get_value::<Slot<TopK>>(&TOPK_TYPE)
        .map_err(|_| RedisError::WrongType)?
    {
        Some(Slot::Ready(t)) => Ok(f(t)),
        Some(Slot::Loading(_)) => Err(RedisError::Str(LOADING)),
        None => Err(RedisError::Str(NO_KEY)),
    }
}

fn read<R>(ctx: &Context, key: &RedisString, f: impl FnOnce(&TopK) -> R) -> Result<R, RedisError> {
    let k = ctx.open_key(key);
    match k
        .get_value::<Slot<TopK>>(&TOPK_TYPE)
        .map_err(|_| RedisError::WrongType)?
    {
        Some(Slot::Ready(t)) => Ok(f(t)),
        Some(Slot::Loading(_)) => Err(RedisError::Str(LOADING)),
        None => Err(RedisError::Str(NO_KEY)),
    }
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
    ctx.replicate_verbatim();
    Ok(RedisValue::Array(out))
}

/// `TOPK.INCRBY key item increment [item increment ...]`: increments are integers in
/// `1..=100000`; all are checked before any is applied.
pub fn incrby(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 4 || !args.len().is_multiple_of(2) {
        return Err(RedisError::WrongArity);
    }
    let pairs = args[2..]
        .chunks(2)
        .map(|p| {
            int(&p[1])
                .filter(|&n| (1..=MAX_INCREMENT).contains(&n))
                .map(|n| (p[0].as_slice(), n as u32))
                .ok_or(RedisError::Str(
                    "TopK: increment must be an integer between 1 and 100000",
                ))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let out = with_topk(ctx, &args[1], |t| {
        pairs
            .iter()
            .map(|&(item, n)| expelled(t.incr_by(item, n)))
            .collect::<Vec<_>>()
    })?;
    ctx.replicate_verbatim();
    Ok(RedisValue::Array(out))
}

/// `TOPK.QUERY key item [item ...]`: 1 for items in the top-k list, else 0.
pub fn query(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    read(ctx, &args[1], |t| {
        RedisValue::Array(
            args[2..]
                .iter()
                .map(|it| RedisValue::Integer(i64::from(t.query(it.as_slice()))))
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
        return Err(RedisError::Str("TopK: WITHCOUNT keyword expected"));
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
    reply_map(ctx, pairs)
}

/// `TOPK.SCANDUMP key iterator` (bloomery extension; the AOF rewrite uses `TOPK.LOADCHUNK`).
pub fn scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::scandump::<TopK>(ctx, args, &TOPK_TYPE)
}

/// `TOPK.LOADCHUNK key iterator data` (bloomery extension).
pub fn loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::loadchunk::<TopK>(ctx, args, &TOPK_TYPE)
}
