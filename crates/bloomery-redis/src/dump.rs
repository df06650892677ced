//! SCANDUMP / LOADCHUNK and `BLOOMERY.DUMP`: a structure travels as the library's file-format
//! bytes, cut into chunks.
//!
//! The iterator is a byte offset. `SCANDUMP key 0` answers `[H, header]` where `H` is the
//! header's length; `SCANDUMP key it` answers `[it + len, bytes[it .. it + len]]` (at most
//! [`CHUNK`] bytes) and `[0, ""]` once `it` reaches the end. `LOADCHUNK key it data` takes
//! exactly those pairs, in order: the chunk must start where the previous one ended
//! (`it - len(data)`). The first chunk is the header, which is validated (magic, version, kind,
//! lengths, `MAX-BYTES`) before anything is stored; the last chunk completes the bytes, which
//! are then decoded with full validation (checksum, every parameter). Any failure is an error
//! reply; a failed final decode deletes the half-loaded key.

use bloomery::Kind;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args;
use crate::config;
use crate::types::{Partial, Slot, Structure};

/// Largest chunk SCANDUMP returns after the header.
pub const CHUNK: usize = 4 << 20;

/// What a validated header announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Header length (the first chunk's length).
    pub header_len: usize,
    /// Length of the whole file-format byte string.
    pub total: u64,
}

/// Validate the start of a file-format byte string (at least its fixed header) for `kind`,
/// refusing payloads over `MAX-BYTES` (plus 64 bytes of padding per part).
pub fn check_header(b: &[u8], kind: Kind) -> Result<Head, String> {
    // the library's header codec: every field the header states is validated
    let head = bloomery::peek_header_bytes(b).map_err(|e| format!("bad header: {e}"))?;
    let found = head.header.kind;
    if found != kind {
        return Err(format!("not a {} (kind id {})", kind.name(), found.id()));
    }
    let p = head.payload_len;
    let limit = config::max_bytes().saturating_add(64 * 64);
    if p > limit {
        return Err(format!(
            "payload of {p} bytes exceeds the module's MAX-BYTES limit of {}",
            config::max_bytes()
        ));
    }
    Ok(Head {
        header_len: head.header_len as usize,
        total: head.file_len,
    })
}

/// Header length of well-formed bytes (falls back to the whole length).
fn header_len(bytes: &[u8]) -> usize {
    bloomery::peek_header_bytes(bytes)
        .map_or(bytes.len(), |h| h.header_len as usize)
        .min(bytes.len())
}

/// The chunk starting at `it` (0: the header) and the iterator that follows it, or `None`
/// past the end.
pub fn chunk_at(bytes: &[u8], it: u64) -> Option<(u64, &[u8])> {
    let start = usize::try_from(it).ok()?;
    if start >= bytes.len() {
        return None;
    }
    let end = if start == 0 {
        header_len(bytes)
    } else {
        start.saturating_add(CHUNK).min(bytes.len())
    };
    Some((end as u64, &bytes[start..end]))
}

/// Every chunk with its iterator, in order.
pub fn chunks(bytes: &[u8]) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    let mut it = 0;
    while let Some((next, c)) = chunk_at(bytes, it) {
        out.push((next, c));
        it = next;
    }
    out
}

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
    let bytes = f.to_bytes();
    Ok(match chunk_at(&bytes, it) {
        Some((next, c)) => RedisValue::Array(vec![
            RedisValue::Integer(next as i64),
            RedisValue::StringBuffer(c.to_vec()),
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
        let head = check_header(data, T::FILE_KIND)
            .map_err(|e| RedisError::String(format!("ERR invalid chunk - {e}")))?;
        if head.header_len != data.len() {
            return Err(RedisError::Str(
                "ERR invalid chunk - the first chunk must be exactly the header",
            ));
        }
        let partial = Partial {
            bytes: data.to_vec(),
            total: head.total,
        };
        match current {
            Some(slot) => *slot = Slot::Loading(partial),
            None => k.set_value(ty, Slot::<T>::Loading(partial))?,
        }
        ctx.replicate_verbatim();
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
    ctx.replicate_verbatim();
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// `BLOOMERY.DUMP key`: the structure's bytes in the library's file format, whatever its type
/// (so `bloomery info` can read what the server built).
pub fn bloomery_dump(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    if args.len() != 2 {
        return Err(RedisError::WrongArity);
    }
    let k = ctx.open_key(&args[1]);
    if let Ok(Some(s)) = k.get_value::<Slot<bloomery::ScalableBloomFilter>>(&crate::types::BF_TYPE)
    {
        return ready_bytes(s);
    }
    if let Ok(Some(s)) = k.get_value::<Slot<bloomery::CuckooFilter>>(&crate::types::CF_TYPE) {
        return ready_bytes(s);
    }
    if let Ok(Some(s)) = k.get_value::<Slot<bloomery::CountMinSketch>>(&crate::types::CMS_TYPE) {
        return ready_bytes(s);
    }
    if let Ok(Some(s)) = k.get_value::<Slot<bloomery::CountingBloomFilter>>(&crate::types::CBF_TYPE)
    {
        return ready_bytes(s);
    }
    if let Ok(Some(s)) =
        k.get_value::<Slot<bloomery::BlockedCountingBloomFilter>>(&crate::types::BCBF_TYPE)
    {
        return ready_bytes(s);
    }
    if let Ok(Some(s)) =
        k.get_value::<Slot<bloomery::IterativeBloomFilter>>(&crate::types::IBF_TYPE)
    {
        return ready_bytes(s);
    }
    if let Ok(Some(s)) = k.get_value::<Slot<bloomery::TopK>>(&crate::types::TOPK_TYPE) {
        return ready_bytes(s);
    }
    if let Ok(Some(s)) =
        k.get_value::<Slot<bloomery::MultiLayerBloomFilter>>(&crate::types::MLBF_TYPE)
    {
        return ready_bytes(s);
    }
    if k.is_null() {
        return Err(RedisError::Str("ERR not found"));
    }
    Err(RedisError::WrongType)
}

fn ready_bytes<T: Structure>(s: &Slot<T>) -> RedisResult {
    match s {
        Slot::Ready(f) => Ok(RedisValue::StringBuffer(f.to_bytes())),
        Slot::Loading(_) => Err(RedisError::Str(
            "ERR filter is being loaded (LOADCHUNK in progress)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomery::{Filter, Persist, ScalableBloomFilter};

    #[test]
    fn chunks_cover_the_bytes_in_order() {
        let mut f = ScalableBloomFilter::try_new(100_000, 0.01).unwrap();
        f.insert("a");
        let bytes = f.to_bytes();
        let cs = chunks(&bytes);
        let head = check_header(cs[0].1, Kind::Scalable).unwrap();
        assert_eq!(head.header_len, cs[0].1.len());
        assert_eq!(head.total, bytes.len() as u64);
        let joined: Vec<u8> = cs.iter().flat_map(|(_, c)| c.iter().copied()).collect();
        assert_eq!(joined, bytes);
        assert_eq!(cs.last().unwrap().0, bytes.len() as u64);
        assert!(chunk_at(&bytes, bytes.len() as u64).is_none());
    }

    #[test]
    fn bad_headers_are_refused() {
        let f = ScalableBloomFilter::try_new(100, 0.01).unwrap();
        let bytes = f.to_bytes();
        assert!(check_header(&bytes[..10], Kind::Scalable).is_err());
        assert!(check_header(&bytes, Kind::Cuckoo).is_err());
        let mut b = bytes.clone();
        b[0] = b'X';
        assert!(check_header(&b, Kind::Scalable).is_err());
        let mut b = bytes.clone();
        b[16..24].copy_from_slice(&(u64::MAX - 63).to_le_bytes());
        assert!(check_header(&b, Kind::Scalable).is_err());
    }
}
