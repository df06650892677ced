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
    }
}
