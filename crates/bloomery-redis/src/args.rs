//! Argument parsing shared by the commands. Numbers are read as Redis reads them for
//! RedisBloom (`RedisModule_StringToLongLong`/`StringToDouble`): the whole argument must be
//! the number. Each command turns a refusal into its own error text (RedisBloom's).

use redis_module::{RedisError, RedisString};

/// Whether `arg` is the keyword `kw` (case-insensitive, as Redis does).
pub fn is(arg: &RedisString, kw: &str) -> bool {
    arg.as_slice().eq_ignore_ascii_case(kw.as_bytes())
}

/// An integer, or `None` when the argument is not exactly one.
pub fn int(arg: &RedisString) -> Option<i64> {
    let s = std::str::from_utf8(arg.as_slice()).ok()?;
    if s.starts_with('+') {
        return None;
    }
    s.parse::<i64>().ok()
}

/// A number (not NaN), or `None` when the argument is not exactly one.
pub fn float(arg: &RedisString) -> Option<f64> {
    let s = std::str::from_utf8(arg.as_slice()).ok()?;
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    s.parse::<f64>().ok().filter(|v| !v.is_nan())
}

/// An integer in `lo..=hi` as a `u32`, `None` otherwise.
pub fn int_in(arg: &RedisString, lo: i64, hi: i64) -> Option<u32> {
    int(arg)
        .filter(|n| (lo..=hi).contains(n))
        .and_then(|n| u32::try_from(n).ok())
}

/// A SCANDUMP/LOADCHUNK iterator: an integer ≥ 0.
pub fn iterator(arg: &RedisString) -> Result<u64, RedisError> {
    match int(arg) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(RedisError::Str("ERR Second argument must be numeric")),
    }
}

/// A whole number as `RedisModule_StringToLongLong` reads it (what RedisBloom's handlers
/// call; the commands on values moved from RedisBloom read their numbers so).
pub fn long_long(arg: &RedisString) -> Option<i64> {
    arg.parse_integer().ok()
}

/// A number as `RedisModule_StringToDouble` reads it (see [`long_long`]).
pub fn double(arg: &RedisString) -> Option<f64> {
    arg.parse_float().ok()
}
