//! SCANDUMP / LOADCHUNK: a structure travels as the library's file-format
//! bytes, cut into chunks.
//!
//! The iterator is a byte offset. `SCANDUMP key 0` answers `[H, header]` where `H` is the
//! header's length; `SCANDUMP key it` answers `[it + len, bytes[it .. it + len]]` (at most
//! [`CHUNK`](crate::chunk::CHUNK) bytes) and `[0, ""]` once `it` reaches the end. `LOADCHUNK key it data` takes
//! exactly those pairs, in order: the chunk must start where the previous one ended
//! (`it - len(data)`). The first chunk is the header, which is validated (magic, version, kind,
//! lengths, `MAX-BYTES`) before anything is stored; the last chunk completes the bytes, which
//! are then decoded with full validation (checksum, every parameter). Any failure is an error
//! reply; a failed final decode deletes the half-loaded key.

use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args;
use crate::chunk::chunk_of;
use crate::types::{Partial, Slot, Structure};

/// `XX.SCANDUMP key iterator`.
pub fn scandump<T: Structure>(
    ctx: &Context,
    args: Vec<RedisString>,
    ty: &redis_module::native_types::RedisType,
) -> RedisResult {
    if args.len() != 3 {
        return Err(RedisError::WrongArity);
    }
    let it = args::iterator(&args[2])?;
    let k = ctx.open_key(&args[1]);
    let slot = k
        .get_value::<Slot<T>>(ty)
        .map_err(|_| RedisError::WrongType)?
        .ok_or(RedisError::Str("ERR not found"))?;
    let Slot::Ready(f) = slot else {
        return Err(RedisError::Str(
            "ERR filter is being loaded (LOADCHUNK in progress)",
        ));
    };
    Ok(match chunk_of(f, it) {
        Some((next, c)) => RedisValue::Array(vec![
            RedisValue::Integer(next as i64),
            RedisValue::StringBuffer(c),
        ]),
        None => RedisValue::Array(vec![
            RedisValue::Integer(0),
            RedisValue::StringBuffer(Vec::new()),
        ]),
    })
}

/// `XX.LOADCHUNK key iterator data`.
pub fn loadchunk<T: Structure>(
    ctx: &Context,
    args: Vec<RedisString>,
    ty: &redis_module::native_types::RedisType,
) -> RedisResult {
    if args.len() != 4 {
        return Err(RedisError::WrongArity);
    }
    let it = args::iterator(&args[2])?;
    let data = args[3].as_slice();
    if data.is_empty() || (data.len() as u64) > it {
        return Err(RedisError::Str("ERR invalid chunk - bad iterator"));
    }
    let start = it - data.len() as u64;
    let k = ctx.open_key_writable(&args[1]);
    let current = k
        .get_value::<Slot<T>>(ty)
        .map_err(|_| RedisError::WrongType)?;
    if start == 0 {
        // The header chunk starts (or restarts) a load; it never replaces a ready filter.
        if matches!(current, Some(Slot::Ready(_))) {
            return Err(RedisError::Str("ERR item exists"));
        }
        let head = crate::types::check_kind_header::<T>(data)
            .map_err(|e| RedisError::String(format!("ERR invalid chunk - {e}")))?;
        if head.header_len != data.len() {
            return Err(RedisError::Str(
                "ERR invalid chunk - the first chunk must be exactly the header",
            ));
        }
        // the whole length is reserved now (the header's payload is within `MAX-BYTES`, as a
        // BF.RESERVE of that size would be): the chunks then land in place, with no copy of
        // what came before and no page touched twice
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(usize::try_from(head.total).unwrap_or(usize::MAX))
            .map_err(|_| {
                RedisError::Str("ERR invalid chunk - cannot allocate the announced length")
            })?;
        bytes.extend_from_slice(data);
        let partial = Partial {
            bytes,
            total: head.total,
        };
        match current {
            Some(slot) => *slot = Slot::Loading(partial),
            None => k.set_value(ty, Slot::<T>::Loading(partial))?,
        }
        crate::keys::written(ctx, &args[1]);
        return Ok(RedisValue::SimpleStringStatic("OK"));
    }
    let slot = current.ok_or(RedisError::Str("ERR not found"))?;
    let Slot::Loading(p) = slot else {
        return Err(RedisError::Str(
            "ERR invalid chunk - the filter is not being loaded",
        ));
    };
    if start != p.bytes.len() as u64 {
        return Err(RedisError::Str("ERR invalid chunk - out of order"));
    }
    if it > p.total {
        return Err(RedisError::Str(
            "ERR invalid chunk - past the announced length",
        ));
    }
    p.bytes.extend_from_slice(data);
    if it == p.total {
        match T::decode(&p.bytes) {
            Ok(f) => *slot = Slot::Ready(f),
            Err(e) => {
                k.delete()?;
                return Err(RedisError::String(format!("ERR invalid chunk - {e}")));
            }
        }
    }
    crate::keys::written(ctx, &args[1]);
    Ok(RedisValue::SimpleStringStatic("OK"))
}
