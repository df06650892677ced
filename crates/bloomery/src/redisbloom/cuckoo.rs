//! [`RedisBloomCuckooFilter`]: RedisBloom's cuckoo filter (`MBbloomCF`), slot for slot.

use crate::dispatch::{hashed_set_kind, SetKind, SetStats};
use crate::error::{inconsistent, invalid, Error, Result};
use crate::filter::{Filter, Merge, RemoveError};
use crate::hash::{Hashed, KeyHasher};
use crate::io::format::{
    self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::store::{self, Words};

use super::{byte, bytes_of, check_tail, copy_into, set_byte, RedisBloomChunkError, MAX_CHUNK};

/// Largest bucket size (RedisBloom's).
pub(crate) const MAX_BUCKET_SIZE: u16 = 255;
/// Largest expansion `CF.RESERVE` accepts (RedisBloom's).
pub(crate) const MAX_EXPANSION: u16 = 32768;
/// Most buckets in a sub-filter (RedisBloom stores the count in 56 bits).
pub(crate) const MAX_NUM_BUCKETS: u64 = (1 << 56) - 1;
/// Most sub-filters (RedisBloom stores the count in 16 bits).
pub(crate) const MAX_FILTERS: usize = u16::MAX as usize;
/// Bytes of the SCANDUMP header chunk.
pub(crate) const CF_HEADER_LEN: usize = 38;

/// The multiplier of RedisBloom's alternate-bucket hash.
const ALT: u64 = 0x5bd1_e995;

/// Outcome of an insert, as RedisBloom reports it.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::redisbloom::{RedisBloomCuckooFilter, RedisBloomCuckooInsert};
///
/// // EXPANSION 0: a full filter does not grow
/// let mut cf = RedisBloomCuckooFilter::reserve(4, 2, 1, 0, 1 << 20)?;
/// let answers: Vec<RedisBloomCuckooInsert> = (0..64u32).map(|i| cf.add(&i.to_le_bytes())).collect();
/// assert_eq!(answers[0], RedisBloomCuckooInsert::Inserted);
/// assert!(answers.contains(&RedisBloomCuckooInsert::NoSpace));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisBloomCuckooInsert {
    /// Stored.
    Inserted,
    /// Already present (the unique insert only): nothing stored.
    Exists,
    /// No room and growth disabled.
    NoSpace,
    /// No room and the new sub-filter could not be made (memory limit).
    NoMemory,
}

/// One sub-filter: `buckets × bucket_size` one-byte slots (byte `j` of the little-endian
/// words is slot `j`, RedisBloom's byte `j`).
#[derive(Debug, Clone, PartialEq)]
struct Sub {
    slots: Words,
    buckets: u64,
}

/// Bytes a sub-filter of `bytes` slots holds in memory: whole 64-byte lines.
fn held(bytes: u64) -> u64 {
    bytes.div_ceil(64).saturating_mul(64)
}

/// A key's lookup values.
#[derive(Debug, Clone, Copy)]
struct Lookup {
    h1: u64,
    h2: u64,
    fp: u8,
}

impl Lookup {
    #[inline]
    fn new(h: u64) -> Self {
        let fp = (h % 255 + 1) as u8;
        Self {
            h1: h,
            h2: alt(fp, h),
            fp,
        }
    }
}

#[inline]
fn alt(fp: u8, index: u64) -> u64 {
    index ^ u64::from(fp).wrapping_mul(ALT)
}

/// RedisBloom's `SubCF_GetIndex`: the first slot of `hash`'s bucket in `s` (buckets of `b`
/// slots), as the 32-bit offset RedisBloom computes (it wraps for sub-filters past 4 GiB, as
/// RedisBloom's does).
#[inline]
fn bucket_start(s: &Sub, b: u64, hash: u64) -> u64 {
    u64::from(((hash % s.buckets) * b) as u32)
}

/// A free slot of `l`'s buckets in `s` (first bucket first).
fn free_slot_in(s: &Sub, b: u64, l: &Lookup) -> Option<u64> {
    let w = s.slots.as_slice();
    [l.h1, l.h2].into_iter().find_map(|h| {
        let start = bucket_start(s, b, h);
        (start..start + b).find(|&j| byte(w, j) == 0)
    })
}

/// RedisBloom's `getNextN2`: the next power of two (0 stays 0, wrapping like the C code).
fn next_pow2(n: u64) -> u64 {
    let mut n = n.wrapping_sub(1);
    n |= n >> 1;
    n |= n >> 2;
    n |= n >> 4;
    n |= n >> 8;
    n |= n >> 16;
    n |= n >> 32;
    n.wrapping_add(1)
}

/// RedisBloom's cuckoo filter, with its hash, buckets, eviction and growth. Made by importing
/// SCANDUMP chunks
/// ([`RedisBloomCuckooFilter::from_header_chunk`], [`crate::redisbloom::RedisBloomValue::from_chunks`]) or,
/// for tests, [`RedisBloomCuckooFilter::reserve`] (what `CF.RESERVE` makes). Equality compares
/// the contents, not the memory limit the filter was made or loaded under.
///
/// ## The mapping kept
/// One or more sub-filters of `buckets × bucket_size` one-byte slots (0 = empty). Sub-filter
/// `i` has `buckets₀ · expansionⁱ` buckets (`buckets₀` and `expansion` are powers of two, or
/// expansion 0: no growth). A key's hash is `h = MurmurHash64A(key, 0)`; its fingerprint
/// `fp = h mod 255 + 1`; its buckets in a sub-filter of `n` buckets are `h mod n` and
/// `(h ⊕ fp·0x5bd1e995) mod n`. A query looks for `fp` in both buckets of every sub-filter.
///
/// An insert puts `fp` in the first free slot of the first bucket, else of the second, trying
/// the newest sub-filter first and then older ones; if all are full it runs RedisBloom's
/// eviction walk in the newest sub-filter (swap with slot `v` of the current bucket, move to
/// the evictee's other bucket, `v ← v + 1 mod bucket_size`, at most `max_iterations` times),
/// undoes the walk when it fails, and then adds a sub-filter (or fails, with expansion 0). A
/// delete clears the first matching slot, newest sub-filter first, and — like RedisBloom —
/// compacts (moves fingerprints of newer sub-filters into free slots of older ones, freeing
/// emptied newest sub-filters) once deletes exceed a tenth of the items. Every quirk of
/// RedisBloom 2.6's arithmetic is kept, including its 32-bit slot offsets in lookups.
///
/// ## The SCANDUMP layout
/// The header chunk (iterator 1) is 38 bytes, packed little-endian: items, buckets of the
/// first sub-filter, deletes and sub-filters (`u64` each), then bucket size, max iterations
/// and expansion (`u16` each). Data chunk `(it, data)` holds slots at offset
/// `it − len(data) − 1` of the sub-filters' slot arrays laid end to end; SCANDUMP cuts them at
/// sub-filter ends and every 16 MiB.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::redisbloom::{RedisBloomCuckooFilter, RedisBloomCuckooInsert};
///
/// // CF.RESERVE k 1000 BUCKETSIZE 2 MAXITERATIONS 20 EXPANSION 1
/// let mut cf = RedisBloomCuckooFilter::reserve(1000, 2, 20, 1, 1 << 30)?;
/// assert_eq!(cf.add(b"a"), RedisBloomCuckooInsert::Inserted);
/// assert_eq!(cf.insert_unique(b"a"), RedisBloomCuckooInsert::Exists);
/// assert_eq!(cf.count(b"a"), 1);
/// cf.remove(b"a")?; // CF.DEL: an error (NotPresent) when no fingerprint matches
/// assert!(!cf.contains(b"a"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RedisBloomCuckooFilter {
    subs: Vec<Sub>,
    num_buckets: u64,
    items: u64,
    deletes: u64,
    bucket_size: u16,
    max_iterations: u16,
    expansion: u16,
    hasher: KeyHasher,
    max_bytes: u64,
}

impl PartialEq for RedisBloomCuckooFilter {
    fn eq(&self, o: &Self) -> bool {
        let shape = |f: &Self| {
            (
                f.num_buckets,
                f.items,
                f.deletes,
                f.bucket_size,
                f.max_iterations,
                f.expansion,
                f.hasher,
            )
        };
        shape(self) == shape(o) && self.subs == o.subs
    }
}

impl RedisBloomCuckooFilter {
    /// Move the structure's heap allocations with `mv` (for an allocator that defragments by
    /// moving allocations, as the Redis module's defrag callback does): the list of sub-filters, then each sub-filter's slots. Arrays in a
    /// map (anonymous or a file's) never move (see `Words::relocate`). `mv` gets an
    /// allocation's address and returns where its bytes are now, or `None` to leave it; it is
    /// called for each allocation once, always in the same order.
    ///
    /// # Safety
    /// A returned address must hold a copy of the allocation's bytes in an allocation of the
    /// global allocator of the same size and at least its alignment (64 bytes for the word
    /// arrays), and the old allocation must have been freed; nothing may reference the
    /// structure during the call.
    #[doc(hidden)]
    pub unsafe fn relocate_arrays(
        &mut self,
        mv: &mut dyn FnMut(std::ptr::NonNull<u8>) -> Option<std::ptr::NonNull<u8>>,
    ) {
        // SAFETY: the caller's contract, passed on.
        unsafe { store::relocate_vec(&mut self.subs, mv) };
        for s in &mut self.subs {
            // SAFETY: as above.
            unsafe { s.slots.relocate(mv) };
        }
    }

    /// Bytes of the SCANDUMP header chunk.
    pub const HEADER_LEN: usize = CF_HEADER_LEN;
    /// Largest bucket size (RedisBloom's).
    pub const MAX_BUCKET_SIZE: u16 = MAX_BUCKET_SIZE;
    /// Largest expansion `CF.RESERVE` accepts (RedisBloom's).
    pub const MAX_EXPANSION: u16 = MAX_EXPANSION;
    /// Most sub-filters.
    pub const MAX_FILTERS: usize = MAX_FILTERS;

    /// What `CF.RESERVE key capacity BUCKETSIZE b MAXITERATIONS m EXPANSION e` makes in
    /// RedisBloom 2.x, with its limits (capacity ≥ 2b, b in 1..=255, m ≥ 1, e ≤ 32768; the
    /// expansion is rounded up to a power of two), refused beyond `max_bytes`.
    pub fn reserve(
        capacity: u64,
        bucket_size: u16,
        max_iterations: u16,
        expansion: u16,
        max_bytes: u64,
    ) -> Result<Self> {
        if bucket_size == 0 || bucket_size > MAX_BUCKET_SIZE {
            return Err(invalid("bucket_size", "must be in 1..=255"));
        }
        if max_iterations == 0 {
            return Err(invalid("max_iterations", "must be at least 1"));
        }
        if expansion > MAX_EXPANSION {
            return Err(invalid("expansion", "must be in 0..=32768"));
        }
        if capacity < 2 * u64::from(bucket_size) {
            return Err(invalid(
                "capacity",
                "must be at least twice the bucket size",
            ));
        }
        let mut f = Self {
            subs: Vec::new(),
            num_buckets: next_pow2(capacity / u64::from(bucket_size)).max(1),
            items: 0,
            deletes: 0,
            bucket_size,
            max_iterations,
            expansion: next_pow2(u64::from(expansion)) as u16,
            hasher: KeyHasher::murmur(false, 0),
            max_bytes,
        };
        f.grow()?;
        Ok(f)
    }

    /// Bytes a sub-filter of `buckets` buckets takes.
    fn sub_bytes(&self, buckets: u64) -> u64 {
        buckets * u64::from(self.bucket_size)
    }

    /// Buckets of sub-filter `i`: `buckets₀ · expansionⁱ`, if it fits RedisBloom's 56 bits.
    fn buckets_of(num_buckets: u64, expansion: u16, i: usize) -> Option<u64> {
        let growth = u64::from(expansion).checked_pow(u32::try_from(i).ok()?)?;
        if num_buckets != 0 && growth > MAX_NUM_BUCKETS / num_buckets {
            return None;
        }
        Some(num_buckets * growth)
    }

    /// Add a sub-filter (RedisBloom's `CuckooFilter_Grow`), within the memory limit.
    fn grow(&mut self) -> Result<()> {
        let n = self.subs.len();
        if n >= MAX_FILTERS {
            return Err(invalid("filters", "at most 65535 sub-filters"));
        }
        let too_large = || Error::TooLarge {
            requested: u64::MAX,
            limit: self.max_bytes,
        };
        let buckets =
            Self::buckets_of(self.num_buckets, self.expansion, n).ok_or_else(too_large)?;
        let bytes = buckets
            .checked_mul(u64::from(self.bucket_size))
            .ok_or_else(too_large)?;
        store::check_size(
            self.held_bytes().saturating_add(held(bytes)),
            self.max_bytes,
        )?;
        let slots = Words::zeroed(words_for(bytes)?, self.max_bytes)?;
        self.subs.push(Sub { slots, buckets });
        Ok(())
    }

    #[inline]
    fn bucket_start(&self, s: &Sub, hash: u64) -> u64 {
        bucket_start(s, u64::from(self.bucket_size), hash)
    }

    #[inline]
    fn find_in(&self, s: &Sub, start: u64, fp: u8) -> Option<u64> {
        let w = s.slots.as_slice();
        (start..start + u64::from(self.bucket_size)).find(|&j| byte(w, j) == fp)
    }

    #[inline]
    fn count_in(&self, s: &Sub, start: u64, fp: u8) -> u64 {
        let w = s.slots.as_slice();
        (start..start + u64::from(self.bucket_size))
            .filter(|&j| byte(w, j) == fp)
            .count() as u64
    }

    fn sub_has(&self, s: &Sub, l: &Lookup) -> bool {
        self.find_in(s, self.bucket_start(s, l.h1), l.fp).is_some()
            || self.find_in(s, self.bucket_start(s, l.h2), l.fp).is_some()
    }

    /// A free slot of `l`'s buckets in `s` (first bucket first).
    fn free_slot(&self, s: &Sub, l: &Lookup) -> Option<u64> {
        free_slot_in(s, u64::from(self.bucket_size), l)
    }

    /// RedisBloom's hash of a key: `MurmurHash64A(key, 0)`.
    ///
    /// The `*_hash` methods take this 64-bit value, the one RedisBloom computes and maps to
    /// buckets and fingerprints, so they stay `u64`; the [`Hashed`] forms are [`Filter`]'s
    /// `insert_hashed`/`contains_hashed`, whose hasher's low half is this value.
    #[inline]
    pub fn hash(key: &[u8]) -> u64 {
        crate::murmur::murmur64a(key, 0)
    }

    /// Whether the key may be present (`CF.EXISTS`).
    pub fn contains(&self, key: &[u8]) -> bool {
        self.contains_hash(Self::hash(key))
    }

    /// [`contains`](Self::contains) for a key's [`hash`](Self::hash).
    pub fn contains_hash(&self, h: u64) -> bool {
        let l = Lookup::new(h);
        self.subs.iter().any(|s| self.sub_has(s, &l))
    }

    /// Copies of the key's fingerprint in its buckets (`CF.COUNT`; a bucket that is both of a
    /// key's buckets counts twice, as in RedisBloom).
    pub fn count(&self, key: &[u8]) -> u64 {
        self.count_hash(Self::hash(key))
    }

    /// [`count`](Self::count) for a key's [`hash`](Self::hash).
    pub fn count_hash(&self, h: u64) -> u64 {
        let l = Lookup::new(h);
        self.subs
            .iter()
            .map(|s| {
                self.count_in(s, self.bucket_start(s, l.h1), l.fp)
                    + self.count_in(s, self.bucket_start(s, l.h2), l.fp)
            })
            .sum()
    }

    /// Add a copy of the key (`CF.ADD`: duplicates are kept), growing as RedisBloom does.
    /// [`Filter::insert`] is the unique insert (`CF.ADDNX`).
    pub fn add(&mut self, key: &[u8]) -> RedisBloomCuckooInsert {
        self.insert_hash(Self::hash(key))
    }

    /// Add the key unless it may be present (`CF.ADDNX`).
    pub fn insert_unique(&mut self, key: &[u8]) -> RedisBloomCuckooInsert {
        self.insert_unique_hash(Self::hash(key))
    }

    /// [`insert_unique`](Self::insert_unique) for a key's [`hash`](Self::hash).
    pub fn insert_unique_hash(&mut self, h: u64) -> RedisBloomCuckooInsert {
        if self.contains_hash(h) {
            return RedisBloomCuckooInsert::Exists;
        }
        self.insert_hash(h)
    }

    /// [`insert`](Self::insert) for a key's [`hash`](Self::hash).
    pub fn insert_hash(&mut self, h: u64) -> RedisBloomCuckooInsert {
        let l = Lookup::new(h);
        loop {
            for i in (0..self.subs.len()).rev() {
                if let Some(j) = self.free_slot(&self.subs[i], &l) {
                    set_byte(self.subs[i].slots.as_mut_slice(), j, l.fp);
                    self.items = self.items.saturating_add(1);
                    return RedisBloomCuckooInsert::Inserted;
                }
            }
            if self.kick_out(&l) {
                self.items = self.items.saturating_add(1);
                return RedisBloomCuckooInsert::Inserted;
            }
            if self.expansion == 0 {
                return RedisBloomCuckooInsert::NoSpace;
            }
            if self.grow().is_err() {
                return RedisBloomCuckooInsert::NoMemory;
            }
        }
    }

    /// RedisBloom's eviction walk in the newest sub-filter, undone when it fails.
    fn kick_out(&mut self, l: &Lookup) -> bool {
        let (b, iterations) = (u64::from(self.bucket_size), self.max_iterations);
        let Some(s) = self.subs.last_mut() else {
            return false;
        };
        let n = s.buckets;
        let mut fp = l.fp;
        let mut victim = 0u64;
        let mut i = l.h1 % n;
        let w = s.slots.as_mut_slice();
        for _ in 0..iterations {
            let slot = i * b + victim;
            let evicted = byte(w, slot);
            set_byte(w, slot, fp);
            fp = evicted;
            i = alt(fp, i) % n;
            let base = i * b;
            if let Some(j) = (base..base + b).find(|&j| byte(w, j) == 0) {
                set_byte(w, j, fp);
                return true;
            }
            victim = (victim + 1) % b;
        }
        for _ in 0..iterations {
            victim = (victim + b - 1) % b;
            i = alt(fp, i) % n;
            let slot = i * b + victim;
            let evicted = byte(w, slot);
            set_byte(w, slot, fp);
            fp = evicted;
        }
        false
    }

    /// Remove one copy of the key (`CF.DEL`): [`RemoveError::NotPresent`] (and nothing
    /// changed) when no matching fingerprint is stored.
    pub fn remove(&mut self, key: &[u8]) -> std::result::Result<(), RemoveError> {
        self.remove_hash(Self::hash(key))
    }

    /// [`remove`](Self::remove) for a key's [`hash`](Self::hash).
    pub fn remove_hash(&mut self, h: u64) -> std::result::Result<(), RemoveError> {
        let l = Lookup::new(h);
        for i in (0..self.subs.len()).rev() {
            let s = &self.subs[i];
            let hit = self
                .find_in(s, self.bucket_start(s, l.h1), l.fp)
                .or_else(|| self.find_in(s, self.bucket_start(s, l.h2), l.fp));
            if let Some(j) = hit {
                set_byte(self.subs[i].slots.as_mut_slice(), j, 0);
                // counts saturate (a forged count of 0 or u64::MAX stays one)
                self.items = self.items.saturating_sub(1);
                self.deletes = self.deletes.saturating_add(1);
                if self.subs.len() > 1 && self.deletes as f64 > self.items as f64 * 0.10 {
                    self.compact(false);
                }
                return Ok(());
            }
        }
        Err(RemoveError::NotPresent)
    }

    /// RedisBloom's compaction: move fingerprints of newer sub-filters into free slots of
    /// older ones, newest first, freeing the newest sub-filter whenever it empties; with
    /// `all` false it stops at the first sub-filter that cannot be emptied. Resets the
    /// delete count.
    pub fn compact(&mut self, all: bool) {
        for f in (1..self.subs.len()).rev() {
            if !self.compact_one(f) && !all {
                break;
            }
        }
        self.deletes = 0;
    }

    /// Move what can be moved out of sub-filter `f`; true when everything was moved.
    fn compact_one(&mut self, f: usize) -> bool {
        let b = u64::from(self.bucket_size);
        let mut all_moved = true;
        let (older, rest) = self.subs.split_at_mut(f);
        let s = &mut rest[0];
        for bucket in 0..s.buckets {
            for slot in 0..b {
                let j = bucket * b + slot;
                let fp = byte(s.slots.as_slice(), j);
                if fp == 0 {
                    continue;
                }
                let l = Lookup {
                    h1: bucket,
                    h2: alt(fp, bucket),
                    fp,
                };
                let home = older
                    .iter()
                    .enumerate()
                    .find_map(|(o, older)| free_slot_in(older, b, &l).map(|k| (o, k)));
                match home {
                    Some((o, k)) => {
                        set_byte(older[o].slots.as_mut_slice(), k, fp);
                        set_byte(s.slots.as_mut_slice(), j, 0);
                    }
                    None => all_moved = false,
                }
            }
        }
        if all_moved && f == self.subs.len() - 1 {
            self.subs.pop();
        }
        all_moved
    }

    /// Items stored (inserts minus deletes; `CF.INFO`'s "Number of items inserted").
    pub fn len(&self) -> u64 {
        self.items
    }
    /// True when no item is stored.
    pub fn is_empty(&self) -> bool {
        self.items == 0
    }
    /// Deletes since the last compaction.
    pub fn deletes(&self) -> u64 {
        self.deletes
    }
    /// Buckets of the first sub-filter (`CF.INFO`'s "Number of buckets").
    pub fn first_buckets(&self) -> u64 {
        self.num_buckets
    }
    /// Buckets of each sub-filter, oldest first.
    pub fn sub_buckets(&self) -> impl Iterator<Item = u64> + '_ {
        self.subs.iter().map(|s| s.buckets)
    }
    /// Sub-filters.
    pub fn filters(&self) -> usize {
        self.subs.len()
    }
    /// Slots per bucket.
    pub fn bucket_size(&self) -> u16 {
        self.bucket_size
    }
    /// Eviction steps tried before growing.
    pub fn max_iterations(&self) -> u16 {
        self.max_iterations
    }
    /// Bucket multiplier of each new sub-filter (0: no growth).
    pub fn expansion(&self) -> u16 {
        self.expansion
    }
    /// Bytes of slots (one per fingerprint).
    pub fn allocated_bytes(&self) -> u64 {
        self.subs.iter().map(|s| self.sub_bytes(s.buckets)).sum()
    }
    /// Bytes the slots take in memory (each sub-filter in whole 64-byte lines); what the
    /// memory limit bounds.
    pub fn held_bytes(&self) -> u64 {
        self.subs
            .iter()
            .map(|s| held(self.sub_bytes(s.buckets)))
            .sum()
    }
    /// Occupied slots.
    pub fn occupied(&self) -> u64 {
        self.subs.iter().map(|s| self.used(s)).sum()
    }
    fn used(&self, s: &Sub) -> u64 {
        let w = s.slots.as_slice();
        (0..self.sub_bytes(s.buckets))
            .filter(|&j| byte(w, j) != 0)
            .count() as u64
    }

    /// The false-positive rate implied by the current load: a query compares its fingerprint
    /// with `2b` slots per sub-filter, each (when occupied) matching with probability 1/255.
    pub fn current_fpr(&self) -> f64 {
        let miss: f64 = self
            .subs
            .iter()
            .map(|s| {
                let load = self.used(s) as f64 / self.sub_bytes(s.buckets) as f64;
                (1.0 - load / 255.0).powf(2.0 * f64::from(self.bucket_size))
            })
            .product();
        1.0 - miss
    }

    /// RedisBloom's `CF.INFO SIZE`: the bytes its C structures take (a 40-byte filter, 16
    /// bytes per sub-filter, and the slots).
    pub fn redisbloom_memory(&self) -> u64 {
        40 + 16 * self.subs.len() as u64 + self.allocated_bytes()
    }

    /// The SCANDUMP header chunk (38 bytes; what `CF.SCANDUMP key 0` returns after the
    /// iterator 1).
    pub fn header_chunk(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(CF_HEADER_LEN);
        b.extend_from_slice(&self.items.to_le_bytes());
        b.extend_from_slice(&self.num_buckets.to_le_bytes());
        b.extend_from_slice(&self.deletes.to_le_bytes());
        b.extend_from_slice(&(self.subs.len() as u64).to_le_bytes());
        b.extend_from_slice(&self.bucket_size.to_le_bytes());
        b.extend_from_slice(&self.max_iterations.to_le_bytes());
        b.extend_from_slice(&self.expansion.to_le_bytes());
        b
    }

    /// A filter from a SCANDUMP header chunk, validated as RedisBloom validates it
    /// (`CuckooFilter_ValidateIntegrity`) and against `limit` bytes; the slots are empty until
    /// their data chunks are loaded.
    pub fn from_header_chunk(
        data: &[u8],
        limit: u64,
    ) -> std::result::Result<Self, RedisBloomChunkError> {
        if data.len() != CF_HEADER_LEN {
            return Err(RedisBloomChunkError::HeaderLength(data.len()));
        }
        let u64_at = |at: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&data[at..at + 8]);
            u64::from_le_bytes(a)
        };
        let u16_at = |at: usize| u16::from_le_bytes([data[at], data[at + 1]]);
        let (items, num_buckets, deletes, filters) = (u64_at(0), u64_at(8), u64_at(16), u64_at(24));
        let (bucket_size, max_iterations, expansion) = (u16_at(32), u16_at(34), u16_at(36));
        let f = Self::assemble(
            num_buckets,
            filters,
            bucket_size,
            max_iterations,
            expansion,
            limit,
        )?;
        let mut subs = Vec::with_capacity(f.len());
        for buckets in f {
            let bytes = buckets * u64::from(bucket_size);
            subs.push(Sub {
                slots: Words::zeroed(words_for(bytes)?, limit)?,
                buckets,
            });
        }
        Ok(Self {
            subs,
            num_buckets,
            items,
            deletes,
            bucket_size,
            max_iterations,
            expansion,
            hasher: KeyHasher::murmur(false, 0),
            max_bytes: limit,
        })
    }

    /// Validate the shape and give each sub-filter's buckets, refusing more than `limit` bytes
    /// in memory (whole 64-byte lines per sub-filter).
    fn assemble(
        num_buckets: u64,
        filters: u64,
        bucket_size: u16,
        max_iterations: u16,
        expansion: u16,
        limit: u64,
    ) -> std::result::Result<Vec<u64>, RedisBloomChunkError> {
        let bad = |m: String| Err(RedisBloomChunkError::BadHeader(m));
        if bucket_size == 0 || bucket_size > MAX_BUCKET_SIZE {
            return bad(format!("bucket size {bucket_size} (1..=255)"));
        }
        if num_buckets == 0 || num_buckets > MAX_NUM_BUCKETS || !num_buckets.is_power_of_two() {
            return bad(format!("{num_buckets} buckets (a power of two below 2^56)"));
        }
        if filters == 0 || filters > MAX_FILTERS as u64 {
            return bad(format!("{filters} sub-filters (1..=65535)"));
        }
        if max_iterations == 0 {
            return bad("max iterations 0".into());
        }
        if expansion == 0 && filters > 1 {
            return bad(format!("{filters} sub-filters with expansion 0"));
        }
        let mut subs = Vec::new();
        let mut total = 0u64;
        for i in 0..filters as usize {
            let Some(buckets) = Self::buckets_of(num_buckets, expansion, i) else {
                return bad(format!("sub-filter {i} has more than 2^56 buckets"));
            };
            total = total.saturating_add(held(buckets * u64::from(bucket_size)));
            if total > limit {
                return Err(RedisBloomChunkError::TooLarge {
                    requested: total,
                    limit,
                });
            }
            subs.push(buckets);
        }
        Ok(subs)
    }

    /// The data chunk at iterator `it` ≥ 1, as `CF.SCANDUMP key it` returns it: the next
    /// iterator and a whole sub-filter (or 16 MiB of a larger one); `None` (RedisBloom answers
    /// iterator 0 and nil) past the last slot.
    pub fn chunk(&self, it: i64) -> Option<(i64, Vec<u8>)> {
        if it < 1 {
            return None;
        }
        let mut offset = it as u64 - 1;
        for s in &self.subs {
            let size = self.sub_bytes(s.buckets);
            if offset < size {
                // RedisBloom returns a sub-filter that fits the limit whole, from its start
                let (from, len) = if size <= MAX_CHUNK {
                    (0, size)
                } else {
                    (offset, (size - offset).min(MAX_CHUNK))
                };
                return Some((it + len as i64, bytes_of(&s.slots, from, len as usize)));
            }
            offset -= size;
        }
        None
    }

    /// Load a data chunk `(it, data)` as `CF.LOADCHUNK` does: the slots go to position
    /// `it − len(data)` of the sub-filters laid end to end and must not cross a sub-filter's
    /// end.
    pub fn load_chunk(
        &mut self,
        it: i64,
        data: &[u8],
    ) -> std::result::Result<(), RedisBloomChunkError> {
        let len = data.len() as u64;
        if len == 0 || it <= 0 || ((it - 1) as u64) < len {
            return Err(RedisBloomChunkError::BadIterator { iterator: it, len });
        }
        let mut offset = it as u64 - len - 1;
        let b = u64::from(self.bucket_size);
        for s in &mut self.subs {
            let size = s.buckets * b;
            if offset < size {
                if size - offset < len {
                    return Err(RedisBloomChunkError::CrossesEnd {
                        offset,
                        len,
                        room: size - offset,
                    });
                }
                copy_into(&mut s.slots, offset, data);
                return Ok(());
            }
            offset -= size;
        }
        Err(RedisBloomChunkError::NoSubFilter {
            offset: it as u64 - len - 1,
        })
    }
}

fn words_for(bytes: u64) -> Result<usize> {
    usize::try_from(bytes.div_ceil(8)).map_err(|_| Error::TooLarge {
        requested: bytes,
        limit: store::max_bytes(),
    })
}

impl Filter for RedisBloomCuckooFilter {
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// [`insert_unique_hash`](RedisBloomCuckooFilter::insert_unique_hash) of `h.lo` (the
    /// hasher's low half is RedisBloom's hash): true when stored. A filter that cannot store
    /// the key (expansion 0 and full, or at the memory limit) returns false and does not hold
    /// it; use the inherent methods to see why.
    fn insert_hashed(&mut self, h: Hashed) -> bool {
        self.insert_unique_hash(h.lo) == RedisBloomCuckooInsert::Inserted
    }

    #[inline]
    fn contains_hashed(&self, h: Hashed) -> bool {
        self.contains_hash(h.lo)
    }

    fn len(&self) -> u64 {
        self.items
    }

    /// Stores the key unless it may be present (`CF.ADDNX`); a key that cannot be stored is
    /// [`Error::Full`] (growth off) or [`Error::TooLarge`] (no room for a new sub-filter),
    /// with nothing changed.
    fn try_insert_hashed(&mut self, h: Hashed) -> Result<bool> {
        match self.insert_unique_hash(h.lo) {
            RedisBloomCuckooInsert::Inserted => Ok(true),
            RedisBloomCuckooInsert::Exists => Ok(false),
            RedisBloomCuckooInsert::NoSpace => Err(Error::Full {
                capacity: self.sub_bytes(self.num_buckets),
            }),
            RedisBloomCuckooInsert::NoMemory => Err(Error::TooLarge {
                requested: self.held_bytes().saturating_add(
                    held(self.sub_bytes(self.subs.last().map_or(0, |s| s.buckets)))
                        .saturating_mul(u64::from(self.expansion.max(1))),
                ),
                limit: self.max_bytes,
            }),
        }
    }
}

/// RedisBloom has no union or intersection of cuckoo filters, and neither have its values
/// here.
impl Merge for RedisBloomCuckooFilter {
    fn union_with(&mut self, _other: &Self) -> Result<()> {
        Err(Error::Unsupported(
            "redisbloom-cf filters have no union (RedisBloom has none)".into(),
        ))
    }
    fn intersect_with(&mut self, _other: &Self) -> Result<()> {
        Err(Error::Unsupported(
            "redisbloom-cf filters have no intersection (RedisBloom has none)".into(),
        ))
    }
}

impl SetKind for RedisBloomCuckooFilter {
    const CAPABILITIES: crate::kind::Capabilities = crate::kind::Capabilities {
        insert: true,
        hashed: true,
        ..crate::kind::Capabilities::NONE
    };
    hashed_set_kind!();
    /// One byte per slot: "bits" are the slots' bits, the fill counts occupied slots and the
    /// hashes are a key's two candidate buckets.
    fn stats(&self) -> SetStats {
        let occupied = self.occupied();
        SetStats {
            bits: self.allocated_bytes() * 8,
            hashes: 2,
            ones: occupied * 8,
            current_fpr: self.current_fpr(),
            capacity: self.sub_bytes(self.num_buckets),
            target_fpr: 0.0,
            estimated_items: occupied as f64,
            sub_filters: self.subs.len(),
            layers: 0,
        }
    }
}

impl Persist for RedisBloomCuckooFilter {
    const KIND: Kind = Kind::RedisBloomCuckoo;

    /// Parameters: buckets of the first sub-filter and deletes (`u64`), then sub-filters,
    /// bucket size, max iterations and expansion (`u32` each). The payload is the slots of
    /// each sub-filter in turn (byte `j` is byte `j % 8` of little-endian word `j / 8`,
    /// RedisBloom's byte `j`), each padded to 64 bytes. The header's hash is MurmurHash64A with
    /// seed 0, its item count the items, its capacity the slots of the first sub-filter.
    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let w = ParamWriter::new()
            .u64(self.num_buckets)
            .u64(self.deletes)
            .u32(self.subs.len() as u32)
            .u32(u32::from(self.bucket_size))
            .u32(u32::from(self.max_iterations))
            .u32(u32::from(self.expansion));
        let mut h = Header::new(Kind::RedisBloomCuckoo, self.hasher);
        h.items = self.items;
        h.capacity = self.sub_bytes(self.num_buckets);
        h.params = w.finish();
        (
            h,
            Payload::new(self.subs.iter().map(|s| &s.slots).collect()),
        )
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let num_buckets = r.u64()?;
        let deletes = r.u64()?;
        let filters = r.u32()?;
        let small = |v: u32, what: &str| {
            u16::try_from(v).map_err(|_| inconsistent(format!("redisbloom cuckoo: {what} {v}")))
        };
        let bucket_size = small(r.u32()?, "bucket size")?;
        let max_iterations = small(r.u32()?, "max iterations")?;
        let expansion = small(r.u32()?, "expansion")?;
        r.finish()?;
        if d.header.hasher != KeyHasher::murmur(false, 0) || d.header.target_fpr != 0.0 {
            return Err(inconsistent("redisbloom cuckoo: hash or rate"));
        }
        let buckets = Self::assemble(
            num_buckets,
            u64::from(filters),
            bucket_size,
            max_iterations,
            expansion,
            limit,
        )
        .map_err(|e| match e {
            RedisBloomChunkError::TooLarge { requested, limit } => {
                Error::TooLarge { requested, limit }
            }
            e => inconsistent(format!("redisbloom cuckoo: {e}")),
        })?;
        if d.header.capacity != num_buckets * u64::from(bucket_size) {
            return Err(inconsistent("redisbloom cuckoo: capacity"));
        }
        let words: Vec<usize> = buckets
            .iter()
            .map(|&n| words_for(n * u64::from(bucket_size)))
            .collect::<Result<_>>()?;
        let total: u64 = words.iter().map(|&w| format::padded_len(w)).sum();
        if total != d.payload_len as u64 {
            return Err(inconsistent(format!(
                "redisbloom cuckoo: payload is {} bytes, sub-filters need {total}",
                d.payload_len
            )));
        }
        let mut subs = Vec::with_capacity(buckets.len());
        let mut offset = d.payload_offset;
        for (n, w) in buckets.into_iter().zip(words) {
            let slots = src.words(offset, w, limit)?;
            offset += format::padded_len(w) as usize;
            if !check_tail(&slots, n * u64::from(bucket_size)) {
                return Err(inconsistent(
                    "redisbloom cuckoo: slots set past a sub-filter's end",
                ));
            }
            subs.push(Sub { slots, buckets: n });
        }
        Ok(Self {
            subs,
            num_buckets,
            items: d.header.items,
            deletes,
            bucket_size,
            max_iterations,
            expansion,
            hasher: d.header.hasher,
            max_bytes: limit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_sizes_like_redisbloom() {
        // CF.RESERVE k 1000 → 512 buckets of 2 (CF.INFO: Size 1080, Number of buckets 512)
        let f = RedisBloomCuckooFilter::reserve(1000, 2, 20, 1, 1 << 20).unwrap();
        assert_eq!((f.first_buckets(), f.filters()), (512, 1));
        assert_eq!(f.redisbloom_memory(), 1080);
        let g = RedisBloomCuckooFilter::reserve(1000, 4, 20, 3, 1 << 20).unwrap();
        assert_eq!((g.first_buckets(), g.expansion()), (256, 4));
        assert!(RedisBloomCuckooFilter::reserve(3, 2, 20, 1, 1 << 20).is_err());
    }

    #[test]
    fn insert_grow_delete_compact() {
        let mut f = RedisBloomCuckooFilter::reserve(64, 2, 20, 2, 1 << 20).unwrap();
        for i in 0..500u32 {
            assert_eq!(f.add(&i.to_le_bytes()), RedisBloomCuckooInsert::Inserted);
        }
        assert!(f.filters() > 1);
        assert!((0..500u32).all(|i| f.contains(&i.to_le_bytes())));
        assert_eq!(f.occupied(), 500);
        for i in 0..450u32 {
            assert_eq!(f.remove(&i.to_le_bytes()), Ok(()));
        }
        assert_eq!(f.len(), 50);
        assert!((450..500u32).all(|i| f.contains(&i.to_le_bytes())));
        assert!(f.filters() < 4, "compaction freed sub-filters");
    }

    /// `add` keeps duplicates (`CF.ADD`); `Filter::insert`, through the prelude, is the
    /// unique insert (`CF.ADDNX`) as on every other set.
    #[test]
    fn add_keeps_duplicates_and_filter_insert_is_unique() {
        use crate::prelude::*;
        let mut f = RedisBloomCuckooFilter::reserve(64, 2, 20, 2, 1 << 20).unwrap();
        assert!(f.insert("k"));
        assert!(!f.insert("k"), "already there");
        assert_eq!(f.count(b"k"), 1);
        assert_eq!(f.add(b"k"), RedisBloomCuckooInsert::Inserted);
        assert_eq!(f.count(b"k"), 2);
    }

    #[test]
    fn chunks_round_trip() {
        let mut f = RedisBloomCuckooFilter::reserve(100, 4, 20, 1, 1 << 20).unwrap();
        for i in 0..400u32 {
            f.add(&i.to_le_bytes());
        }
        let mut g = RedisBloomCuckooFilter::from_header_chunk(&f.header_chunk(), 1 << 20).unwrap();
        let mut it = 1;
        while let Some((next, data)) = f.chunk(it) {
            g.load_chunk(next, &data).unwrap();
            it = next;
        }
        assert_eq!(g, f);
    }
}
