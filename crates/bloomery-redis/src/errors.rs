//! Error replies: the one mapping of library errors, and the texts several commands share
//! (RedisBloom's where RedisBloom has one, since clients match on them).

use bloomery::Error;
use redis_module::RedisError;

/// A key of ours that a LOADCHUNK sequence is still filling.
pub const LOADING: &str = "ERR filter is being loaded (LOADCHUNK in progress)";
/// A missing key where the command needs one (`BF.*`, `CF.INFO`, own types).
pub const NOT_FOUND: &str = "ERR not found";
/// RESERVE on a key that exists.
pub const ITEM_EXISTS: &str = "ERR item exists";
/// `BF.ADD`/`MADD`/`INSERT` on a full non-scaling filter.
pub const BF_FULL: &str = "ERR non scaling filter is full";
/// `CF.ADD` when no slot can be found and the filter cannot grow.
pub const CF_FULL: &str = "Filter is full";

/// A creation over the limit, in RedisBloom's words (`BF.RESERVE`, `BF.INSERT`, `CF.RESERVE`,
/// `CF.INSERT`): clients match on them; the sizes follow.
pub const NO_MEMORY_FILTER: &str = "ERR Insufficient memory to create filter";
/// As [`NO_MEMORY_FILTER`], for `CMS.INITBYDIM`/`INITBYPROB`.
pub const NO_MEMORY_CMS: &str = "CMS: Insufficient memory to create the key";
/// As [`NO_MEMORY_FILTER`], for `TOPK.RESERVE`.
pub const NO_MEMORY_TOPK: &str = "ERR Insufficient memory to create topk data structure";

/// A library error from creating a structure: over the limit, RedisBloom's `prefix` (one of
/// the `NO_MEMORY_*` texts) and then the sizes; anything else as [`lib_error`].
pub fn create_error(prefix: &'static str) -> impl Fn(Error) -> RedisError {
    move |e| match e {
        Error::TooLarge { requested, limit } => {
            let detail = too_large(requested, limit);
            let detail = detail.strip_prefix("ERR the structure").unwrap_or(&detail);
            RedisError::String(format!("{prefix}: it{detail}"))
        }
        other => lib_error(other),
    }
}

/// A library error as an error reply. Sizes over `MAX-BYTES` name the limit; a structure that
/// cannot take more items says so.
pub fn lib_error(e: Error) -> RedisError {
    match e {
        Error::Full { .. } => RedisError::Str(BF_FULL),
        Error::TooLarge { requested, limit } => RedisError::String(too_large(requested, limit)),
        other => RedisError::String(format!("ERR {other}")),
    }
}

/// The text of a refusal over the `MAX-BYTES` limit.
pub fn too_large(requested: u64, limit: u64) -> String {
    if requested == u64::MAX {
        format!(
            "ERR the structure would need more than the module's MAX-BYTES limit of {limit} bytes"
        )
    } else {
        format!(
            "ERR the structure would need {requested} bytes, over the module's MAX-BYTES limit of {limit}"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts() {
        let e = |r| match r {
            RedisError::Str(s) => s.to_string(),
            RedisError::String(s) => s,
            other => format!("{other:?}"),
        };
        assert_eq!(e(lib_error(Error::Full { capacity: 1 })), BF_FULL);
        assert!(e(lib_error(Error::TooLarge {
            requested: 10,
            limit: 5
        }))
        .contains("10 bytes, over the module's MAX-BYTES limit of 5"));
        assert!(e(lib_error(Error::TooLarge {
            requested: u64::MAX,
            limit: 5
        }))
        .contains("more than the module's MAX-BYTES limit of 5 bytes"));
        let t = e(create_error(NO_MEMORY_CMS)(Error::TooLarge {
            requested: 10,
            limit: 5,
        }));
        assert_eq!(
            t,
            "CMS: Insufficient memory to create the key: it would need 10 bytes, over the \
             module's MAX-BYTES limit of 5"
        );
        assert_eq!(
            e(create_error(NO_MEMORY_CMS)(Error::Full { capacity: 1 })),
            BF_FULL
        );
    }
}
