//! `BF.*` on Bloom filters moved from RedisBloom ([`crate::moved`]), answering as RedisBloom
//! 2.6's `rebloom.c` does: results, reply types in both protocols, error texts and growth.
//! Each handler answers `None` when the key does not hold such a value; [`crate::route`] then
//! hands the command to [`crate::bf`].

use bloomery::redisbloom::{RedisBloomChunkError, RedisBloomFilter};
use bloomery::Error;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::{double, long_long};
use crate::moved::{self, Moved};
use crate::{config, reply};

fn read(
    ctx: &Context,
    key: &RedisString,
    f: impl FnOnce(&RedisBloomFilter) -> RedisResult,
) -> Option<RedisResult> {
    match ctx
        .open_key(key)
        .get_value::<RedisBloomFilter>(&moved::RB_BF_TYPE)
    {
        Ok(Some(b)) => Some(f(b)),
        _ => None,
    }
}

/// `SBChain_Add`'s outcome as RedisBloom replies it.
fn add_one(b: &mut RedisBloomFilter, item: &RedisString) -> Result<bool, &'static str> {
    match b.try_insert(item.as_slice()) {
        Ok(new) => Ok(new),
        Err(Error::Full { .. }) => Err("ERR non scaling filter is full"),
        Err(_) => Err("ERR problem inserting into filter"),
    }
}

fn with_chain(
    ctx: &Context,
    key: &RedisString,
    f: impl FnOnce(&mut RedisBloomFilter) -> RedisResult,
) -> Option<RedisResult> {
    let k = ctx.open_key_writable(key);
    match k.get_value::<RedisBloomFilter>(&moved::RB_BF_TYPE) {
        Ok(Some(b)) => {
            let r = f(b);
            crate::keys::written(ctx, key);
            Some(r)
        }
        _ => None,
    }
}

pub fn add(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if args.len() != 3 {
        return None;
    }
    with_chain(ctx, &args[1], |b| match add_one(b, &args[2]) {
        Ok(new) => Ok(RedisValue::Bool(new)),
        Err(e) => Err(RedisError::Str(e)),
    })
}

/// Add items until the chain is full (RedisBloom stops there; other errors go on).
fn add_items(b: &mut RedisBloomFilter, items: &[RedisString]) -> RedisResult {
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        match add_one(b, it) {
            Ok(new) => out.push(RedisValue::Bool(new)),
            Err(e) => {
                out.push(RedisValue::StaticError(e));
                if e == "ERR non scaling filter is full" {
                    break;
                }
            }
        }
    }
    Ok(RedisValue::Array(out))
}

pub fn madd(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if args.len() < 3 {
        return None;
    }
    with_chain(ctx, &args[1], |b| add_items(b, &args[2..]))
}

/// `BF.INSERT`, its arguments read as RedisBloom reads them (by first letter).
pub fn insert(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if args.len() < 4 {
        return None;
    }
    let (mut error, mut capacity, mut expansion) = (0.01f64, 100i64, 2i64);
    let mut at = 2;
    let mut items = None;
    while at < args.len() && items.is_none() {
        let a = args[at].as_slice();
        let next = |at: usize| args.get(at + 1).ok_or(RedisError::WrongArity);
        let r: Result<(), RedisError> = match a.first().map(u8::to_ascii_lowercase) {
            Some(b'i') => {
                at += 1;
                items = Some(at);
                Ok(())
            }
            Some(b'e') => next(at).and_then(|v| {
                at += 2;
                if a.get(1).map(u8::to_ascii_lowercase) == Some(b'r') {
                    error = double(v).ok_or(RedisError::Str("Bad error rate"))?;
                } else {
                    expansion = long_long(v).ok_or(RedisError::Str("Bad expansion"))?;
                }
                Ok(())
            }),
            Some(b'c') => next(at).and_then(|v| {
                at += 2;
                capacity = long_long(v).ok_or(RedisError::Str("Bad capacity"))?;
                Ok(())
            }),
            Some(b'n') => {
                at += 1;
                Ok(())
            }
            _ => Err(RedisError::Str("Unknown argument received")),
        };
        if let Err(e) = r {
            return Some(Err(e));
        }
    }
    let Some(items) = items.filter(|&i| i < args.len()) else {
        return Some(Err(RedisError::WrongArity));
    };
    if !(error > 0.0 && error < 1.0) || capacity < 1 || expansion < 1 {
        return Some(Err(RedisError::Str("Bad argument received")));
    }
    with_chain(ctx, &args[1], |b| add_items(b, &args[items..]))
}

pub fn exists(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if args.len() != 3 {
        return None;
    }
    read(ctx, &args[1], |b| {
        Ok(RedisValue::Bool(b.contains(args[2].as_slice())))
    })
}

pub fn mexists(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if args.len() < 3 {
        return None;
    }
    read(ctx, &args[1], |b| {
        Ok(RedisValue::Array(
            args[2..]
                .iter()
                .map(|it| RedisValue::Bool(b.contains(it.as_slice())))
                .collect(),
        ))
    })
}

pub fn card(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if args.len() != 2 {
        return None;
    }
    read(ctx, &args[1], |b| Ok(reply::int(b.len())))
}

pub fn info(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if !(2..=3).contains(&args.len()) {
        return None;
    }
    read(ctx, &args[1], |b| {
        let expansion = if b.is_scaling() {
            reply::int(u64::from(b.growth()))
        } else {
            RedisValue::Null
        };
        let fields = [
            ("Capacity", "capacity", reply::int(b.total_entries())),
            ("Size", "size", reply::int(b.redisbloom_memory())),
            (
                "Number of filters",
                "filters",
                reply::int(b.links().len() as u64),
            ),
            ("Number of items inserted", "items", reply::int(b.len())),
            ("Expansion rate", "expansion", expansion),
        ];
        let Some(which) = args.get(2) else {
            return reply::map(ctx, fields.into_iter().map(|(n, _, v)| (n, v)).collect());
        };
        let Some((name, _, v)) = fields
            .into_iter()
            .find(|(_, kw, _)| which.as_slice().eq_ignore_ascii_case(kw.as_bytes()))
        else {
            return Err(RedisError::Str("Invalid information value"));
        };
        // one field: a one-pair map in RESP3, a one-element array in RESP2
        reply::field(ctx, name, v)
    })
}

pub fn scandump(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if args.len() != 3 {
        return None;
    }
    read(ctx, &args[1], |b| {
        let it = long_long(&args[2]).ok_or(RedisError::Str("Second argument must be numeric"))?;
        let (next, data) = if it == 0 {
            (1, b.header_chunk())
        } else {
            b.chunk(it).unwrap_or((0, Vec::new()))
        };
        Ok(RedisValue::Array(vec![
            RedisValue::Integer(next),
            RedisValue::StringBuffer(data),
        ]))
    })
}

pub fn loadchunk(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if args.len() != 4 {
        return None;
    }
    let Some(it) = long_long(&args[2]) else {
        // RedisBloom's text; bloomery's own sequence never has a non-numeric iterator
        return Some(Err(RedisError::Str("ERR Second argument must be numeric")));
    };
    let data = args[3].as_slice();
    let k = ctx.open_key_writable(&args[1]);
    if k.is_empty() && it == 1 {
        let r = match RedisBloomFilter::from_header_chunk(data, config::max_bytes()) {
            Ok(b) if b.validate().is_err() => Err(RedisError::Str("ERR received bad data")),
            Ok(b) => k
                .set_value(&moved::RB_BF_TYPE, b)
                .map(|()| RedisValue::SimpleStringStatic("OK")),
            Err(e) => Err(moved::too_large(&e).unwrap_or(RedisError::Str("ERR received bad data"))),
        };
        if r.is_ok() {
            crate::keys::written(ctx, &args[1]);
        }
        return Some(r);
    }
    let b = match k.get_value::<RedisBloomFilter>(&moved::RB_BF_TYPE) {
        Ok(Some(b)) => b,
        _ => return None,
    };
    Some(match b.load_chunk(it, data) {
        Ok(()) => {
            crate::keys::written(ctx, &args[1]);
            Ok(RedisValue::SimpleStringStatic("OK"))
        }
        Err(RedisBloomChunkError::NoSubFilter { .. }) => {
            Err(RedisError::Str("ERR invalid offset - no link found"))
        }
        Err(RedisBloomChunkError::CrossesEnd { .. }) => Err(RedisError::Str(
            "ERR invalid chunk - Too big for current filter",
        )),
        Err(_) => Err(RedisError::Str("ERR received bad data")),
    })
}
