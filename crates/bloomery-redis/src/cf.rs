//! `CF.*`: RedisBloom's cuckoo-filter commands on bloomery's [`CuckooFilter`].

use bloomery::CuckooOptions;
use bloomery::{CuckooFilter, Error};
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::{self, ArgError};
use crate::bf::reply_map;
use crate::config;
use crate::dump;
use crate::own;
use crate::types::{Slot, CF_TYPE};

/// Capacity of auto-created filters (RedisBloom's default).
pub const DEFAULT_CAPACITY: u64 = 1024;
/// Largest EXPANSION accepted.
pub const MAX_EXPANSION: i64 = 32768;

fn lib_error(e: Error) -> RedisError {
    match e {
        Error::Full { .. } => RedisError::Str("ERR Filter is full"),
        Error::TooLarge { requested, limit } => RedisError::String(format!(
            "ERR filter would need {requested} bytes, over the module's MAX-BYTES limit of {limit}"
        )),
        other => RedisError::String(format!("ERR {other}")),
    }
}

fn options(capacity: u64) -> CuckooOptions {
    CuckooOptions {
        max_bytes: config::max_bytes(),
        ..CuckooOptions::new(capacity)
    }
}

fn create(o: CuckooOptions) -> Result<CuckooFilter, RedisError> {
    CuckooFilter::try_with(o).map_err(lib_error)
}

fn with_filter<R>(
    ctx: &Context,
    key: &RedisString,
    create_with: Option<CuckooOptions>,
    f: impl FnOnce(&mut CuckooFilter) -> R,
) -> Result<R, RedisError> {
    let make = create_with.map(|o| move || create(o.clone()));
    let make = make
        .as_ref()
        .map(|m| m as &dyn Fn() -> Result<CuckooFilter, RedisError>);
    own::with_filter(ctx, &CF_TYPE, key, make, f)
}

/// Run `f` on the filter under `key` (None when the key is missing).
fn read<R>(
    ctx: &Context,
    key: &RedisString,
    f: impl FnOnce(Option<&CuckooFilter>) -> R,
) -> Result<R, RedisError> {
    own::read(ctx, &CF_TYPE, key, f)
}

/// `CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION e]`.
pub fn reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 || args.len().is_multiple_of(2) {
        return Err(RedisError::WrongArity);
    }
    let mut o = options(args::capacity(&args[2]).map_err(|_| RedisError::Str("ERR Bad capacity"))?);
    for pair in args[3..].chunks(2) {
        let (name, v) = (&pair[0], &pair[1]);
        if args::is(name, "BUCKETSIZE") {
            o.bucket_size = args::bounded(v, 1, 255, ArgError::BadBucketSize)?;
        } else if args::is(name, "MAXITERATIONS") {
            o.max_iterations = args::bounded(v, 1, 65535, ArgError::BadMaxIterations)?;
        } else if args::is(name, "EXPANSION") {
            o.expansion = args::bounded(v, 0, MAX_EXPANSION, ArgError::BadExpansion)?;
        } else {
            return Err(ArgError::UnknownOption(name.to_string_lossy()).into());
        }
    }
    if o.capacity < 2 * u64::from(o.bucket_size) {
        return Err(RedisError::Str(
            "ERR Capacity must be at least (BucketSize * 2)",
        ));
    }
    let k = ctx.open_key_writable(&args[1]);
    if !k.is_empty() {
        return Err(RedisError::Str("ERR item exists"));
    }
    let filter = create(o)?;
    k.set_value(&CF_TYPE, Slot::Ready(filter))?;
    ctx.replicate_verbatim();
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// `CF.ADD key item`: 1, or "ERR Filter is full".
pub fn add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let r = with_filter(ctx, &args[1], Some(options(DEFAULT_CAPACITY)), |f| {
        f.insert(args[2].as_slice())
    })?;
    r.map_err(lib_error)?;
    ctx.replicate_verbatim();
    Ok(RedisValue::Integer(1))
}

/// `CF.ADDNX key item`: 1 if added, 0 if it may already be there.
pub fn addnx(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let r = with_filter(ctx, &args[1], Some(options(DEFAULT_CAPACITY)), |f| {
        f.insert_unique(args[2].as_slice())
    })?;
    let added = r.map_err(lib_error)?;
    ctx.replicate_verbatim();
    Ok(RedisValue::Integer(i64::from(added)))
}

fn insert_generic(ctx: &Context, args: Vec<RedisString>, nx: bool) -> RedisResult {
    if args.len() < 4 {
        return Err(RedisError::WrongArity);
    }
    let mut capacity = DEFAULT_CAPACITY;
    let mut nocreate = false;
    let mut sized = false;
    let mut i = 2;
    let items = loop {
        let Some(a) = args.get(i) else {
            return Err(ArgError::NoItems.into());
        };
        if args::is(a, "ITEMS") {
            let items = &args[i + 1..];
            if items.is_empty() {
                return Err(ArgError::NoItems.into());
            }
            break items;
        } else if args::is(a, "CAPACITY") {
            let v = args.get(i + 1).ok_or(RedisError::WrongArity)?;
            capacity = args::capacity(v).map_err(|_| RedisError::Str("ERR Bad capacity"))?;
            sized = true;
            i += 2;
        } else if args::is(a, "NOCREATE") {
            nocreate = true;
            i += 1;
        } else {
            return Err(ArgError::UnknownOption(a.to_string_lossy()).into());
        }
    };
    if nocreate && sized {
        return Err(ArgError::NoCreateWithOptions.into());
    }
    let create_with = (!nocreate).then(|| options(capacity.max(4)));
    let out = with_filter(ctx, &args[1], create_with, |f| {
        items
            .iter()
            .map(|it| {
                let r = if nx {
                    f.insert_unique(it.as_slice()).map(i64::from)
                } else {
                    f.insert(it.as_slice()).map(|()| 1)
                };
                RedisValue::Integer(r.unwrap_or(-1))
            })
            .collect::<Vec<_>>()
    })?;
    ctx.replicate_verbatim();
    Ok(RedisValue::Array(out))
}

/// `CF.INSERT key [CAPACITY c] [NOCREATE] ITEMS item...`: per item 1, or -1 when full.
pub fn insert(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    insert_generic(ctx, args, false)
}

/// `CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS item...`: per item 1, 0 (present) or -1.
pub fn insertnx(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    insert_generic(ctx, args, true)
}

/// `CF.EXISTS key item`.
pub fn exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    read(ctx, &args[1], |f| {
        RedisValue::Integer(i64::from(f.is_some_and(|f| f.contains(args[2].as_slice()))))
    })
}

/// `CF.MEXISTS key item [item ...]`.
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

/// `CF.DEL key item`: 1 if a copy was removed, 0 if none was found.
pub fn del(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let removed = with_filter(ctx, &args[1], None, |f| f.remove(args[2].as_slice())).map_err(
        |e| match e {
            RedisError::Str("ERR not found") => RedisError::Str("ERR Not found"),
            e => e,
        },
    )?;
    if removed {
        ctx.replicate_verbatim();
    }
    Ok(RedisValue::Integer(i64::from(removed)))
}

/// `CF.COUNT key item`: copies of the item's fingerprint (0 for a missing key).
pub fn count(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    read(ctx, &args[1], |f| {
        RedisValue::Integer(f.map_or(0, |f| f.count(args[2].as_slice())) as i64)
    })
}

fn int(v: u64) -> RedisValue {
    RedisValue::Integer(i64::try_from(v).unwrap_or(i64::MAX))
}

/// `CF.INFO key`: a map in RESP3, the flat name/value array in RESP2.
pub fn info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let pairs = read(ctx, &args[1], |f| {
        f.map(|f| {
            vec![
                (
                    "Size",
                    int(f.allocated_bytes() + std::mem::size_of_val(f) as u64),
                ),
                ("Number of buckets", int(f.buckets())),
                ("Number of filters", int(f.tables().len() as u64)),
                ("Number of items inserted", int(f.len())),
                ("Number of items deleted", int(f.deletes())),
                ("Bucket size", int(u64::from(f.bucket_size()))),
                ("Expansion rate", int(u64::from(f.expansion()))),
                ("Max iterations", int(u64::from(f.max_iterations()))),
            ]
        })
    })?
    .ok_or(RedisError::Str("ERR not found"))?;
    reply_map(ctx, pairs)
}

/// `CF.SCANDUMP key iterator`.
pub fn scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::scandump::<CuckooFilter>(ctx, args, &CF_TYPE)
}

/// `CF.LOADCHUNK key iterator data`.
pub fn loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::loadchunk::<CuckooFilter>(ctx, args, &CF_TYPE)
}
