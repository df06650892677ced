//! Shared argument parsing: every command reads its arguments through these helpers, which
//! turn bad input into a typed [`ArgError`] and then into RedisBloom's error strings.

use redis_module::{RedisError, RedisString};

/// Why an argument was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgError {
    /// Not an integer, or not a positive one.
    BadCapacity,
    /// Not a number.
    BadErrorRate,
    /// A number outside (0, 1).
    ErrorRateRange,
    /// Not an integer ≥ 1 (bloom) or ≥ 0 (cuckoo).
    BadExpansion,
    /// NONSCALING together with EXPANSION.
    NonScalingExpansion,
    /// Cuckoo bucket size outside 1..=255.
    BadBucketSize,
    /// Cuckoo max iterations outside 1..=65535.
    BadMaxIterations,
    /// NOCREATE together with creation options.
    NoCreateWithOptions,
    /// ITEMS missing or followed by nothing.
    NoItems,
    /// An option the command does not know.
    UnknownOption(String),
    /// An iterator that is not a non-negative integer.
    BadIterator,
    /// Any other message.
    Other(&'static str),
}

impl From<ArgError> for RedisError {
    fn from(e: ArgError) -> Self {
        match e {
            ArgError::BadCapacity => RedisError::Str("ERR (capacity should be larger than 0)"),
            ArgError::BadErrorRate => RedisError::Str("ERR bad error rate"),
            ArgError::ErrorRateRange => RedisError::Str("ERR (0 < error rate range < 1)"),
            ArgError::BadExpansion => RedisError::Str("ERR bad expansion"),
            ArgError::NonScalingExpansion => {
                RedisError::Str("ERR Nonscaling filters cannot expand")
            }
            ArgError::BadBucketSize => RedisError::Str("ERR Bad bucket size"),
            ArgError::BadMaxIterations => RedisError::Str("ERR Bad maxIterations"),
            ArgError::NoCreateWithOptions => {
                RedisError::Str("ERR NOCREATE cannot be used together with CAPACITY or ERROR")
            }
            ArgError::NoItems => RedisError::Str("ERR no items given (ITEMS item [item ...])"),
            ArgError::UnknownOption(o) => RedisError::String(format!("ERR unknown argument '{o}'")),
            ArgError::BadIterator => RedisError::Str("ERR invalid iterator (must be an integer)"),
            ArgError::Other(s) => RedisError::Str(s),
        }
    }
}

/// The argument as text, if it is UTF-8 (options are ASCII keywords).
pub fn text(arg: &RedisString) -> &[u8] {
    arg.as_slice()
}

/// Whether `arg` is the keyword `kw` (case-insensitive, as Redis does).
pub fn is(arg: &RedisString, kw: &str) -> bool {
    text(arg).eq_ignore_ascii_case(kw.as_bytes())
}

fn int(arg: &RedisString) -> Option<i64> {
    std::str::from_utf8(arg.as_slice())
        .ok()?
        .trim()
        .parse::<i64>()
        .ok()
}

/// A capacity: an integer ≥ 1.
pub fn capacity(arg: &RedisString) -> Result<u64, ArgError> {
    match int(arg) {
        Some(n) if n >= 1 => Ok(n as u64),
        _ => Err(ArgError::BadCapacity),
    }
}

/// An error rate: a finite number strictly between 0 and 1.
pub fn error_rate(arg: &RedisString) -> Result<f64, ArgError> {
    let v = std::str::from_utf8(arg.as_slice())
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .ok_or(ArgError::BadErrorRate)?;
    if v.is_finite() && v > 0.0 && v < 1.0 {
        Ok(v)
    } else {
        Err(ArgError::ErrorRateRange)
    }
}

/// An integer in `lo..=hi`, or `err`.
pub fn bounded(arg: &RedisString, lo: i64, hi: i64, err: ArgError) -> Result<u32, ArgError> {
    match int(arg) {
        Some(n) if (lo..=hi).contains(&n) => u32::try_from(n).map_err(|_| err),
        _ => Err(err),
    }
}

/// A SCANDUMP/LOADCHUNK iterator: an integer ≥ 0.
pub fn iterator(arg: &RedisString) -> Result<u64, ArgError> {
    match int(arg) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(ArgError::BadIterator),
    }
}
