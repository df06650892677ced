//! `CF.*` on cuckoo filters moved from RedisBloom ([`crate::moved`]), answering as RedisBloom
//! 2.6's `rebloom.c` does: results, reply types in both protocols, error texts and growth.
//! Each handler answers `None` when the key does not hold such a value; [`crate::route`] then
//! hands the command to [`crate::cf`].

use bloomery::redisbloom::{RedisBloomCuckooFilter, RedisBloomCuckooInsert};
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::long_long;
use crate::moved::{self, Moved};
use crate::{config, limits, reply};

fn read(
    ctx: &Context,
    key: &RedisString,
    f: impl FnOnce(&RedisBloomCuckooFilter) -> RedisResult,
) -> Option<RedisResult> {
    match ctx
        .open_key(key)
        .get_value::<RedisBloomCuckooFilter>(&moved::RB_CF_TYPE)
    {
        Ok(Some(c)) => Some(f(c)),
        _ => None,
    }
}

fn with_filter(
    ctx: &Context,
    key: &RedisString,
    f: impl FnOnce(&mut RedisBloomCuckooFilter) -> RedisResult,
) -> Option<RedisResult> {
    let k = ctx.open_key_writable(key);
    match k.get_value::<RedisBloomCuckooFilter>(&moved::RB_CF_TYPE) {
        Ok(Some(c)) => Some(f(c)),
        _ => None,
    }
}

/// `cfInsertCommon` on an existing filter.
fn insert_items(
    ctx: &Context,
    key: &RedisString,
    c: &mut RedisBloomCuckooFilter,
    items: &[RedisString],
    nx: bool,
    multi: bool,
) -> RedisResult {
    if c.filters() >= limits::CF_MAX_FILTERS {
        return Err(RedisError::Str("Maximum expansions reached"));
    }
    let r3 = reply::is_resp3(ctx);
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        let r = if nx {
            c.insert_unique(it.as_slice())
        } else {
            c.add(it.as_slice())
        };
        let bools = r3 && (!nx || !multi);
        out.push(match r {
            RedisBloomCuckooInsert::Inserted if bools => RedisValue::Bool(true),
            RedisBloomCuckooInsert::Inserted => RedisValue::Integer(1),
            RedisBloomCuckooInsert::Exists if bools => RedisValue::Bool(false),
            RedisBloomCuckooInsert::Exists => RedisValue::Integer(0),
            RedisBloomCuckooInsert::NoSpace if !multi => {
                return Err(RedisError::Str("Filter is full"));
            }
            RedisBloomCuckooInsert::NoSpace if r3 && !nx => RedisValue::Bool(false),
            RedisBloomCuckooInsert::NoSpace => RedisValue::Integer(-1),
            RedisBloomCuckooInsert::NoMemory if !multi => {
                crate::keys::written(ctx, key);
                return Err(RedisError::Str("Memory allocation failure"));
            }
            RedisBloomCuckooInsert::NoMemory => RedisValue::Integer(-1),
        });
    }
    crate::keys::written(ctx, key);
    Ok(if multi {
        RedisValue::Array(out)
    } else {
        out.pop().unwrap_or(RedisValue::Null)
    })
}

fn add_generic(ctx: &Context, args: &[RedisString], nx: bool) -> Option<RedisResult> {
    if args.len() != 3 {
        return None;
    }
    with_filter(ctx, &args[1], |c| {
        insert_items(ctx, &args[1], c, &args[2..], nx, false)
    })
}

pub fn add(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    add_generic(ctx, args, false)
}

pub fn addnx(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    add_generic(ctx, args, true)
}

/// `CF.INSERT`/`CF.INSERTNX`, arguments read as RedisBloom reads them (by first letter).
fn insert_generic(ctx: &Context, args: &[RedisString], nx: bool) -> Option<RedisResult> {
    if args.len() < 4 {
        return None;
    }
    let mut at = 2;
    let mut items = None;
    while at < args.len() && items.is_none() {
        match args[at].as_slice().first().map(u8::to_ascii_lowercase) {
            Some(b'c') => {
                at += 1;
                let Some(v) = args.get(at) else {
                    return Some(Err(RedisError::WrongArity));
                };
                at += 1;
                match long_long(v) {
                    None => return Some(Err(RedisError::Str("Bad capacity"))),
                    Some(cap) if cap < 4 => {
                        return Some(Err(RedisError::Str(
                            "Capacity must be at least (BucketSize * 2)",
                        )))
                    }
                    Some(_) => {}
                }
            }
            Some(b'i') => {
                at += 1;
                items = Some(at);
            }
            Some(b'n') => at += 1,
            _ => return Some(Err(RedisError::Str("Unknown argument received"))),
        }
    }
    let Some(items) = items.filter(|&i| i < args.len()) else {
        return Some(Err(RedisError::WrongArity));
    };
    with_filter(ctx, &args[1], |c| {
        insert_items(ctx, &args[1], c, &args[items..], nx, true)
    })
}

pub fn insert(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    insert_generic(ctx, args, false)
}

pub fn insertnx(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    insert_generic(ctx, args, true)
}

pub fn exists(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if args.len() != 3 {
        return None;
    }
    read(ctx, &args[1], |c| {
        Ok(RedisValue::Bool(c.contains(args[2].as_slice())))
    })
}

pub fn mexists(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if args.len() < 3 {
        return None;
    }
    read(ctx, &args[1], |c| {
        Ok(RedisValue::Array(
            args[2..]
                .iter()
                .map(|it| RedisValue::Bool(c.contains(it.as_slice())))
                .collect(),
        ))
    })
}

pub fn count(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if args.len() != 3 {
        return None;
    }
    read(ctx, &args[1], |c| {
        Ok(reply::int(c.count(args[2].as_slice())))
    })
}

pub fn del(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if args.len() != 3 {
        return None;
    }
    with_filter(ctx, &args[1], |c| {
        crate::keys::written(ctx, &args[1]);
        Ok(RedisValue::Bool(c.remove(args[2].as_slice()).is_ok()))
    })
}

pub fn compact(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if args.len() != 2 {
        return None;
    }
    with_filter(ctx, &args[1], |c| {
        c.compact(true);
        crate::keys::written(ctx, &args[1]);
        Ok(RedisValue::SimpleStringStatic("OK"))
    })
}

pub fn info(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if args.len() != 2 {
        return None;
    }
    read(ctx, &args[1], |c| {
        reply::map(
            ctx,
            vec![
                ("Size", reply::int(c.redisbloom_memory())),
                ("Number of buckets", reply::int(c.first_buckets())),
                ("Number of filters", reply::int(c.filters() as u64)),
                ("Number of items inserted", reply::int(c.len())),
                ("Number of items deleted", reply::int(c.deletes())),
                ("Bucket size", reply::int(u64::from(c.bucket_size()))),
                ("Expansion rate", reply::int(u64::from(c.expansion()))),
                ("Max iterations", reply::int(u64::from(c.max_iterations()))),
            ],
        )
    })
}

pub fn scandump(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if args.len() != 3 {
        return None;
    }
    let pos = long_long(&args[2]).filter(|&p| p >= 0);
    read(ctx, &args[1], |c| {
        let pos = pos.ok_or(RedisError::Str("Invalid position"))?;
        let (next, data) = if c.is_empty() {
            (0, RedisValue::Null) // RedisBloom dumps nothing of a filter without items
        } else if pos == 0 {
            (1, RedisValue::StringBuffer(c.header_chunk()))
        } else {
            c.chunk(pos).map_or((0, RedisValue::Null), |(n, d)| {
                (n, RedisValue::StringBuffer(d))
            })
        };
        Ok(RedisValue::Array(vec![RedisValue::Integer(next), data]))
    })
}

pub fn loadchunk(ctx: &Context, args: &[RedisString]) -> Option<RedisResult> {
    if args.len() != 4 {
        return None;
    }
    let k = ctx.open_key_writable(&args[1]);
    let pos = long_long(&args[2]);
    let blob = args[3].as_slice();
    if k.is_empty() && pos == Some(1) {
        if blob.len() != RedisBloomCuckooFilter::HEADER_LEN {
            return Some(Err(RedisError::Str("Invalid header")));
        }
        let r = match RedisBloomCuckooFilter::from_header_chunk(blob, config::max_bytes()) {
            Ok(c) if c.validate().is_err() => Err(RedisError::Str("Couldn't create filter!")),
            Ok(c) => k
                .set_value(&moved::RB_CF_TYPE, c)
                .map(|()| RedisValue::SimpleStringStatic("OK")),
            Err(e) => {
                Err(moved::too_large(&e).unwrap_or(RedisError::Str("Couldn't create filter!")))
            }
        };
        if r.is_ok() {
            crate::keys::written(ctx, &args[1]);
        }
        return Some(r);
    }
    let c = match k.get_value::<RedisBloomCuckooFilter>(&moved::RB_CF_TYPE) {
        Ok(Some(c)) => c,
        _ => return None,
    };
    Some(match pos {
        None | Some(0) => Err(RedisError::Str("Invalid position")),
        Some(1) => Err(RedisError::Str("ERR item exists")),
        Some(pos) => match c.load_chunk(pos, blob) {
            Ok(()) => {
                crate::keys::written(ctx, &args[1]);
                Ok(RedisValue::SimpleStringStatic("OK"))
            }
            Err(_) => Err(RedisError::Str("Couldn't load chunk!")),
        },
    })
}
