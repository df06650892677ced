//! Values moved from RedisBloom by SCANDUMP / LOADCHUNK: their two Redis types.
//!
//! RedisBloom's RDB types (`MBbloom--`, `MBbloomCF`) do not load into this module: Redis
//! finds no module type of those names and refuses the RDB (or the RESTORE payload) with an
//! error, without calling any of our code. Values move instead through RedisBloom's own dump
//! commands (`scripts/migrate-redisbloom.py`, see the README): `BF.SCANDUMP`/`CF.SCANDUMP` on
//! the old server give a header chunk (iterator 1) and data chunks, and `BF.LOADCHUNK`/
//! `CF.LOADCHUNK` here rebuild the value ([`crate::rbbf`], [`crate::rbcf`]).
//!
//! Such a value keeps RedisBloom's hashing and layout ([`bloomery::redisbloom::RedisBloomFilter`],
//! [`bloomery::redisbloom::RedisBloomCuckooFilter`]) in its own Redis type, `BLMRY-RBB` or `BLMRY-RBC`,
//! and every `BF.*` / `CF.*` command on it answers as RedisBloom 2.6 does. Only the size limit
//! is ours: a header announcing more than `MAX-BYTES` is refused, and a value cannot grow past
//! it, whatever its bytes say.
//!
//! ## RDB encoding
//! The library's file format (kinds 22 and 23), fully validated on load ([`decode`]:
//! checksum, lengths, shape, the limits of [`crate::limits`]). A malformed payload makes
//! `rdb_load` return NULL; it never panics. The AOF rewrite emits RedisBloom's LOADCHUNK
//! sequence.
//! - Version 2 (saved): the length, then the bytes in pieces (the header, then at most 4 MiB
//!   each, as the module's own types save them), so a save or a digest holds one piece at a
//!   time, not a second copy of the value, and a load reads the pieces straight into the
//!   value's arrays ([`bloomery::Persist::read_from`]).
//! - Version 1 (loaded): one string.

use std::ffi::CStr;
use std::os::raw::c_int;

use bloomery::redisbloom::{RedisBloomChunkError, RedisBloomCuckooFilter, RedisBloomFilter};
use bloomery::Persist;
use redis_module::native_types::RedisType;
use redis_module::{raw, RedisError, RedisResult, RedisValue};

use crate::chunk;
use crate::memory::charged;
use crate::stats::Family;
use crate::types::read_in_pieces;
use crate::value::{family, methods, Mover, Value};
use crate::{errors, limits};

/// Encoding version of the two types' RDB layout (see the module docs).
const ENCODING_VERSION: i32 = 2;

/// A value moved from RedisBloom: one of the library's two RedisBloom kinds.
pub trait Moved: Persist + Clone + 'static {
    /// Name in log messages.
    const NAME: &'static str;
    /// Its name in the module's `INFO` section.
    const INFO: &'static str;
    /// The command the AOF rewrite emits.
    const LOADCHUNK: &'static CStr;
    /// The value as RedisBloom's LOADCHUNK sequence.
    fn load_sequence(&self, emit: &mut dyn FnMut(i64, &[u8]));
    /// Bytes held on Redis's heap beyond the value's own struct, as Redis's allocator counts
    /// them (for `MEMORY USAGE`).
    fn held(&self) -> u64;
    /// Checks beyond the library's decoding, applied on every load path (RDB, `RESTORE`,
    /// `LOADCHUNK`'s header): every parameter within the limits of the module's create
    /// command of the same family ([`crate::limits`]), and counts a RESP integer carries.
    fn validate(&self) -> Result<(), String>;
}

fn sequence(
    header: Vec<u8>,
    chunk: impl Fn(i64) -> Option<(i64, Vec<u8>)>,
    emit: &mut dyn FnMut(i64, &[u8]),
) {
    emit(1, &header);
    let mut it = 1;
    while let Some((next, data)) = chunk(it) {
        emit(next, &data);
        it = next;
    }
}

/// `Err(what)` unless `ok`.
fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

fn check_count(what: &str, v: u64) -> Result<(), String> {
    check(v <= i64::MAX as u64, || {
        format!("{what} {v} exceeds i64::MAX")
    })
}

/// Bytes Redis counts for an array of `bytes` kept in whole 64-byte lines.
fn lines(bytes: u64) -> u64 {
    charged(bytes.div_ceil(64).saturating_mul(64))
}

impl Moved for RedisBloomFilter {
    const NAME: &'static str = "RedisBloom bloom filter";
    const INFO: &'static str = "redisbloom_bf";
    const LOADCHUNK: &'static CStr = c"BF.LOADCHUNK";
    fn load_sequence(&self, emit: &mut dyn FnMut(i64, &[u8])) {
        sequence(self.header_chunk(), |it| self.chunk(it), emit)
    }
    /// Each link's bit array, and the list of links.
    fn held(&self) -> u64 {
        let link = std::mem::size_of::<bloomery::redisbloom::RedisBloomLink>() as u64;
        let arrays: u64 = self.links().iter().map(|l| lines(l.bytes())).sum();
        arrays + charged(link * self.links().len() as u64)
    }
    /// `EXPANSION` as `BF.RESERVE` accepts it (RedisBloom 2.6 has no limit; later versions
    /// have this one); the item counts.
    fn validate(&self) -> Result<(), String> {
        check_count("items", self.len())?;
        for l in self.links() {
            check_count("link items", l.len())?;
        }
        let g = self.growth();
        check(g <= limits::BF_MAX_EXPANSION, || {
            format!("expansion {g} outside 1..={}", limits::BF_MAX_EXPANSION)
        })
    }
}

impl Moved for RedisBloomCuckooFilter {
    const NAME: &'static str = "RedisBloom cuckoo filter";
    const INFO: &'static str = "redisbloom_cf";
    const LOADCHUNK: &'static CStr = c"CF.LOADCHUNK";
    fn load_sequence(&self, emit: &mut dyn FnMut(i64, &[u8])) {
        if self.is_empty() {
            // every slot is empty: the header rebuilds it all
            return emit(1, &self.header_chunk());
        }
        sequence(self.header_chunk(), |it| self.chunk(it), emit)
    }
    /// Each sub-filter's slots, and its entry in the list (words handle and count).
    fn held(&self) -> u64 {
        let b = u64::from(self.bucket_size());
        let arrays: u64 = self.sub_buckets().map(|n| lines(n * b)).sum();
        arrays + charged(48 * self.filters() as u64)
    }
    /// `BUCKETSIZE`, `MAXITERATIONS` and `EXPANSION` as `CF.RESERVE` accepts them (the
    /// library's decoding already holds the first two to RedisBloom's header fields); counts.
    fn validate(&self) -> Result<(), String> {
        check_count("items", self.len())?;
        check_count("deletes", self.deletes())?;
        let (b, m, e) = (
            u32::from(self.bucket_size()),
            u32::from(self.max_iterations()),
            u32::from(self.expansion()),
        );
        check((1..=limits::CF_MAX_BUCKET_SIZE).contains(&b), || {
            format!("bucket size {b} outside 1..={}", limits::CF_MAX_BUCKET_SIZE)
        })?;
        check((1..=limits::CF_MAX_ITERATIONS).contains(&m), || {
            format!(
                "max iterations {m} outside 1..={}",
                limits::CF_MAX_ITERATIONS
            )
        })?;
        check(e <= limits::CF_MAX_EXPANSION, || {
            format!("expansion {e} outside 0..={}", limits::CF_MAX_EXPANSION)
        })
    }
}

/// Decode a value's file-format bytes (RDB, `RESTORE`), then [`Moved::validate`].
pub fn decode<T: Moved>(bytes: &[u8]) -> Result<T, String> {
    let v = T::from_bytes(bytes).map_err(|e| e.to_string())?;
    v.validate()?;
    Ok(v)
}

/// A value saved in pieces (version 2): its length, then the pieces, the first a header of
/// `T`'s kind announcing that length, read front to back into the structure
/// ([`Persist::read_from`]): loading it holds one piece beside the value, not a second copy.
fn load_pieces<T: Moved>(rdb: *mut raw::RedisModuleIO) -> Result<T, String> {
    let total = raw::load_unsigned(rdb).map_err(|e| e.to_string())?;
    read_pieces(total, || {
        raw::load_string_buffer(rdb).map_err(|e| e.to_string())
    })
}

/// The value of `total` bytes in the pieces `next` gives, then [`Moved::validate`].
pub(crate) fn read_pieces<T: Moved, P: AsRef<[u8]>>(
    total: u64,
    mut next: impl FnMut() -> Result<P, String>,
) -> Result<T, String> {
    let first = next()?;
    let head = first.as_ref();
    let v: T = read_in_pieces(chunk::read_header(head, T::KIND)?, head, total, next)?;
    v.validate()?;
    Ok(v)
}

/// The reply to a chunk refused for its size: the bytes it needs and the `MAX-BYTES` limit.
pub fn too_large(e: &RedisBloomChunkError) -> Option<RedisError> {
    match e {
        RedisBloomChunkError::TooLarge { requested, limit } => {
            Some(RedisError::String(errors::too_large(*requested, *limit)))
        }
        _ => None,
    }
}

/// Both types are values of the module's one type framework ([`crate::value`]).
macro_rules! moved_value {
    ($t:ty) => {
        impl Value for $t {
            fn name() -> &'static str {
                <$t as Moved>::NAME
            }
            const INFO: &'static str = <$t as Moved>::INFO;
            const LOADCHUNK: &'static CStr = <$t as Moved>::LOADCHUNK;
            fn rdb_load(rdb: *mut raw::RedisModuleIO, encver: c_int) -> Result<Self, String> {
                match encver {
                    1 => raw::load_string_buffer(rdb)
                        .map_err(|e| e.to_string())
                        .and_then(|b| decode::<$t>(b.as_ref())),
                    2 => load_pieces::<$t>(rdb),
                    v => Err(format!("unknown encoding version {v}")),
                }
            }
            fn rdb_save(&self, rdb: *mut raw::RedisModuleIO) {
                raw::save_unsigned(rdb, self.encoded_len());
                chunk::each_chunk_of(self, |_, piece| raw::save_slice(rdb, piece));
            }
            fn load_sequence(&self, emit: &mut dyn FnMut(i64, &[u8])) {
                Moved::load_sequence(self, emit)
            }
            fn digest_pieces(&self, add: &mut dyn FnMut(&[u8])) {
                chunk::each_chunk_of(self, |_, piece| add(piece))
            }
            fn mem_usage(&self) -> usize {
                let total =
                    charged(std::mem::size_of::<$t>() as u64).saturating_add(Moved::held(self));
                usize::try_from(total).unwrap_or(usize::MAX)
            }
            /// The list of links or sub-filters, then each one's array.
            unsafe fn defrag(&mut self, mv: &mut Mover<'_>) {
                // SAFETY: the caller's contract is the library's (memory of the global
                // allocator, of the allocation's size and alignment, the old one freed).
                unsafe { self.relocate_arrays(mv) }
            }
        }
    };
}
moved_value!(RedisBloomFilter);
moved_value!(RedisBloomCuckooFilter);

/// RedisBloom Bloom chains moved in by `BF.LOADCHUNK`.
pub static RB_BF_TYPE: RedisType =
    RedisType::new("BLMRY-RBB", ENCODING_VERSION, methods::<RedisBloomFilter>());

/// RedisBloom cuckoo filters moved in by `CF.LOADCHUNK`.
pub static RB_CF_TYPE: RedisType = RedisType::new(
    "BLMRY-RBC",
    ENCODING_VERSION,
    methods::<RedisBloomCuckooFilter>(),
);

/// The two types, for the module's `INFO` section.
pub fn families() -> Vec<Family> {
    vec![
        family::<RedisBloomFilter>(&RB_BF_TYPE),
        family::<RedisBloomCuckooFilter>(&RB_CF_TYPE),
    ]
}

/// `BLOOMERY.DUMP` of a moved value: its file-format bytes.
pub fn bloomery_dump(key: &redis_module::key::RedisKey) -> Option<RedisResult> {
    if let Ok(Some(v)) = key.get_value::<RedisBloomFilter>(&RB_BF_TYPE) {
        return Some(Ok(RedisValue::StringBuffer(v.to_bytes())));
    }
    if let Ok(Some(v)) = key.get_value::<RedisBloomCuckooFilter>(&RB_CF_TYPE) {
        return Some(Ok(RedisValue::StringBuffer(v.to_bytes())));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::pieces_tests::pieces_of;
    use bloomery::Filter;

    fn read<T: Moved>(total: u64, pieces: &[Vec<u8>]) -> Result<T, String> {
        let mut each = pieces.iter();
        read_pieces(total, || each.next().ok_or("no more pieces".to_string()))
    }

    #[test]
    fn a_moved_value_of_several_pieces_loads_as_saved() {
        let _limit = crate::config::default_limit_for_test();
        // about 9 MB of bits: the header, 4 MiB pieces and the rest
        let max = 1 << 30;
        let mut f = RedisBloomFilter::with_options(5_000_000, 0.001, 0, 2, max).unwrap();
        for i in 0..1000u32 {
            f.insert(&i.to_le_bytes());
        }
        let (total, pieces) = (f.encoded_len(), pieces_of(&f));
        assert!(pieces.len() >= 4, "{}", pieces.len());
        let back: RedisBloomFilter = read(total, &pieces).unwrap();
        assert_eq!(back.to_bytes(), f.to_bytes());
        assert!((0..1000u32).all(|i| back.contains(&i.to_le_bytes())));
        // under the other type, the first piece is refused
        let e = read::<RedisBloomCuckooFilter>(total, &pieces).unwrap_err();
        assert!(e.contains("not a"), "{e}");
        // another length than the header's, a piece missing, empty or too long
        let e = read::<RedisBloomFilter>(total + 1, &pieces).unwrap_err();
        assert!(e.contains("lengths"), "{e}");
        let last = pieces.len() - 1;
        let e = read::<RedisBloomFilter>(total, &pieces[..last]).unwrap_err();
        assert!(e.contains("no more pieces"), "{e}");
        let mut bad = pieces.clone();
        bad.insert(1, Vec::new());
        let e = read::<RedisBloomFilter>(total, &bad).unwrap_err();
        assert!(e.contains("empty"), "{e}");
        let mut bad = pieces.clone();
        bad[last].push(0);
        let e = read::<RedisBloomFilter>(total, &bad).unwrap_err();
        assert!(e.contains("longer"), "{e}");
        // a flipped bit in a piece fails the file's checksum
        let mut bad = pieces.clone();
        bad[2][100] ^= 1;
        let e = read::<RedisBloomFilter>(total, &bad).unwrap_err();
        assert!(e.contains("checksum"), "{e}");
    }
}
