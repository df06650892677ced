//! `TDIGEST.*`: RedisBloom's t-digest commands on bloomery's merging t-digest ([`TDigest`]).
//!
//! `CREATE key [COMPRESSION c]` (default 100), `RESET`, `ADD key value...`, `MERGE dest numkeys
//! src... [COMPRESSION c] [OVERRIDE]`, and the queries `MIN`, `MAX`, `QUANTILE`, `CDF`,
//! `TRIMMED_MEAN`, `RANK`, `REVRANK`, `BYRANK`, `BYREVRANK`, `INFO`, with RedisBloom 2.6's
//! replies and error texts (doubles as bulk strings in RESP2, `nan`/`inf` included; ranks as
//! integers, −2 for an empty digest). Every command but CREATE and MERGE needs an existing key
//! (`ERR T-Digest: key does not exist`).
//!
//! Writes are replicated verbatim: a replica or an AOF replay runs the same inserts in the same
//! order and holds the same digest, byte for byte. To keep it so, queries answer from a merged
//! copy of the buffer of added values and leave the value as the writes made it, where
//! RedisBloom's queries merge the buffer in place (unreplicated): `INFO`'s node counts and
//! `Total compressions` therefore count only the merges that adds and `MERGE` caused.

use bloomery::{Error, TDigest};
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args;
use crate::config;
use crate::dump;
use crate::errors::{lib_error, LOADING};
use crate::keys;
use crate::reply::{self, int};
use crate::types::{value_size, Slot, TDIGEST_TYPE};

/// `TDIGEST.CREATE`'s compression when none is given (RedisBloom's).
pub const DEFAULT_COMPRESSION: u64 = TDigest::DEFAULT_COMPRESSION;

const NO_KEY: &str = "ERR T-Digest: key does not exist";
const EXISTS: &str = "ERR T-Digest: key already exists";
const WRONG_KEYWORD: &str = "ERR T-Digest: wrong keyword";
const OVERFLOW: &str = "ERR T-Digest: overflow detected";

/// A compression argument as RedisBloom reads it.
fn compression(arg: &RedisString) -> Result<u64, RedisError> {
    let c = args::long_long(arg).ok_or(RedisError::Str(
        "ERR T-Digest: error parsing compression parameter",
    ))?;
    if c <= 0 {
        return Err(RedisError::Str(
            "ERR T-Digest: compression parameter needs to be a positive integer",
        ));
    }
    Ok(c as u64)
}

/// A new digest within `MAX-BYTES`; a compression beyond the library's range is what
/// RedisBloom answers when its allocation fails.
fn new_digest(c: u64, failed: &'static str) -> Result<TDigest, RedisError> {
    if c > TDigest::MAX_COMPRESSION {
        return Err(RedisError::Str(failed));
    }
    TDigest::try_with_limit(c, config::max_bytes()).map_err(|e| match e {
        Error::TooLarge { .. } => lib_error(e),
        _ => RedisError::Str(failed),
    })
}

/// `TDIGEST.CREATE key [COMPRESSION compression]`.
pub fn create(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 && args.len() != 4 {
        return Err(RedisError::WrongArity);
    }
    // an existing key of another type is WRONGTYPE, of ours "already exists"
    keys::read::<TDigest, _>(ctx, &TDIGEST_TYPE, &args[1], |_| ()).map_err(|e| match e {
        RedisError::Str(LOADING) => RedisError::Str(EXISTS),
        e => e,
    })?;
    keys::must_be_missing(ctx, &args[1], EXISTS)?;
    let mut c = DEFAULT_COMPRESSION;
    if args.len() == 4 {
        if !args::is(&args[2], "COMPRESSION") {
            return Err(RedisError::Str(WRONG_KEYWORD));
        }
        c = compression(&args[3])?;
    }
    let td = new_digest(c, "ERR T-Digest: allocation failed")?;
    keys::create(ctx, &TDIGEST_TYPE, &args[1], EXISTS, td)
}

fn write<R>(
    ctx: &Context,
    key: &RedisString,
    f: impl FnOnce(&mut TDigest) -> R,
) -> Result<R, RedisError> {
    keys::write(ctx, &TDIGEST_TYPE, key, None, NO_KEY, f)
}

/// Checks the key exists and holds a digest (RedisBloom checks it before the arguments).
fn check_key(ctx: &Context, key: &RedisString) -> Result<(), RedisError> {
    keys::read_existing(ctx, &TDIGEST_TYPE, key, NO_KEY, |_: &TDigest| ())
}

/// Runs a query on the digest. The library answers from a merged copy of the buffer; the
/// value itself is left as the writes made it (RedisBloom merges it in place), so a replica or
/// an AOF replay, which sees only the writes, holds exactly the primary's digest.
fn query<R>(ctx: &Context, key: &RedisString, f: impl FnOnce(&TDigest) -> R) -> RedisResult<R> {
    let r = keys::read_existing(ctx, &TDIGEST_TYPE, key, NO_KEY, f)?;
    // the merged centroids a query keeps count in INFO as in MEMORY USAGE
    crate::stats::touched(ctx, key);
    Ok(r)
}

/// `TDIGEST.RESET key`.
pub fn reset(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    write(ctx, &args[1], TDigest::reset)?;
    keys::written_through(ctx, &args[1]);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// `TDIGEST.ADD key value [value ...]`: every value is parsed before any is added.
pub fn add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    check_key(ctx, &args[1])?;
    let values = args[2..]
        .iter()
        .map(|a| {
            let v = args::double(a)
                .filter(|v| !v.is_nan())
                .ok_or(RedisError::Str("ERR T-Digest: error parsing val parameter"))?;
            if v.is_finite() {
                Ok(v)
            } else {
                Err(RedisError::Str(
                    "ERR T-Digest: val parameter needs to be a finite number",
                ))
            }
        })
        .collect::<Result<Vec<f64>, _>>()?;
    write(ctx, &args[1], |td| {
        let room = TDigest::MAX_WEIGHT - td.count();
        if values.len() as u64 > room {
            return Err(RedisError::Str(OVERFLOW));
        }
        for &v in &values {
            td.insert(v).map_err(|_| RedisError::Str(OVERFLOW))?;
        }
        Ok(())
    })??;
    keys::written_through(ctx, &args[1]);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// `TDIGEST.MERGE destination numkeys source [source ...] [COMPRESSION c] [OVERRIDE]`: the
/// destination becomes a new digest of the sources (and of its own values, unless
/// `OVERRIDE`), of compression `c`, else the destination's, else (new destination or
/// `OVERRIDE`) the largest of the sources'.
pub fn merge(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if keys::answered_key_positions(ctx, &args, false) {
        return Ok(RedisValue::NoReply);
    }
    if args.len() < 4 {
        return Err(RedisError::WrongArity);
    }
    let dest = &args[1];
    // the destination's compression when it exists (no copy of any digest is made: each is
    // read in place while it is merged)
    let existing: Option<u64> = keys::read(ctx, &TDIGEST_TYPE, dest, |d: Option<&TDigest>| {
        d.map(TDigest::compression)
    })?;
    let n =
        args::long_long(&args[2]).ok_or(RedisError::Str("ERR T-Digest: error parsing numkeys"))?;
    if n <= 0 {
        return Err(RedisError::Str(
            "ERR T-Digest: numkeys needs to be a positive integer",
        ));
    }
    if n as u64 > (args.len() - 3) as u64 {
        return Err(RedisError::WrongArity);
    }
    let n = n as usize;
    let rest = &args[3 + n..];
    let mut given: Option<u64> = None;
    let mut override_ = false;
    if !rest.is_empty() {
        if let Some(at) = rest.iter().position(|a| args::is(a, "COMPRESSION")) {
            let v = rest.get(at + 1).ok_or(RedisError::WrongArity)?;
            given = Some(compression(v)?);
        }
        override_ = rest.iter().any(|a| args::is(a, "OVERRIDE"));
        if given.is_none() && !override_ {
            return Err(RedisError::Str(WRONG_KEYWORD));
        }
    }
    let sources = &args[3..3 + n];
    let mut largest = 0;
    for key in sources {
        let c = if key.as_slice() == dest.as_slice() {
            existing.ok_or(RedisError::Str(NO_KEY))?
        } else {
            keys::read_existing(ctx, &TDIGEST_TYPE, key, NO_KEY, TDigest::compression)?
        };
        largest = largest.max(c);
    }
    let c = match (given, existing, override_) {
        (Some(c), _, _) => c,
        (None, Some(d), false) => d,
        _ => largest,
    };
    let mut out = new_digest(c, "ERR T-Digest: allocation of destination digest failed")?;
    let mut merge_from = |key: &RedisString| -> Result<(), RedisError> {
        keys::read_existing(ctx, &TDIGEST_TYPE, key, NO_KEY, |t: &TDigest| out.merge(t))?.map_err(
            |e| match e {
                Error::InvalidParameter { .. } => RedisError::Str(OVERFLOW),
                e => lib_error(e),
            },
        )
    };
    if existing.is_some() && !override_ {
        merge_from(dest)?;
    }
    for key in sources {
        merge_from(key)?;
    }
    let k = ctx.open_key_writable(dest);
    k.set_value(&TDIGEST_TYPE, Slot::Ready(out))?;
    keys::written(ctx, dest);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// `TDIGEST.MIN key`: the smallest value added (`nan` when empty).
pub fn min(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    query(ctx, &args[1], |td| RedisValue::Float(td.min()))
}

/// `TDIGEST.MAX key`: the largest value added (`nan` when empty).
pub fn max(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    query(ctx, &args[1], |td| RedisValue::Float(td.max()))
}

fn floats(v: Vec<f64>) -> RedisValue {
    RedisValue::Array(v.into_iter().map(RedisValue::Float).collect())
}

/// Parses every argument from position 2 with `parse`, after checking the key.
fn parsed<T>(
    ctx: &Context,
    args: &[RedisString],
    parse: impl Fn(&RedisString) -> Result<T, RedisError>,
) -> Result<Vec<T>, RedisError> {
    if args.len() < 3 {
        return Err(RedisError::WrongArity);
    }
    check_key(ctx, &args[1])?;
    args[2..].iter().map(parse).collect()
}

/// `TDIGEST.QUANTILE key quantile [quantile ...]`: quantiles in [0, 1].
pub fn quantile(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let qs = parsed(ctx, &args, |a| {
        let q = args::double(a).ok_or(RedisError::Str("ERR T-Digest: error parsing quantile"))?;
        if (0.0..=1.0).contains(&q) {
            Ok(q)
        } else {
            Err(RedisError::Str("ERR T-Digest: quantile should be in [0,1]"))
        }
    })?;
    query(ctx, &args[1], |td| floats(td.quantiles(&qs)))
}

/// `TDIGEST.CDF key value [value ...]`.
pub fn cdf(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let xs = parsed(ctx, &args, |a| {
        args::double(a).ok_or(RedisError::Str("ERR T-Digest: error parsing cdf"))
    })?;
    query(ctx, &args[1], |td| floats(td.cdfs(&xs)))
}

/// `TDIGEST.TRIMMED_MEAN key low_cut_quantile high_cut_quantile`.
pub fn trimmed_mean(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 4 {
        return Err(RedisError::WrongArity);
    }
    check_key(ctx, &args[1])?;
    let lo = args::double(&args[2]).ok_or(RedisError::Str(
        "ERR T-Digest: error parsing low_cut_percentile",
    ))?;
    let hi = args::double(&args[3]).ok_or(RedisError::Str(
        "ERR T-Digest: error parsing high_cut_percentile",
    ))?;
    if !(0.0..=1.0).contains(&lo) || !(0.0..=1.0).contains(&hi) {
        return Err(RedisError::Str(
            "ERR T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]",
        ));
    }
    if lo >= hi {
        return Err(RedisError::Str(
            "ERR T-Digest: low_cut_percentile should be lower than high_cut_percentile",
        ));
    }
    query(ctx, &args[1], |td| {
        RedisValue::Float(td.trimmed_mean(lo, hi))
    })
}

fn ranks(ctx: &Context, args: Vec<RedisString>, reverse: bool) -> RedisResult {
    let xs = parsed(ctx, &args, |a| {
        args::double(a)
            .filter(|v| !v.is_nan())
            .ok_or(RedisError::Str("ERR T-Digest: error parsing value"))
    })?;
    query(ctx, &args[1], |td| {
        RedisValue::Array(
            td.ranks(&xs, reverse)
                .into_iter()
                .map(RedisValue::Integer)
                .collect(),
        )
    })
}

/// `TDIGEST.RANK key value [value ...]`: −1 below the smallest value, the count above the
/// largest, −2 when empty.
pub fn rank(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    ranks(ctx, args, false)
}

/// `TDIGEST.REVRANK key value [value ...]`: −1 above the largest value, the count below the
/// smallest, −2 when empty.
pub fn revrank(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    ranks(ctx, args, true)
}

fn by_ranks(ctx: &Context, args: Vec<RedisString>, reverse: bool) -> RedisResult {
    let rs = parsed(ctx, &args, |a| {
        let r = args::long_long(a).ok_or(RedisError::Str("ERR T-Digest: error parsing rank"))?;
        u64::try_from(r).map_err(|_| RedisError::Str("ERR T-Digest: rank needs to be non negative"))
    })?;
    query(ctx, &args[1], |td| floats(td.by_ranks(&rs, reverse)))
}

/// `TDIGEST.BYRANK key rank [rank ...]`: `inf` from the count on, `nan` when empty.
pub fn byrank(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    by_ranks(ctx, args, false)
}

/// `TDIGEST.BYREVRANK key rank [rank ...]`: `-inf` from the count on, `nan` when empty.
pub fn byrevrank(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    by_ranks(ctx, args, true)
}

/// `TDIGEST.INFO key`: RedisBloom's nine fields (a map in RESP3, the flat array in RESP2).
/// `Memory usage` is the digest's own bytes: the value's `MEMORY USAGE` without the key and
/// without the merged centroids a query keeps until the next write (so it depends on the
/// digest only, as on a replica).
pub fn info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let pairs = keys::read_existing(ctx, &TDIGEST_TYPE, &args[1], NO_KEY, |td: &TDigest| {
        vec![
            ("Compression", int(td.compression())),
            ("Capacity", int(td.capacity())),
            ("Merged nodes", int(td.merged_nodes() as u64)),
            ("Unmerged nodes", int(td.unmerged_nodes() as u64)),
            ("Merged weight", int(td.merged_weight())),
            ("Unmerged weight", int(td.unmerged_weight())),
            ("Observations", int(td.count())),
            ("Total compressions", int(td.compressions())),
            (
                "Memory usage",
                int(value_size(td) - crate::types::tdigest_view_bytes(td)),
            ),
        ]
    })?;
    reply::map(ctx, pairs)
}

/// `TDIGEST.SCANDUMP key iterator` (bloomery extension; the AOF rewrite uses
/// `TDIGEST.LOADCHUNK`).
pub fn scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::scandump::<TDigest>(ctx, args, &TDIGEST_TYPE)
}

/// `TDIGEST.LOADCHUNK key iterator data` (bloomery extension).
pub fn loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::loadchunk::<TDigest>(ctx, args, &TDIGEST_TYPE)
}
