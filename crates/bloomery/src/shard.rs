//! One blocked Bloom filter sharded over the nodes of a Redis/Valkey Cluster: the layout
//! ([`Layout`], the descriptor every client reads), the routing of a key to its shard, the
//! shards' key names and hash tags, and the shard values (what the Redis module's `BF.*`
//! commands hold) split from a blocked filter or built from keys.
//!
//! **Routing.** A logical filter of `S` shards of `b` blocks each is the blocked filter of
//! `B = S·b` blocks (either block layout) cut by stride: shard `s` holds blocks `s, S + s,
//! 2S + s, …`. The blocked filter picks block `⌊lo·B / 2⁶⁴⌋` from the low half of the key's
//! [`Hashed`] value; the shard is that block modulo `S`, and inside the shard the key lands in
//! block `⌊lo·b / 2⁶⁴⌋` (the same block divided by `S`, since `⌊⌊x·S⌋ / S⌋ = ⌊x⌋`), where an
//! ordinary blocked filter of `b` blocks with the same hasher and `k` looks for it. So a
//! shard is an ordinary filter that answers for its keys exactly as the whole filter does, the
//! shard is chosen by the low digits of the block number while the block inside the shard
//! comes from its high digits and the bits inside the block from the high half of the hash,
//! and the sharded filter answers every key — false positives included — as the unsplit file
//! does. Its rate is the file's rate (measured in this module's tests).
//!
//! **Key names.** The descriptor lives at the logical name; shard `s` of generation `g` at
//! `{TAG}NAME:gG:sS`, whose hash tag `TAG` (the first `{…}` of the key, per the Redis Cluster
//! specification) puts it on slot `(crc16(NAME) + ⌊s·16384 / S⌋) mod 16384`: `S` shards on
//! distinct slots spread evenly over the 16384, rotated per name so that the first shards of
//! different filters do not all share a node. A load writes the shards of a new generation,
//! then replaces the descriptor (one key, so the switch is atomic), then deletes the old
//! generation's shards.
//!
//! **Descriptor** (format version 1, 77 bytes, little-endian): magic `BLMSHARD`, `u16`
//! version, `u8` block layout (0: positions, 1: sectors, 2: salted), `u8` hash algorithm id, `u8` seed
//! kind, `u128` seed, `u32` shard count, `u64` blocks per shard, `u32` k, `u64` capacity,
//! `f64` target rate, `u64` generation, `u64` xxh3-64 of the preceding bytes.
//! [`Layout::from_bytes`] checks every field.
//!
//! ```
//! # fn main() -> bloomery::Result<()> {
//! use bloomery::shard::Layout;
//! use bloomery::{Filter, KeyHasher};
//!
//! let layout = Layout::for_capacity(10_000, 0.01, 4, KeyHasher::new())?;
//! let keys: Vec<String> = (0..10_000).map(|i| format!("key-{i}")).collect();
//! let shards = layout.build_shards(keys.iter().map(|k| k.as_bytes()))?;
//! // every key is found in the shard it routes to
//! assert!(keys.iter().all(|k| {
//!     shards[layout.shard_of(k.as_bytes()) as usize].contains(&k.as_bytes())
//! }));
//! let back = Layout::from_bytes(&layout.to_bytes())?;
//! assert_eq!(back, layout);
//! # Ok(()) }
//! ```

use std::sync::OnceLock;

use crate::error::{inconsistent, invalid, Error, FormatError, Result};
use crate::filter::{Filter, Stats};
use crate::hash::{reduce, HashAlgorithm, Hashed, KeyHasher, SeedKind};
use crate::io::header::{peek, ParamReader};
use crate::kind::Kind;
use crate::params::{blocked_shape, BLOCKED_MAX_K};
use crate::sets::blocked::{
    check_layout_shape, default_shape, BlockLayout, BlockedBloomFilter, BLOCK_BITS,
    SALTED_MAX_BLOCKS, SECTOR_K,
};
use crate::sets::scalable::{layout_id, ScalableBloomFilter};
use crate::store::{self, Words};

/// The number of hash slots of a Redis Cluster.
pub const SLOTS: u16 = 16384;
/// The descriptor's format version this library writes (and the only one it reads).
pub const DESCRIPTOR_VERSION: u16 = 1;
/// Length of a descriptor in bytes.
pub const DESCRIPTOR_LEN: usize = 77;
/// The most shards a logical filter may have: one per slot.
pub const MAX_SHARDS: u32 = SLOTS as u32;

const MAGIC: &[u8; 8] = b"BLMSHARD";
const WORDS_PER_BLOCK: usize = (BLOCK_BITS / 64) as usize;

/// CRC16 as the Redis Cluster specification defines it for key slots (XMODEM: polynomial
/// 0x1021, initial value 0, no reflection, no final xor); `crc16(b"123456789") = 0x31C3`.
pub fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The cluster slot of a key (Redis Cluster specification): CRC16 mod 16384 of the key, or of
/// its hash tag — the bytes between the first `{` and the first `}` after it, when there are
/// any.
pub fn key_slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&c| c == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        rest.iter()
            .position(|&c| c == b'}')
            .filter(|&close| close > 0)
            .map(|close| &rest[..close])
    });
    crc16(tagged.unwrap_or(key)) % SLOTS
}

/// For each slot, the first string over `0-9a-z` (shortest first, then in digit order) whose
/// slot it is: the hash tags shard keys use.
fn tag_table() -> &'static [Box<[u8]>] {
    static TABLE: OnceLock<Vec<Box<[u8]>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
        let mut table: Vec<Option<Box<[u8]>>> = vec![None; usize::from(SLOTS)];
        let mut missing = usize::from(SLOTS);
        let mut len = 1u32;
        'outer: loop {
            let count = 36u64.pow(len);
            let mut s = vec![0u8; len as usize];
            for mut n in 0..count {
                for c in s.iter_mut().rev() {
                    *c = DIGITS[(n % 36) as usize];
                    n /= 36;
                }
                let slot = usize::from(crc16(&s) % SLOTS);
                if table[slot].is_none() {
                    table[slot] = Some(s.clone().into_boxed_slice());
                    missing -= 1;
                    if missing == 0 {
                        break 'outer;
                    }
                }
            }
            len += 1;
        }
        table.into_iter().flatten().collect()
    })
}

/// The hash tag whose slot is `slot` (mod 16384): the first string over `0-9a-z`, shortest
/// first, whose CRC16 mod 16384 is that slot (at most 4 characters).
pub fn tag_for_slot(slot: u16) -> &'static [u8] {
    &tag_table()[usize::from(slot % SLOTS)]
}

/// A sharded filter's layout: shape, shard count, hash path, creation parameters and
/// generation (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Layout {
    block_layout: BlockLayout,
    shards: u32,
    blocks_per_shard: u64,
    k: u32,
    hasher: KeyHasher,
    capacity: u64,
    target_fpr: f64,
    generation: u64,
}

impl Layout {
    /// A layout of `shards` shards of `blocks_per_shard` blocks with `k` bits per key, for
    /// `capacity` keys at `target_fpr`; generation 0. Every parameter is checked as
    /// [`Layout::from_bytes`] checks it.
    pub fn new(
        shards: u32,
        blocks_per_shard: u64,
        k: u32,
        hasher: KeyHasher,
        capacity: u64,
        target_fpr: f64,
    ) -> Result<Self> {
        let l = Self {
            block_layout: BlockLayout::Positions,
            shards,
            blocks_per_shard,
            k,
            hasher,
            capacity,
            target_fpr,
            generation: 0,
        };
        l.check().map_err(|e| invalid("layout", e))?;
        Ok(l)
    }

    /// The layout for `capacity` keys at total rate `fpr` over `shards` shards: the smallest
    /// blocked shape (positions layout) the model gives for (`capacity`, `fpr`), its block
    /// count rounded up to a multiple of `shards` (each shard holds its `1/S` share of the
    /// keys at the same rate, so the total rate is the target).
    pub fn for_capacity(capacity: u64, fpr: f64, shards: u32, hasher: KeyHasher) -> Result<Self> {
        check_shard_count(shards).map_err(|e| invalid("shards", e))?;
        let shape = blocked_shape(capacity, fpr, BLOCK_BITS)?;
        let per = shape.blocks.div_ceil(u64::from(shards)).max(1);
        Self::new(shards, per, shape.k, hasher, capacity, fpr)
    }

    /// The layout for `capacity` keys at total rate `fpr` over `shards` shards in the shape a
    /// blocked filter sized for (`capacity`, `fpr`) with `hasher` takes by default
    /// (`BlockedBloomFilter::builder().capacity(n).fpr(p).hasher(h)`, what `bloomery create -n
    /// -p` makes: the salted layout, hashed by xxh3-64 of the hasher's seed, at rates where 8
    /// bits per key cost at most 5% more memory than the best k, the positions layout
    /// elsewhere), its block count rounded up to a multiple of `shards` (the sectors layout if
    /// the rounding takes a salted filter past 2^32 blocks). When `shards` divides that filter's
    /// block count (a power of two does, up to its size), the shards built from keys are the
    /// split of that filter built from the same keys.
    pub fn default_for_capacity(
        capacity: u64,
        fpr: f64,
        shards: u32,
        hasher: KeyHasher,
    ) -> Result<Self> {
        check_shard_count(shards).map_err(|e| invalid("shards", e))?;
        let (blocks, k, block_layout, hashed) = default_shape(capacity, fpr, hasher)?;
        let per = blocks.div_ceil(u64::from(shards)).max(1);
        let (block_layout, hashed) = if block_layout == BlockLayout::Salted
            && per.saturating_mul(u64::from(shards)) > SALTED_MAX_BLOCKS
        {
            (BlockLayout::Sectors, hasher)
        } else {
            (block_layout, hashed)
        };
        let l = Self {
            block_layout,
            ..Self::new(shards, per, k, hashed, capacity, fpr)?
        };
        l.check().map_err(|e| invalid("layout", e))?;
        Ok(l)
    }

    /// The layout of `filter` (any block layout) cut into `shards` shards. The filter
    /// needs a block count divisible by `shards` (a filter sized by capacity has a multiple
    /// of a power of two, see [`crate::params::foldable_blocks`]).
    pub fn of_filter(filter: &BlockedBloomFilter, shards: u32) -> Result<Self> {
        check_shard_count(shards).map_err(|e| invalid("shards", e))?;
        if filter.capacity() == 0 || !(filter.target_fpr() > 0.0 && filter.target_fpr() < 1.0) {
            return Err(invalid(
                "filter",
                "a sharded filter needs the capacity and target rate the filter was sized \
                 for; this one was made from an explicit shape (create it with -n and -p)",
            ));
        }
        if filter.layout() == BlockLayout::Salted256 {
            return Err(invalid(
                "filter",
                "the blocked-salted256 layout is not held by the module's BF values: shard a \
                 filter of the salted, sectors or positions layout (created with -n and -p, or \
                 --kind blocked-salted)",
            ));
        }
        let blocks = filter.blocks();
        if !blocks.is_multiple_of(u64::from(shards)) {
            let divisors: Vec<String> = (2..=64u64)
                .filter(|d| blocks.is_multiple_of(*d))
                .map(|d| d.to_string())
                .collect();
            return Err(invalid(
                "shards",
                format!(
                    "the filter's {blocks} blocks do not divide into {shards} shards \
                     (shard counts up to 64 that do: {})",
                    if divisors.is_empty() {
                        "none".to_string()
                    } else {
                        divisors.join(", ")
                    }
                ),
            ));
        }
        let l = Self::new(
            shards,
            blocks / u64::from(shards),
            filter.hashes(),
            *filter.hasher(),
            filter.capacity(),
            filter.target_fpr(),
        )?;
        let l = Self {
            block_layout: filter.layout(),
            ..l
        };
        l.check().map_err(|e| invalid("filter", e))?;
        Ok(l)
    }

    /// The same layout with another generation (the number in its shards' key names).
    pub fn with_generation(mut self, generation: u64) -> Self {
        self.generation = generation;
        self
    }

    /// How each block holds a key's bits: the layout of the filter the shards were cut
    /// from (every shard has it).
    pub fn block_layout(&self) -> BlockLayout {
        self.block_layout
    }
    /// Shard count `S`.
    pub fn shards(&self) -> u32 {
        self.shards
    }
    /// Blocks in each shard.
    pub fn blocks_per_shard(&self) -> u64 {
        self.blocks_per_shard
    }
    /// Blocks of the whole filter (`S · blocks_per_shard`).
    pub fn total_blocks(&self) -> u64 {
        self.blocks_per_shard * u64::from(self.shards)
    }
    /// Bits set per key.
    pub fn hashes(&self) -> u32 {
        self.k
    }
    /// The hash path (algorithm and seed) every shard uses.
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }
    /// Keys the whole filter was sized for.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    /// The whole filter's target false-positive rate at capacity.
    pub fn target_fpr(&self) -> f64 {
        self.target_fpr
    }
    /// The generation: which set of shard keys the descriptor points at.
    pub fn generation(&self) -> u64 {
        self.generation
    }
    /// Bytes of one shard's bits.
    pub fn shard_bytes(&self) -> u64 {
        self.blocks_per_shard * BLOCK_BITS / 8
    }
    /// The capacity each shard is sized for (its share of the keys, rounded up).
    pub fn shard_capacity(&self) -> u64 {
        self.capacity.div_ceil(u64::from(self.shards)).max(1)
    }

    /// The shard of a key hashed by [`Layout::hasher`].
    #[inline]
    pub fn shard_of_hash(&self, h: Hashed) -> u32 {
        (reduce(h.lo, self.total_blocks()) % u64::from(self.shards)) as u32
    }

    /// The shard of a key's bytes (what a Redis client sends as the item).
    #[inline]
    pub fn shard_of(&self, key: &[u8]) -> u32 {
        self.shard_of_hash(self.hasher.hash_bytes(key))
    }

    /// The slot shard `s` of the filter named `name` lives on.
    pub fn shard_slot(&self, name: &[u8], s: u32) -> u16 {
        let base = u64::from(crc16(name) % SLOTS);
        let step = u64::from(s) * u64::from(SLOTS) / u64::from(self.shards);
        ((base + step) % u64::from(SLOTS)) as u16
    }

    /// The key name of shard `s` of this generation: `{TAG}NAME:gG:sS`.
    pub fn shard_key(&self, name: &[u8], s: u32) -> Vec<u8> {
        let tag = tag_for_slot(self.shard_slot(name, s));
        let mut k = Vec::with_capacity(name.len() + tag.len() + 32);
        k.push(b'{');
        k.extend_from_slice(tag);
        k.push(b'}');
        k.extend_from_slice(name);
        k.extend_from_slice(format!(":g{}:s{s}", self.generation).as_bytes());
        k
    }

    /// The key names of every shard, in shard order.
    pub fn shard_keys(&self, name: &[u8]) -> Vec<Vec<u8>> {
        (0..self.shards).map(|s| self.shard_key(name, s)).collect()
    }

    /// The descriptor's bytes ([`DESCRIPTOR_LEN`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(DESCRIPTOR_LEN);
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&DESCRIPTOR_VERSION.to_le_bytes());
        b.push(layout_id(self.block_layout));
        b.push(self.hasher.algorithm().id());
        b.push(self.hasher.seed_kind() as u8);
        b.extend_from_slice(&self.hasher.seed().to_le_bytes());
        b.extend_from_slice(&self.shards.to_le_bytes());
        b.extend_from_slice(&self.blocks_per_shard.to_le_bytes());
        b.extend_from_slice(&self.k.to_le_bytes());
        b.extend_from_slice(&self.capacity.to_le_bytes());
        b.extend_from_slice(&self.target_fpr.to_le_bytes());
        b.extend_from_slice(&self.generation.to_le_bytes());
        let sum = xxhash_rust::xxh3::xxh3_64(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        debug_assert_eq!(b.len(), DESCRIPTOR_LEN);
        b
    }

    /// Decode and check a descriptor: exact length, magic, version, checksum, then every
    /// field (layout, hash algorithm and seed kind known, 1 to 16384 shards, at least one
    /// block per shard, a whole filter whose byte size fits in 64 bits, k from 1 to 32, a
    /// capacity of at least 1, a target rate strictly between 0 and 1).
    pub fn from_bytes(b: &[u8]) -> std::result::Result<Self, FormatError> {
        let bad = |what: String| FormatError::Inconsistent(format!("shard descriptor: {what}"));
        if b.len() < MAGIC.len() || &b[..MAGIC.len()] != MAGIC {
            return Err(bad("not a sharded-filter descriptor (bad magic)".into()));
        }
        if b.len() != DESCRIPTOR_LEN {
            return Err(bad(format!("{} bytes, expected {DESCRIPTOR_LEN}", b.len())));
        }
        let version = u16::from_le_bytes([b[8], b[9]]);
        if version != DESCRIPTOR_VERSION {
            return Err(bad(format!(
                "format version {version} (this library reads {DESCRIPTOR_VERSION})"
            )));
        }
        let body = &b[..DESCRIPTOR_LEN - 8];
        let stored = u64::from_le_bytes(b[DESCRIPTOR_LEN - 8..].try_into().expect("8 bytes"));
        if xxhash_rust::xxh3::xxh3_64(body) != stored {
            return Err(bad("checksum mismatch".into()));
        }
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let block_layout = match b[10] {
            0 => BlockLayout::Positions,
            1 => BlockLayout::Sectors,
            2 => BlockLayout::Salted,
            other => return Err(bad(format!("unknown block layout {other}"))),
        };
        let algorithm = HashAlgorithm::from_id(b[11])
            .ok_or_else(|| bad(format!("unknown hash algorithm {}", b[11])))?;
        let seed_kind =
            SeedKind::from_id(b[12]).ok_or_else(|| bad(format!("unknown seed kind {}", b[12])))?;
        let seed = u128::from_le_bytes(b[13..29].try_into().expect("16 bytes"));
        let hasher = KeyHasher::from_parts(algorithm, seed_kind, seed)
            .map_err(|e| bad(format!("hash path: {e}")))?;
        let l = Self {
            block_layout,
            hasher,
            shards: u32_at(29),
            blocks_per_shard: u64_at(33),
            k: u32_at(41),
            capacity: u64_at(45),
            target_fpr: f64::from_bits(u64_at(53)),
            generation: u64_at(61),
        };
        l.check().map_err(bad)?;
        Ok(l)
    }

    fn check(&self) -> std::result::Result<(), String> {
        check_shard_count(self.shards)?;
        if self.blocks_per_shard == 0 {
            return Err("no blocks per shard".into());
        }
        let bytes = self
            .blocks_per_shard
            .checked_mul(u64::from(self.shards))
            .and_then(|b| b.checked_mul(BLOCK_BITS / 8));
        if bytes.is_none() {
            return Err(format!(
                "{} shards of {} blocks overflow",
                self.shards, self.blocks_per_shard
            ));
        }
        if !(1..=BLOCKED_MAX_K).contains(&self.k) {
            return Err(format!("k = {} (1 to {BLOCKED_MAX_K})", self.k));
        }
        if self.block_layout != BlockLayout::Positions && self.k != SECTOR_K {
            return Err(format!(
                "k = {} in the {} layout (which sets {SECTOR_K} bits)",
                self.k,
                self.block_layout.name()
            ));
        }
        // the whole filter's shape: the salted layout's bound is on the block count the key's
        // block is chosen from, and a shard is a salted filter of fewer blocks
        check_layout_shape(self.block_layout, self.total_blocks(), self.k, &self.hasher)
            .map_err(|e| e.to_string())?;
        if self.capacity == 0 {
            return Err("capacity 0".into());
        }
        if !(self.target_fpr > 0.0 && self.target_fpr < 1.0) {
            return Err(format!(
                "target rate {} (strictly between 0 and 1)",
                self.target_fpr
            ));
        }
        Ok(())
    }

    /// An empty blocked filter of one shard's shape.
    fn empty_part(&self) -> Result<BlockedBloomFilter> {
        let words = Words::zeroed(self.shard_words()?, store::max_bytes())?;
        BlockedBloomFilter::from_parts(
            self.blocks_per_shard,
            self.k,
            self.hasher,
            words,
            0,
            self.shard_capacity(),
            self.target_fpr,
        )?
        .in_layout(self.block_layout)
    }

    fn shard_words(&self) -> Result<usize> {
        usize::try_from(self.blocks_per_shard)
            .ok()
            .and_then(|b| b.checked_mul(WORDS_PER_BLOCK))
            .ok_or(Error::TooLarge {
                requested: self.shard_bytes(),
                limit: store::max_bytes(),
            })
    }

    /// Shard `s` of `filter` (which must have this layout's shape and hasher, e.g. the one
    /// [`Layout::of_filter`] was made from) as the value the Redis module's `BF.*` commands
    /// hold: a non-scaling scalable filter whose one sub-filter holds blocks `s, S + s, …` of
    /// `filter`. It answers every key routed to `s` exactly as `filter` does. Its item count
    /// is the filter's count apportioned by each shard's estimated items (the file keeps one
    /// total); the counts of the `S` shards sum to the filter's.
    pub fn split(&self, filter: &BlockedBloomFilter, s: u32) -> Result<ScalableBloomFilter> {
        self.check_whole(filter)?;
        let items = self
            .apportion(filter)?
            .get(s as usize)
            .copied()
            .unwrap_or(0);
        self.split_counted(filter, s, items)
    }

    /// [`Layout::split`] with the shard's item count given: `items` is its entry in
    /// [`Layout::apportion`] of the same filter, counted once for all shards (`split` counts
    /// the whole filter's bits for the one shard it cuts, so cutting every shard with it reads
    /// the filter S times).
    pub fn split_counted(
        &self,
        filter: &BlockedBloomFilter,
        s: u32,
        items: u64,
    ) -> Result<ScalableBloomFilter> {
        self.check_shard(s)?;
        let mut parts = self.split_range(filter, s..s + 1, &[items])?;
        Ok(parts.pop().expect("one shard"))
    }

    /// Shards `range` of `filter` (each as [`Layout::split_counted`] cuts it), cut in one
    /// pass over the filter's words: `items[i]` is the item count of shard `range.start + i`
    /// (its entry in [`Layout::apportion`]). Refused before anything is allocated when the
    /// shards together exceed the memory limit ([`crate::tuning::max_bytes`]).
    pub fn split_range(
        &self,
        filter: &BlockedBloomFilter,
        range: std::ops::Range<u32>,
        items: &[u64],
    ) -> Result<Vec<ScalableBloomFilter>> {
        self.check_whole(filter)?;
        self.check_range(&range)?;
        let n = (range.end - range.start) as usize;
        if items.len() != n {
            return Err(invalid(
                "items",
                format!("{} item counts for {n} shards", items.len()),
            ));
        }
        let total = self.shard_bytes().saturating_mul(n as u64);
        store::check_size(total, store::max_bytes())?;
        let mut words = (0..n)
            .map(|_| Words::zeroed(self.shard_words()?, store::max_bytes()))
            .collect::<Result<Vec<_>>>()?;
        let src = filter.as_words();
        let row = self.shards as usize * WORDS_PER_BLOCK;
        let first = range.start as usize * WORDS_PER_BLOCK;
        let mut dsts: Vec<_> = words
            .iter_mut()
            .map(|w| w.as_mut_slice().chunks_exact_mut(WORDS_PER_BLOCK))
            .collect();
        // block i of shard s is block i * S + s of the filter: row i of the filter holds
        // block i of every shard, so the rows are read in order, once
        for r in src.chunks_exact(row) {
            let cols = r[first..first + n * WORDS_PER_BLOCK].chunks_exact(WORDS_PER_BLOCK);
            for (d, block) in dsts.iter_mut().zip(cols) {
                d.next().expect("one block per row").copy_from_slice(block);
            }
        }
        drop(dsts);
        words
            .into_iter()
            .zip(items)
            .map(|(words, &items)| self.shard_of_words(words, items))
            .collect()
    }

    /// The shard value holding `words` (a shard's blocks, in order) and `items`.
    fn shard_of_words(&self, words: Words, items: u64) -> Result<ScalableBloomFilter> {
        let part = BlockedBloomFilter::from_parts(
            self.blocks_per_shard,
            self.k,
            self.hasher,
            words,
            items,
            self.shard_capacity(),
            self.target_fpr,
        )?
        .in_layout(self.block_layout)?;
        Ok(ScalableBloomFilter::single(
            part,
            self.shard_capacity(),
            self.target_fpr,
        ))
    }

    /// Shard `s` of `filter` as the file-format bytes of [`Layout::split_counted`]`(filter,
    /// s, items)`, made a chunk at a time by gathering the shard's blocks straight from
    /// `filter`: no copy of the shard is held, so a push streams shards of any size in the
    /// memory of one chunk.
    pub fn shard_stream<'a>(
        &self,
        filter: &'a BlockedBloomFilter,
        s: u32,
        items: u64,
    ) -> Result<ShardStream<'a>> {
        self.check_whole(filter)?;
        self.check_shard(s)?;
        // The header is the one of the shard value itself, encoded from a shard whose words
        // are an anonymous map never touched (no memory behind it): its bits are not read.
        let template = store::untouched_arrays(|| {
            Words::zeroed(self.shard_words()?, store::max_bytes())
                .and_then(|w| self.shard_of_words(w, items))
        })?;
        let header_len = crate::io::format::encoded_header_len(&template);
        let mut header = Vec::with_capacity(header_len);
        crate::io::format::encoded_range(&template, 0, header_len, &mut header);
        let len = crate::io::format::Persist::encoded_len(&template);
        let payload = self.shard_bytes();
        if len != header_len as u64 + payload + 8 {
            return Err(inconsistent(format!(
                "a shard of {payload} payload bytes encodes as {len} bytes"
            )));
        }
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(&header);
        Ok(ShardStream {
            layout: *self,
            words: filter.as_words(),
            s,
            header,
            len,
            at: 0,
            hasher,
        })
    }

    /// Each shard's share of `filter`'s item count: proportional to its estimated items
    /// (from its zero bits), largest remainders rounded up, summing to the count.
    pub fn apportion(&self, filter: &BlockedBloomFilter) -> Result<Vec<u64>> {
        self.check_whole(filter)?;
        let src = filter.as_words();
        let stride = self.shards as usize;
        let mut ones = vec![0u64; stride];
        for (b, block) in src.chunks_exact(WORDS_PER_BLOCK).enumerate() {
            ones[b % stride] += block.iter().map(|w| u64::from(w.count_ones())).sum::<u64>();
        }
        let bits = self.blocks_per_shard * BLOCK_BITS;
        let est: Vec<f64> = ones
            .iter()
            .map(|&o| crate::params::estimate_items(bits, self.k, o).max(0.0))
            .collect();
        Ok(apportion(filter.len(), &est))
    }

    /// A non-empty range of this layout's shards.
    fn check_range(&self, range: &std::ops::Range<u32>) -> Result<()> {
        if range.start >= range.end || range.end > self.shards {
            return Err(invalid(
                "shards",
                format!(
                    "shards {}..{} of {} shards",
                    range.start, range.end, self.shards
                ),
            ));
        }
        Ok(())
    }

    /// One of this layout's shards.
    fn check_shard(&self, s: u32) -> Result<()> {
        if s >= self.shards {
            return Err(invalid(
                "shard",
                format!("shard {s} of {} shards", self.shards),
            ));
        }
        Ok(())
    }

    fn check_whole(&self, filter: &BlockedBloomFilter) -> Result<()> {
        if filter.layout() != self.block_layout
            || filter.blocks() != self.total_blocks()
            || filter.hashes() != self.k
            || *filter.hasher() != self.hasher
        {
            return Err(invalid(
                "filter",
                format!(
                    "shape {} blocks, k = {}, {} does not match the layout's \
                     {} × {} blocks, k = {}, {}",
                    filter.blocks(),
                    filter.hashes(),
                    filter.layout().name(),
                    self.shards,
                    self.blocks_per_shard,
                    self.k,
                    self.block_layout.name()
                ),
            ));
        }
        Ok(())
    }

    /// Build the shard values directly from keys (their bytes, as a Redis client sends
    /// them): each key hashed once, routed, and inserted into its shard. The result is the
    /// split of the blocked filter of [`Layout::total_blocks`] blocks built from the same
    /// keys, with exact item counts. Holds every shard in memory (within the memory limit);
    /// [`Layout::range_builder`] builds a few at a time.
    pub fn build_shards<'a>(
        &self,
        keys: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Vec<ScalableBloomFilter>> {
        let mut b = self.shard_builder()?;
        for key in keys {
            b.insert(key);
        }
        Ok(b.finish())
    }

    /// Empty shards to insert keys into one at a time ([`ShardBuilder`]); refused before
    /// anything is allocated when all of them together exceed the memory limit
    /// ([`crate::tuning::max_bytes`]).
    pub fn shard_builder(&self) -> Result<ShardBuilder> {
        self.range_builder(0..self.shards)
    }

    /// Empty shards `range` (of `0..S`) to insert keys into: keys routed to other shards are
    /// passed over, so building all shards a group at a time bounds the memory by the group.
    /// Refused before anything is allocated when the group exceeds the memory limit.
    pub fn range_builder(&self, range: std::ops::Range<u32>) -> Result<ShardBuilder> {
        self.check_range(&range)?;
        let total = self
            .shard_bytes()
            .saturating_mul(u64::from(range.end - range.start));
        store::check_size(total, store::max_bytes())?;
        let parts = range
            .clone()
            .map(|_| self.empty_part())
            .collect::<Result<Vec<_>>>()?;
        Ok(ShardBuilder {
            layout: *self,
            first: range.start,
            parts,
        })
    }

    /// Check a shard value's header (the first chunk of `BF.SCANDUMP key 0`, or the first
    /// bytes of its file-format bytes) against this layout: a scalable filter (the module's
    /// `BF` value) with one sub-filter of this shape and hasher. Returns its item count and
    /// the length of its file-format bytes.
    pub fn check_shard_header(&self, header: &[u8]) -> Result<ShardHead> {
        let head = peek(header).map_err(Error::Format)?;
        let h = &head.header;
        let mismatch = |what: String| inconsistent(format!("not a shard of this layout: {what}"));
        if h.kind != Kind::Scalable {
            return Err(mismatch(format!(
                "a {} value, not a BF value",
                h.kind.name()
            )));
        }
        if h.hasher != self.hasher {
            return Err(mismatch(format!(
                "hash path {} differs from the layout's {}",
                h.hasher.algorithm().name(),
                self.hasher.algorithm().name()
            )));
        }
        let mut r = ParamReader::new(&h.params);
        let _initial_capacity = r.u64()?;
        let _fpr = r.f64()?;
        let _growth = r.u32()?;
        let _tightening = r.f64()?;
        let _scaling = r.u8()?;
        let _own_limit = r.u64()?;
        let count = r.u32()?;
        if count != 1 {
            return Err(mismatch(format!("{count} sub-filters (a shard has one)")));
        }
        let blocks = r.u64()?;
        let k = r.u32()?;
        if blocks != self.blocks_per_shard || k != self.k {
            return Err(mismatch(format!(
                "{blocks} blocks with k = {k}, expected {} blocks with k = {}",
                self.blocks_per_shard, self.k
            )));
        }
        let _capacity = r.u64()?;
        let _sub_fpr = r.f64()?;
        let _sub_items = r.u64()?;
        // the sub-filter's layout: a trailer byte, absent for the positions layout
        let layout = if r.is_done() { 0 } else { r.u8()? };
        r.finish()?;
        if layout != layout_id(self.block_layout) {
            return Err(mismatch(format!(
                "block layout {layout}, expected {} ({})",
                layout_id(self.block_layout),
                self.block_layout.name()
            )));
        }
        Ok(ShardHead {
            items: h.items,
            len: head.file_len,
        })
    }

    /// The model's false-positive rate of the whole filter when its shards hold `items`
    /// items each (a query goes to each shard with probability `1/S`).
    pub fn current_fpr(&self, items: &[u64]) -> f64 {
        if items.is_empty() {
            return 0.0;
        }
        let sum: f64 = items
            .iter()
            .map(|&n| match self.block_layout {
                BlockLayout::Positions => {
                    crate::params::fpr_blocked(n, self.blocks_per_shard, BLOCK_BITS, self.k)
                }
                BlockLayout::Sectors | BlockLayout::Salted => {
                    crate::params::fpr_sectors(n, self.blocks_per_shard)
                }
                BlockLayout::Salted256 => crate::params::fpr_salted256(n, self.blocks_per_shard),
            })
            .sum();
        sum / items.len() as f64
    }
}

/// The shards of a [`Layout`] being built from keys ([`Layout::shard_builder`]).
#[derive(Debug)]
pub struct ShardBuilder {
    layout: Layout,
    first: u32,
    parts: Vec<BlockedBloomFilter>,
}

impl ShardBuilder {
    /// Insert a key's bytes into its shard; true when it set a new bit (false also when
    /// its shard is not among this builder's).
    pub fn insert(&mut self, key: &[u8]) -> bool {
        self.insert_hashed(self.layout.hasher.hash_bytes(key))
    }

    /// Insert a key hashed by the layout's hasher.
    pub fn insert_hashed(&mut self, h: Hashed) -> bool {
        let s = self.layout.shard_of_hash(h);
        match s.checked_sub(self.first) {
            Some(i) if (i as usize) < self.parts.len() => self.parts[i as usize].insert_hashed(h),
            _ => false,
        }
    }

    /// The shards this builder holds (`first..first + count`).
    pub fn range(&self) -> std::ops::Range<u32> {
        self.first..self.first + self.parts.len() as u32
    }

    /// Keys counted so far (those that set a new bit), over all shards.
    pub fn len(&self) -> u64 {
        self.parts.iter().map(|p| p.len()).sum()
    }

    /// Whether no key was counted yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shards as the module's BF values, in shard order (those of [`ShardBuilder::range`]).
    pub fn finish(self) -> Vec<ScalableBloomFilter> {
        let (capacity, fpr) = (self.layout.shard_capacity(), self.layout.target_fpr);
        self.parts
            .into_iter()
            .map(|p| ScalableBloomFilter::single(p, capacity, fpr))
            .collect()
    }
}

/// One shard's file-format bytes made in order, a chunk at a time, from the whole filter
/// ([`Layout::shard_stream`]): the header alone first, then the blocks gathered from the
/// filter, then the checksum, computed as the bytes pass.
pub struct ShardStream<'a> {
    layout: Layout,
    words: &'a [u64],
    s: u32,
    header: Vec<u8>,
    len: u64,
    at: u64,
    hasher: xxhash_rust::xxh3::Xxh3,
}

impl ShardStream<'_> {
    /// The shard's index.
    pub fn shard(&self) -> u32 {
        self.s
    }

    /// Length of the shard's whole file-format bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Never true (a shard has a header, a payload and a checksum).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append the next chunk to `out` and return the iterator after it (the offset where the
    /// next chunk starts, as `SCANDUMP` numbers chunks), or `None` once every byte is out.
    /// The first chunk is the header alone; later ones are at most `max` bytes (at least one
    /// block, or the checksum).
    pub fn next_chunk(&mut self, max: usize, out: &mut Vec<u8>) -> Option<u64> {
        let header = self.header.len() as u64;
        let payload_end = header + self.layout.shard_bytes();
        if self.at >= self.len {
            return None;
        }
        if self.at == 0 {
            out.extend_from_slice(&self.header);
            self.at = header;
            return Some(self.at);
        }
        if self.at >= payload_end {
            let sum = self.hasher.digest().to_le_bytes();
            out.extend_from_slice(&sum);
            self.at = self.len;
            return Some(self.at);
        }
        let block = BLOCK_BITS as usize / 8;
        let first = ((self.at - header) / block as u64) as usize;
        let count = (max / block)
            .max(1)
            .min(((payload_end - self.at) / block as u64) as usize);
        let start = out.len();
        let stride = self.layout.shards as usize * WORDS_PER_BLOCK;
        let col = self.s as usize * WORDS_PER_BLOCK;
        out.reserve(count * block);
        for i in first..first + count {
            let at = i * stride + col;
            let b = &self.words[at..at + WORDS_PER_BLOCK];
            if cfg!(target_endian = "little") {
                out.extend_from_slice(bytemuck::cast_slice(b));
            } else {
                for w in b {
                    out.extend_from_slice(&w.to_le_bytes());
                }
            }
        }
        self.hasher.update(&out[start..]);
        self.at += (count * block) as u64;
        Some(self.at)
    }
}

/// What a shard's header says ([`Layout::check_shard_header`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardHead {
    /// Items counted in the shard.
    pub items: u64,
    /// Length of the shard's file-format bytes (header, bits, checksum).
    pub len: u64,
}

fn check_shard_count(shards: u32) -> std::result::Result<(), String> {
    if (1..=MAX_SHARDS).contains(&shards) {
        Ok(())
    } else {
        Err(format!(
            "{shards} shards (1 to {MAX_SHARDS}: one slot each)"
        ))
    }
}

/// `total` split in proportion to `weights` (largest remainders get the rounding), summing
/// to `total`; equal shares when every weight is 0.
fn apportion(total: u64, weights: &[f64]) -> Vec<u64> {
    let n = weights.len();
    if n == 0 {
        return Vec::new();
    }
    let sum: f64 = weights.iter().sum();
    let share = |i: usize| {
        let s = if sum > 0.0 {
            total as f64 * weights[i] / sum
        } else {
            total as f64 / n as f64
        };
        s.clamp(0.0, total as f64)
    };
    // `as` saturates: a share of u64::MAX as f64 becomes u64::MAX
    let mut out: Vec<u64> = (0..n).map(|i| share(i).floor() as u64).collect();
    let given: u128 = out.iter().map(|&x| u128::from(x)).sum();
    let target = u128::from(total);
    if given > target {
        // floating-point shares rounded over the total: take the excess from the largest
        let mut over = given - target;
        while over > 0 {
            let i = (0..n).max_by_key(|&i| out[i]).expect("n > 0");
            let take = over.min(u128::from(out[i])) as u64;
            out[i] -= take;
            over -= u128::from(take);
        }
        return out;
    }
    let mut left = target - given;
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        let (ra, rb) = (share(a) - share(a).floor(), share(b) - share(b).floor());
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    while left > 0 {
        for &i in &order {
            if left == 0 {
                break;
            }
            let add = (left / n as u128).max(1).min(u128::from(u64::MAX - out[i])) as u64;
            out[i] += add;
            left -= u128::from(add);
        }
    }
    out
}

#[cfg(test)]
mod tests;
