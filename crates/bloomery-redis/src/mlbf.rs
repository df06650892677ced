//! `MLBF.*`: bloomery's multi-layer Bloom filter for URLs ([`MultiLayerBloomFilter`], Cen, Xu & Sun)
//! with the `BF.*` conventions.
//!
//! `MLBF.RESERVE key capacity error_rate [LAYERS L]` sizes L layers (default 4, the paper's) for
//! `capacity` URLs so that a near miss (a known URL with a new last segment) is passed at
//! `error_rate` at most (the library's `MlbfBuilder::fpr`); `ADD` auto-creates with `BF.ADD`'s defaults (capacity 100, error 0.01)
//! and 4 layers. Items are URLs, normalised by the library (protocol and fragment dropped, host
//! lower-cased, default port and trailing slashes removed, one layer per path segment): `ADD`
//! and `EXISTS` answer `ERR invalid URL: …` for a URL that is not UTF-8, is empty, or has no
//! host, and create nothing.

use bloomery::keys::normalize_url;
use bloomery::{MultiLayerBloomFilter, Stats};
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args;
use crate::config;
use crate::dump;
use crate::errors::lib_error;
use crate::keys;
use crate::limits::{MLBF_LAYERS, OWN_DEFAULT_CAPACITY, OWN_DEFAULT_ERROR_RATE};
use crate::own::{info_generic, reserve_generic, size, sizing, unknown, with_filter};
use crate::reply::{self, int};
use crate::types::MLBF_TYPE;

/// Layers of auto-created filters (the paper's L).
pub const DEFAULT_LAYERS: u32 = MLBF_LAYERS.0;

fn build(capacity: u64, error: f64, layers: u32) -> Result<MultiLayerBloomFilter, RedisError> {
    let key = format!(
        "mlbf {} {} {} {}",
        capacity,
        error.to_bits(),
        layers,
        config::max_bytes()
    );
    crate::templates::get_or_make(&key, || {
        MultiLayerBloomFilter::builder()
            .layers(layers)
            .capacity(capacity)
            .fpr(error)
            .max_bytes(config::max_bytes())
            .try_build()
            .map_err(lib_error)
    })
}

fn default() -> Result<MultiLayerBloomFilter, RedisError> {
    build(OWN_DEFAULT_CAPACITY, OWN_DEFAULT_ERROR_RATE, DEFAULT_LAYERS)
}

/// The URL argument, checked before any key is touched (normalisation errors do not depend on
/// the number of layers).
fn url(arg: &RedisString) -> Result<&str, RedisError> {
    let s = std::str::from_utf8(arg.as_slice())
        .map_err(|_| RedisError::Str("ERR invalid URL: not UTF-8"))?;
    normalize_url(s, 1).map_err(|e| RedisError::String(format!("ERR invalid URL: {e}")))?;
    Ok(s)
}

/// `MLBF.RESERVE key capacity error_rate [LAYERS L]` (L in 1..=32, default 4).
pub fn reserve(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 4 && args.len() != 6 {
        return Err(RedisError::WrongArity);
    }
    let (capacity, error) = sizing(&args)?;
    let mut layers = DEFAULT_LAYERS;
    if args.len() == 6 {
        if !args::is(&args[4], "LAYERS") {
            return Err(unknown(&args[4]));
        }
        layers = args::int_in(&args[5], 1, i64::from(MLBF_LAYERS.1))
            .ok_or(RedisError::Str("ERR bad layers (1..=32)"))?;
    }
    let filter = build(capacity, error, layers)?;
    reserve_generic(ctx, &MLBF_TYPE, &args[1], filter)
}

/// `MLBF.ADD key url`: 1 if the URL was new (some bit changed), else 0.
pub fn add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let u = url(&args[2])?;
    let new = with_filter(
        ctx,
        &MLBF_TYPE,
        &args[1],
        Some(&default),
        |f: &mut MultiLayerBloomFilter| f.insert(u),
    )?
    .map_err(lib_error)?;
    crate::keys::written(ctx, &args[1]);
    Ok(reply::bool(new))
}

/// `MLBF.EXISTS key url`: 1 if the URL may have been added, 0 if certainly not (0 for a
/// missing key).
pub fn exists(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let u = url(&args[2])?;
    let found = keys::read(
        ctx,
        &MLBF_TYPE,
        &args[1],
        |f: Option<&MultiLayerBloomFilter>| f.map(|f| f.contains(u)).transpose(),
    )?
    .map_err(lib_error)?;
    Ok(reply::bool(found.unwrap_or(false)))
}

/// `MLBF.INFO key`.
pub fn info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    info_generic(ctx, &MLBF_TYPE, &args, |f: &MultiLayerBloomFilter| {
        vec![
            ("Capacity", int(Stats::capacity(f))),
            ("Size", size(f)),
            ("Number of layers", int(u64::from(f.layers()))),
            ("Bits per layer", int(f.bits_per_layer())),
            ("Number of hash functions", int(u64::from(f.hashes()))),
            ("Number of items inserted", int(f.len())),
            ("Error rate", RedisValue::Float(Stats::target_fpr(f))),
        ]
    })
}

/// `MLBF.SCANDUMP key iterator`.
pub fn scandump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::scandump::<MultiLayerBloomFilter>(ctx, args, &MLBF_TYPE)
}

/// `MLBF.LOADCHUNK key iterator data`.
pub fn loadchunk(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    dump::loadchunk::<MultiLayerBloomFilter>(ctx, args, &MLBF_TYPE)
}
