//! RedisBloom compatibility: its Bloom filter chain and cuckoo filter with their exact
//! mapping, and its SCANDUMP chunks — the data path for moving RedisBloom 2.x values to
//! bloomery.
//!
//! RedisBloom's `BF.*` values (Redis type `MBbloom--`) are scalable chains of Bloom filters
//! hashed with MurmurHash64A; its `CF.*` values (`MBbloomCF`) are cuckoo filters of one-byte
//! fingerprints. bloomery's own [`crate::ScalableBloomFilter`] and [`crate::CuckooFilter`]
//! hash differently, so a RedisBloom value cannot become one of them without its keys. The
//! two kinds here keep RedisBloom's mapping instead — same hash, same bit and bucket layout,
//! same sizing, growth and eviction order — so a value moved from RedisBloom answers every
//! query exactly as RedisBloom did, and keeps doing so as keys are added:
//!
//! - [`RedisBloomFilter`] (file kind 22, `redisbloom-bf`): the chain;
//! - [`RedisBloomCuckooFilter`] (file kind 23, `redisbloom-cf`): the cuckoo filter.
//!
//! Both implement [`crate::Filter`] and [`crate::Persist`] and load through
//! [`crate::AnyFilter`], so the CLI and the Redis module treat them like any other set
//! filter. Their type docs give the mapping and the SCANDUMP layout.
//!
//! ## Moving data
//! RedisBloom's `BF.SCANDUMP key it` / `CF.SCANDUMP key it` return a header chunk (with
//! iterator 1) and then data chunks. [`RedisBloomValue::from_chunks`] rebuilds a value from
//! such a sequence, checking that the data chunks cover every byte once, in order;
//! [`RedisBloomChunkFile`] is the file format the migration script
//! (`scripts/migrate-redisbloom.py save`) writes them in, which
//! `bloomery import --from redisbloom` reads. Every header field is validated as RedisBloom
//! validates it and against a memory limit before anything is allocated; malformed input is a
//! typed [`RedisBloomChunkError`], never a panic.

mod chain;
mod chunk_file;
mod cuckoo;

pub use chain::{RedisBloomFilter, RedisBloomLink};
pub use chunk_file::{RedisBloomChunkFile, RedisBloomType};
pub use cuckoo::{RedisBloomCuckooFilter, RedisBloomCuckooInsert};

use crate::error::{Error, FormatError};
use crate::store::Words;

/// Largest data chunk RedisBloom's SCANDUMP returns (16 MiB).
pub(crate) const MAX_CHUNK: u64 = 16 << 20;

/// Why a SCANDUMP chunk (or a chunk file) was refused.
///
/// ```
/// use bloomery::redisbloom::{RedisBloomChunkError, RedisBloomType, RedisBloomValue};
///
/// // the header chunk must come first, with iterator 1
/// let e = RedisBloomValue::from_chunks(RedisBloomType::Bloom, [(7i64, &b"x"[..])], 1 << 20)
///     .unwrap_err();
/// assert!(matches!(e, RedisBloomChunkError::Sequence(_)), "{e}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedisBloomChunkError {
    /// The header chunk is malformed or announces values RedisBloom would refuse.
    #[error("bad header chunk: {0}")]
    BadHeader(String),
    /// A cuckoo header chunk that is not 38 bytes long.
    #[error("bad header chunk: {0} bytes, a cuckoo filter header has 38")]
    HeaderLength(usize),
    /// The iterator cannot follow a chunk of this length (it is the position after the
    /// chunk's last byte, counted from 1).
    #[error("iterator {iterator} cannot end a chunk of {len} bytes")]
    BadIterator {
        /// The iterator given.
        iterator: i64,
        /// The chunk's length.
        len: u64,
    },
    /// The chunk starts past the last sub-filter.
    #[error("no sub-filter at byte {offset}")]
    NoSubFilter {
        /// Byte offset of the chunk's start in the sub-filters laid end to end.
        offset: u64,
    },
    /// The chunk runs past the end of the sub-filter it starts in.
    #[error("a chunk of {len} bytes at offset {offset} of its sub-filter crosses its end ({room} bytes left)")]
    CrossesEnd {
        /// Offset in the sub-filter.
        offset: u64,
        /// The chunk's length.
        len: u64,
        /// Bytes left in the sub-filter.
        room: u64,
    },
    /// The value would need more memory than the limit allows.
    #[error("the filter needs {requested} bytes, over the limit of {limit}")]
    TooLarge {
        /// Bytes needed.
        requested: u64,
        /// The limit in force.
        limit: u64,
    },
    /// The memory could not be allocated.
    #[error("could not allocate {0} bytes")]
    AllocationFailed(u64),
    /// A sequence that is not a complete SCANDUMP: no header first, chunks out of order,
    /// overlapping or missing.
    #[error("incomplete or out-of-order chunks: {0}")]
    Sequence(String),
    /// A chunk file that cannot be read.
    #[error("bad chunk file: {0}")]
    BadFile(String),
}

impl From<Error> for RedisBloomChunkError {
    /// Allocation errors of the structures (the only errors chunk loading can meet).
    fn from(e: Error) -> Self {
        match e {
            Error::TooLarge { requested, limit } => {
                RedisBloomChunkError::TooLarge { requested, limit }
            }
            Error::AllocationFailed { bytes } => RedisBloomChunkError::AllocationFailed(bytes),
            other => RedisBloomChunkError::BadHeader(other.to_string()),
        }
    }
}

impl From<RedisBloomChunkError> for Error {
    fn from(e: RedisBloomChunkError) -> Self {
        match e {
            RedisBloomChunkError::TooLarge { requested, limit } => {
                Error::TooLarge { requested, limit }
            }
            RedisBloomChunkError::AllocationFailed(bytes) => Error::AllocationFailed { bytes },
            other => Error::Format(FormatError::Inconsistent(other.to_string())),
        }
    }
}

/// A RedisBloom value of either type.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::redisbloom::{RedisBloomCuckooFilter, RedisBloomType, RedisBloomValue};
///
/// let mut bf = RedisBloomCuckooFilter::reserve(1000, 2, 20, 1, 1 << 30)?;
/// bf.add(b"a");
///
/// // a SCANDUMP as RedisBloom returns it: (1, header), then data chunks until `None`
/// let mut chunks = vec![(1i64, bf.header_chunk())];
/// let mut it = 1;
/// while let Some((next, data)) = bf.chunk(it) {
///     chunks.push((next, data));
///     it = next;
/// }
///
/// match RedisBloomValue::from_chunks(
///     RedisBloomType::Cuckoo,
///     chunks.iter().map(|(i, c)| (*i, &c[..])),
///     1 << 30,
/// )? {
///     RedisBloomValue::Cuckoo(cf) => assert!(cf.contains(b"a")),
///     RedisBloomValue::Bloom(_) => unreachable!("asked for a cuckoo filter"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum RedisBloomValue {
    /// A `BF.*` value.
    Bloom(RedisBloomFilter),
    /// A `CF.*` value.
    Cuckoo(RedisBloomCuckooFilter),
}

impl RedisBloomValue {
    /// Largest data chunk RedisBloom's SCANDUMP returns (16 MiB).
    pub const MAX_CHUNK: u64 = MAX_CHUNK;

    /// Rebuild a value from its complete SCANDUMP sequence: the header chunk (iterator 1) and
    /// then every data chunk, in order, covering each byte of the value exactly once (as
    /// `SCANDUMP` returns them; a cuckoo filter without items may come as its header alone, since
    /// RedisBloom dumps no chunk for it). Sizes are checked against `limit` bytes before
    /// allocating.
    pub fn from_chunks<'a>(
        ty: RedisBloomType,
        chunks: impl IntoIterator<Item = (i64, &'a [u8])>,
        limit: u64,
    ) -> Result<RedisBloomValue, RedisBloomChunkError> {
        let mut it = chunks.into_iter();
        let seq = |m: String| RedisBloomChunkError::Sequence(m);
        let (first, header) = it
            .next()
            .ok_or_else(|| seq("no chunks (the header chunk comes first)".into()))?;
        if first != 1 {
            return Err(seq(format!(
                "the first chunk has iterator {first}, the header chunk has 1"
            )));
        }
        let mut value = match ty {
            RedisBloomType::Bloom => {
                RedisBloomValue::Bloom(RedisBloomFilter::from_header_chunk(header, limit)?)
            }
            RedisBloomType::Cuckoo => {
                RedisBloomValue::Cuckoo(RedisBloomCuckooFilter::from_header_chunk(header, limit)?)
            }
        };
        let total = match &value {
            RedisBloomValue::Bloom(f) => f.allocated_bytes(),
            RedisBloomValue::Cuckoo(f) => f.allocated_bytes(),
        };
        // data chunk `(it, data)` covers positions it − len .. it of the 1-based byte sequence
        let mut next = 1u64;
        for (iter, data) in it {
            if data.is_empty() {
                return Err(seq(format!("empty chunk at iterator {iter}")));
            }
            let start = u64::try_from(iter)
                .ok()
                .and_then(|i| i.checked_sub(data.len() as u64))
                .ok_or(RedisBloomChunkError::BadIterator {
                    iterator: iter,
                    len: data.len() as u64,
                })?;
            if start != next {
                return Err(seq(format!(
                    "chunk ending at iterator {iter} starts at byte {}, expected {}",
                    start.saturating_sub(1),
                    next - 1
                )));
            }
            match &mut value {
                RedisBloomValue::Bloom(f) => f.load_chunk(iter, data)?,
                RedisBloomValue::Cuckoo(f) => f.load_chunk(iter, data)?,
            }
            next = iter as u64;
        }
        // RedisBloom's CF.SCANDUMP returns no chunk at all for a filter without items: its slots
        // are all empty, so the header alone is the whole value
        let empty_cuckoo = matches!(&value, RedisBloomValue::Cuckoo(f) if f.is_empty());
        if next - 1 != total && !(next == 1 && empty_cuckoo) {
            return Err(seq(format!(
                "the chunks cover {} of the value's {total} bytes",
                next - 1
            )));
        }
        Ok(value)
    }
}

/// `len` bytes of `words` (byte `j` is bits `8j..8j+8` of the little-endian words) from byte
/// `offset`.
pub(crate) fn bytes_of(words: &Words, offset: u64, len: usize) -> Vec<u8> {
    let w = words.as_slice();
    let start = offset as usize;
    if cfg!(target_endian = "little") {
        let b: &[u8] = bytemuck::cast_slice(w);
        return b[start..start + len].to_vec();
    }
    (start..start + len).map(|j| byte(w, j as u64)).collect()
}

/// Write `data` at byte `offset` of `words` (the caller checked the range).
pub(crate) fn copy_into(words: &mut Words, offset: u64, data: &[u8]) {
    let start = offset as usize;
    if cfg!(target_endian = "little") {
        let b: &mut [u8] = bytemuck::cast_slice_mut(words.as_mut_slice());
        b[start..start + data.len()].copy_from_slice(data);
        return;
    }
    let w = words.as_mut_slice();
    for (j, &v) in data.iter().enumerate() {
        set_byte(w, offset + j as u64, v);
    }
}

/// Whether every byte of `words` from byte `len` on is zero.
pub(crate) fn check_tail(words: &Words, len: u64) -> bool {
    let w = words.as_slice();
    (len..w.len() as u64 * 8).all(|j| byte(w, j) == 0)
}

/// Byte `j` of little-endian words.
#[inline(always)]
pub(crate) fn byte(w: &[u64], j: u64) -> u8 {
    (w[(j >> 3) as usize] >> ((j & 7) * 8)) as u8
}

/// Set byte `j` of little-endian words.
#[inline(always)]
pub(crate) fn set_byte(w: &mut [u64], j: u64, v: u8) {
    let shift = (j & 7) * 8;
    let word = &mut w[(j >> 3) as usize];
    *word = (*word & !(0xff << shift)) | (u64::from(v) << shift);
}
