//! `CF.*`: RedisBloom's cuckoo-filter commands on bloomery's [`CuckooFilter`], with
//! RedisBloom's replies (booleans in RESP3 where RedisBloom sends them), partial-failure shapes
//! and error texts.

use bloomery::builders::CuckooBuilder;
use bloomery::{CuckooFilter, Error};
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args;
use crate::config;
use crate::dump;
use crate::errors::{create_error, lib_error, CF_FULL, ITEM_EXISTS, NOT_FOUND, NO_MEMORY_FILTER};
use crate::keys;
use crate::limits::{
    CF_DEFAULT_BUCKET_SIZE, CF_DEFAULT_CAPACITY, CF_DEFAULT_EXPANSION, CF_DEFAULT_MAX_ITERATIONS,
    CF_MAX_BUCKET_SIZE, CF_MAX_EXPANSION, CF_MAX_FILTERS, CF_MAX_ITERATIONS,
};
use crate::reply;
use crate::types::CF_TYPE;

const CAPACITY_TOO_SMALL: &str = "Capacity must be at least (BucketSize * 2)";
const MAX_EXPANSIONS: &str = "Maximum expansions reached";

fn options(capacity: u64) -> CuckooBuilder {
    CuckooFilter::builder()
        .capacity(capacity)
        .bucket_size(CF_DEFAULT_BUCKET_SIZE)
        .max_iterations(CF_DEFAULT_MAX_ITERATIONS)
        .expansion(CF_DEFAULT_EXPANSION)
}

/// Build the filter `o` describes, under the limit in force (asked only now: `CF.ADD` makes
/// its options on every call, and most calls find the key).
fn create(o: CuckooBuilder) -> Result<CuckooFilter, RedisError> {
    o.max_bytes(config::max_bytes())
        .try_build()
        .map_err(create_error(NO_MEMORY_FILTER))
}

/// Run `f` on the filter under `key`, creating it with `create_with` if absent; a filter that
/// has grown to [`CF_MAX_FILTERS`] sub-filters takes no more items.
fn write<R>(
    ctx: &Context,
    key: &RedisString,
    create_with: Option<CuckooBuilder>,
    f: impl FnOnce(&mut CuckooFilter) -> R,
) -> Result<R, RedisError> {
    let make = create_with.map(|o| move || create(o.clone()));
    let make = make
        .as_ref()
        .map(|m| m as &dyn Fn() -> Result<CuckooFilter, RedisError>);
    keys::write(ctx, &CF_TYPE, key, make, NOT_FOUND, |cf| {
        if cf.tables().len() >= CF_MAX_FILTERS {
            Err(RedisError::Str(MAX_EXPANSIONS))
        } else {
            Ok(f(cf))
        }
    })?
}

/// `CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION e]`.
pub fn reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 || args.len().is_multiple_of(2) {
        return Err(RedisError::WrongArity);
    }
    let capacity = args::int(&args[2]).ok_or(RedisError::Str("Bad capacity"))?;
    let mut given: [Option<&RedisString>; 3] = [None; 3];
    for pair in args[3..].chunks(2) {
        let slot = ["MAXITERATIONS", "BUCKETSIZE", "EXPANSION"]
            .iter()
            .position(|kw| args::is(&pair[0], kw))
            .ok_or(RedisError::Str("Unknown argument received"))?;
        given[slot] = Some(&pair[1]);
    }
    let (mut max_iterations, mut bucket_size, mut expansion) = (
        CF_DEFAULT_MAX_ITERATIONS,
        CF_DEFAULT_BUCKET_SIZE,
        CF_DEFAULT_EXPANSION,
    );
    if let Some(v) = given[0] {
        args::int(v).ok_or(RedisError::Str("Couldn't parse MAXITERATIONS"))?;
        max_iterations =
            args::int_in(v, 1, i64::from(CF_MAX_ITERATIONS)).ok_or(RedisError::Str(
                "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.",
            ))?;
    }
    if let Some(v) = given[1] {
        args::int(v).ok_or(RedisError::Str("Couldn't parse BUCKETSIZE"))?;
        bucket_size = args::int_in(v, 1, i64::from(CF_MAX_BUCKET_SIZE)).ok_or(RedisError::Str(
            "BUCKETSIZE: value must be an integer between 1 and 255, inclusive.",
        ))?;
    }
    if let Some(v) = given[2] {
        args::int(v).ok_or(RedisError::Str("Couldn't parse EXPANSION"))?;
        expansion = args::int_in(v, 0, i64::from(CF_MAX_EXPANSION)).ok_or(RedisError::Str(
            "EXPANSION: value must be an integer between 0 and 32768, inclusive.",
        ))?;
    }
    if capacity < 2 * i64::from(bucket_size) {
        return Err(RedisError::Str(CAPACITY_TOO_SMALL));
    }
    // RedisBloom keeps the expansion rounded up to a power of two (and reports it so).
    if expansion > 0 {
        expansion = expansion.next_power_of_two();
    }
    keys::must_be_missing(ctx, &args[1], ITEM_EXISTS)?;
    let filter = create(
        options(capacity as u64)
            .max_iterations(max_iterations)
            .bucket_size(bucket_size)
            .expansion(expansion),
    )?;
    keys::create(ctx, &CF_TYPE, &args[1], ITEM_EXISTS, filter)
}

/// A failed insert of one item as an error reply (`Filter is full` when no slot was found and
/// the filter cannot grow).
fn insert_error(e: Error) -> RedisError {
    match e {
        Error::Full { .. } => RedisError::Str(CF_FULL),
        other => lib_error(other),
    }
}

/// `CF.ADD key item`: `true`/`1`, or `Filter is full`; creates the filter with capacity 1024 if
/// the key is missing.
pub fn add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let r = write(ctx, &args[1], Some(options(CF_DEFAULT_CAPACITY)), |f| {
        f.insert(args[2].as_slice())
    })?;
    r.map_err(insert_error)?;
    crate::keys::written_through(ctx, &args[1]);
    Ok(reply::bool(true))
}

/// `CF.ADDNX key item`: `true`/`1` if added, `false`/`0` if it may already be there.
pub fn addnx(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let r = write(ctx, &args[1], Some(options(CF_DEFAULT_CAPACITY)), |f| {
        f.insert_unique(args[2].as_slice())
    })?;
    let added = r.map_err(insert_error)?;
    crate::keys::written_through(ctx, &args[1]);
    Ok(reply::bool(added))
}

fn insert_generic(ctx: &Context, args: Vec<RedisString>, nx: bool) -> RedisResult {
    if args.len() < 4 {
        return Err(RedisError::WrongArity);
    }
    let mut capacity = CF_DEFAULT_CAPACITY;
    let mut nocreate = false;
    let mut i = 2;
    let items = loop {
        let Some(a) = args.get(i) else {
            return Err(RedisError::WrongArity);
        };
        if args::is(a, "ITEMS") {
            let items = &args[i + 1..];
            if items.is_empty() {
                return Err(RedisError::WrongArity);
            }
            break items;
        } else if args::is(a, "CAPACITY") {
            let v = args.get(i + 1).ok_or(RedisError::WrongArity)?;
            let c = args::int(v).ok_or(RedisError::Str("Bad capacity"))?;
            if c < 2 * i64::from(CF_DEFAULT_BUCKET_SIZE) {
                return Err(RedisError::Str(CAPACITY_TOO_SMALL));
            }
            capacity = c as u64;
            i += 2;
        } else if args::is(a, "NOCREATE") {
            nocreate = true;
            i += 1;
        } else {
            return Err(RedisError::Str("Unknown argument received"));
        }
    };
    // Full: `false` in RESP3 for CF.INSERT, -1 otherwise (RedisBloom's shapes).
    let full = if !nx && reply::is_resp3(ctx) {
        reply::bool(false)
    } else {
        RedisValue::Integer(-1)
    };
    let create_with = (!nocreate).then(|| options(capacity));
    let out = write(ctx, &args[1], create_with, |f| {
        items
            .iter()
            .map(|it| {
                if nx {
                    match f.insert_unique(it.as_slice()) {
                        Ok(added) => RedisValue::Integer(i64::from(added)),
                        Err(_) => full.clone(),
                    }
                } else {
                    match f.insert(it.as_slice()) {
                        Ok(()) => reply::bool(true),
                        Err(_) => full.clone(),
                    }
                }
            })
            .collect::<Vec<_>>()
    })?;
    crate::keys::written_through(ctx, &args[1]);
    Ok(RedisValue::Array(out))
}

/// `CF.INSERT key [CAPACITY c] [NOCREATE] ITEMS item...`: per item `true`/`1`; when full
/// `false` (RESP3) or -1 (RESP2).
pub fn insert(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    insert_generic(ctx, args, false)
}

/// `CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS item...`: per item 1 (added), 0 (may be
/// present) or -1 (full), integers in both protocols.
pub fn insertnx(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    insert_generic(ctx, args, true)
}

/// `CF.EXISTS key item`: `true`/`1` if the item may be present (`false`/`0` for a missing
/// key).
pub fn exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    keys::read(ctx, &CF_TYPE, &args[1], |f: Option<&CuckooFilter>| {
        reply::bool(f.is_some_and(|f| f.contains(args[2].as_slice())))
    })
}

/// `CF.MEXISTS key item [item ...]`: per item as `CF.EXISTS`.
pub fn mexists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    keys::read(ctx, &CF_TYPE, &args[1], |f: Option<&CuckooFilter>| {
        RedisValue::Array(
            args[2..]
                .iter()
                .map(|it| reply::bool(f.is_some_and(|f| f.contains(it.as_slice()))))
                .collect(),
        )
    })
}

/// `CF.DEL key item`: `true`/`1` if a copy was removed, `false`/`0` if none was found;
/// `Not found` for a missing key.
pub fn del(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let removed = keys::write(
        ctx,
        &CF_TYPE,
        &args[1],
        None,
        "Not found",
        |f: &mut CuckooFilter| {
            let removed = f.remove(args[2].as_slice()).is_ok();
            // RedisBloom compacts once deletes pass a tenth of the items
            if removed && f.tables().len() > 1 && f.deletes() as f64 > f.len() as f64 * 0.10 {
                f.compact(true);
            }
            removed
        },
    )?;
    if removed {
        crate::keys::written_through(ctx, &args[1]);
    }
    Ok(reply::bool(removed))
}

/// `CF.COUNT key item`: copies of the item's fingerprint (0 for a missing key).
pub fn count(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    keys::read(ctx, &CF_TYPE, &args[1], |f: Option<&CuckooFilter>| {
        reply::int(f.map_or(0, |f| f.count(args[2].as_slice())))
    })
}

/// `CF.INFO key`: a map in RESP3, the flat name/value array in RESP2. `Size` is the value's
/// `MEMORY USAGE` (without the key).
pub fn info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let pairs = keys::read_existing(ctx, &CF_TYPE, &args[1], NOT_FOUND, |f: &CuckooFilter| {
        vec![
            ("Size", reply::int(crate::types::value_size(f))),
            // the first sub-filter's, as RedisBloom reports it
            ("Number of buckets", reply::int(f.tables()[0].buckets())),
            ("Number of filters", reply::int(f.tables().len() as u64)),
            ("Number of items inserted", reply::int(f.len())),
            ("Number of items deleted", reply::int(f.deletes())),
            ("Bucket size", reply::int(u64::from(f.bucket_size()))),
            ("Expansion rate", reply::int(u64::from(f.expansion()))),
            ("Max iterations", reply::int(u64::from(f.max_iterations()))),
        ]
    })?;
    reply::map(ctx, pairs)
}

/// `CF.COMPACT key`: move fingerprints from newer sub-filters into free slots of older ones
/// and drop the newest sub-filters left empty (see [`CuckooFilter::compact`]); `OK`.
pub fn compact(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    keys::write(
        ctx,
        &CF_TYPE,
        &args[1],
        None,
        "Cuckoo filter was not found",
        |f: &mut CuckooFilter| f.compact(false),
    )?;
    crate::keys::written_through(ctx, &args[1]);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// `CF.SCANDUMP key iterator`: bloomery's chunks, with RedisBloom's ends: a filter without
/// items dumps nothing (`[0, nil]`), and the end marker is `[0, nil]`.
pub fn scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let empty = match args.get(1) {
        Some(key) if args.len() == 3 => {
            args::iterator(&args[2])?;
            keys::read(ctx, &CF_TYPE, key, |f: Option<&CuckooFilter>| {
                f.is_some_and(CuckooFilter::is_empty)
            })?
        }
        _ => false,
    };
    let end = || RedisValue::Array(vec![RedisValue::Integer(0), RedisValue::Null]);
    if empty {
        return Ok(end());
    }
    match dump::scandump::<CuckooFilter>(ctx, args, &CF_TYPE)? {
        RedisValue::Array(v) if matches!(v[..], [RedisValue::Integer(0), _]) => Ok(end()),
        other => Ok(other),
    }
}

/// `CF.LOADCHUNK key iterator data`.
pub fn loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::loadchunk::<CuckooFilter>(ctx, args, &CF_TYPE)
}
