//! The blocked Bloom filter, bloomery's fast default: [`BlockedBloomFilter`] (its docs say which
//! paper it follows and when to pick it).

pub(crate) mod lines;

use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(feature = "rayon")]
use rayon::prelude::*;

use crate::dispatch::{hashed_set_kind, SetStats};
use crate::error::{invalid, Result};
use crate::filter::{shape_mismatch, Build, Builder, Filter, Merge, Stats};
use crate::hash::{Hashed, Key, KeyHasher};
use crate::io::format::{
    self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::kind::Capabilities;
use crate::params::{self, BLOCKED_MAX_K};
use crate::sets::bits::Core;
use crate::store::{self, Pipeline, Words};

mod atomic;
#[cfg(target_arch = "x86_64")]
mod avx2;
mod block;
mod fill;
mod persist;
mod regions;
mod rewrite;

pub use atomic::AtomicBlockedBloomFilter;
pub use block::BlockLayout;
use block::*;
pub(crate) use fill::FillPass;
pub use regions::{InsertRegions, RegionWriter};

/// Bits per block (one 64-byte cache line).
pub const BLOCK_BITS: u64 = 512;
/// How many keys ahead the batched queries hash and prefetch: enough to cover the memory
/// latency of a filter far beyond the caches on a busy machine (the choice is measured in
/// docs/BENCHMARKS.md); at sizes that fit the caches it makes no difference.
pub const BATCH_AHEAD: usize = 32;

/// The blocked Bloom filter, bloomery's fast default: every key lives in one 512-bit block —
/// one cache line — so an insert or a query costs one cache miss instead of k.
///
/// Putze, Sanders & Singler, "Cache-, Hash- and Space-Efficient Bloom Filters" (2007). The
/// array is split into 512-bit blocks aligned to cache lines; the key's hash picks a block by
/// multiply-shift on the low half of its [`Hashed`] value. Inside the block there are two
/// layouts ([`BlockLayout`]), each its own file kind:
///
/// - **positions** (kind `blocked`): k bit positions anywhere in the block from 9-bit slices of
///   the high half (7 per 64 bits; for k > 7 further 64-bit words are derived from both halves
///   and a round counter with a fixed mixer). Any k from 1 to 32, so it is the most
///   memory-efficient blocked filter at every rate.
/// - **sectors** (kind `blocked-sectors`): one bit in each of the block's eight 64-bit words,
///   bit `(hi >> 6j) & 63` of word j (k = 8) — the "sectorized" variant of Putze et al. §3 and
///   the 64-bit cousin of Parquet's split-block filter. A query or an insert is two 256-bit
///   vector operations with AVX2 (detected at run time; portable code otherwise), about half the
///   instructions of the positions layout, and a short operation lets the CPU overlap the cache
///   misses of several consecutive keys: that is where a filter far larger than the caches
///   gets its speed. With the default hasher on an AVX2 CPU, single-key and batched operations
///   run hashing, block choice and the update as one AVX2 function, chosen once when the filter
///   is made. k = 8 is near the optimum between about 2% and 0.1%.
/// - **salted** (kind `blocked-salted`): one bit per 64-bit word as in the sectors layout, all
///   from one 64-bit hash (xxh3-64): the bit of word j is the top 6 bits of the hash's low 32
///   bits times the j-th of the Parquet specification's eight odd salts. Same memory and
///   model as sectors, a cheaper hash. On a CPU with AVX-512F the block is one 512-bit vector
///   (one load, OR and store per insert), with AVX2 two 256-bit ones.
/// - **salted-256** (kind `blocked-salted256`): 256-bit blocks of eight 32-bit lanes, one bit
///   per lane, the same salts (Parquet's split block, hashed with xxh3-64), two blocks per
///   cache line: the key's block is `reduce(h.lo, 2·lines)`, so its line is the one every
///   layout picks. One 256-bit vector operation per query with AVX2, the fewest instructions
///   per key of the layouts, for a few per cent more memory than the 512-bit salted block
///   ([`params::fpr_salted256`]).
///
/// Sizing from (n, p) picks a one-bit-per-word layout when the sectors shape needs at most
/// `SECTORS_MAX_EXTRA` (5%) more memory than the best positions shape, positions otherwise
/// (e.g. at 10% or 10⁻⁵): the 512-bit salted layout, or sectors with a hasher the salted
/// layouts do not take. Salted-256 is chosen only by [`Builder::layout`] (or `--kind
/// blocked-salted256`): the Redis module's BF values, and so `bloomery cluster push`, do not
/// hold it yet, and the default file must stay pushable. Fixing k or the bits, or calling
/// [`Builder::layout`], decides the layout explicitly. Keys crowd unevenly into
/// blocks, so at equal memory a blocked filter has a higher false-positive rate than the
/// classic one; [`params::fpr_blocked`] (positions: binomial occupancy of the query's block, a
/// Markov chain over the k marked bits, the distinct-probe distribution of k draws) and
/// [`params::fpr_sectors`] (binomial occupancy × `(1-(63/64)^j)^8`) model that exactly, and the
/// sizing picks the smallest block count that meets the requested rate under the model —
/// measured rates land within a few percent of the request, not far under it (wasting memory)
/// or over it (breaking the promise).
///
/// **When to pick it:** almost always — dedup of URLs, blocklists, caches, joins — whenever the
/// set is large and speed matters. It supports concurrent inserts through `&self`
/// ([`AtomicBlockedBloomFilter`]), parallel bulk builds (`par_insert_all`, feature `rayon`),
/// batched queries that overlap cache misses ([`BlockedBloomFilter::contains_batch`]), union,
/// intersection, halving and every estimate. Prefer the classic filter only for the textbook
/// formulas, and the split-block filter when Parquet must read the bits.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BlockedBloomFilter, Filter, Stats};
///
/// let mut f = BlockedBloomFilter::try_new(10_000, 0.01)?;
/// for i in 0..10_000u64 {
///     f.insert(&i);
/// }
/// assert!((0..10_000u64).all(|i| f.contains(&i))); // no false negatives
/// let false_positives = (10_000..110_000u64).filter(|i| f.contains(i)).count();
/// assert!(false_positives < 2_000, "{false_positives}"); // about 1% of 100,000
/// assert!(f.current_fpr() < 0.02);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct BlockedBloomFilter {
    core: Core,
    blocks: u64,
    k: u32,
    layout: BlockLayout,
    /// The fused AVX2 path single-key queries take ([`Fused::of`]), decided once, when the
    /// filter is made.
    read: Fused,
    /// The one single-key inserts take: `read` once the words are owned (a read-only map,
    /// which the first insert on the portable path copies, takes [`Fused::No`]; see
    /// [`Filter::insert`]).
    write: Fused,
}

/// Equal when the shape, layout, hasher, counters and bits are equal (whether the words are
/// mapped, and which code path runs, do not matter).
impl PartialEq for BlockedBloomFilter {
    fn eq(&self, other: &Self) -> bool {
        self.core == other.core
            && self.blocks == other.blocks
            && self.k == other.k
            && self.layout == other.layout
    }
}

/// The fused AVX2 path a filter's single-key operations take: one per layout and hash (the
/// sectors layout with xxh3-128; the salted layouts with xxh3-64, of seed 0 or another seed),
/// on a CPU with AVX2 (the 512-bit salted layout with AVX-512 kernels where the CPU has
/// AVX-512F); [`Fused::No`] otherwise (the positions layout, keyed SipHash, other
/// CPUs, a mapped filter's inserts). Deciding this once per filter, as one byte, keeps a
/// single-key operation short: one jump on that byte instead of tests of the CPU feature, the
/// layout, the hash algorithm and its seed on every key. On a filter larger than the caches,
/// fewer instructions per key also let the core overlap more of the keys' cache misses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fused {
    /// The portable path.
    No,
    /// The sectors layout, xxh3-128.
    Sectors,
    /// The 512-bit salted layout, xxh3-64 of seed 0 (xxh3's unseeded function).
    Salted,
    /// The 512-bit salted layout, xxh3-64 of another seed.
    SaltedSeeded,
    /// The 512-bit salted layout with AVX-512 kernels (the block as one vector), seed 0.
    SaltedWide,
    /// The 512-bit salted layout with AVX-512 kernels, another seed.
    SaltedWideSeeded,
    /// The 256-bit salted layout, xxh3-64 of seed 0.
    Salted256,
    /// The 256-bit salted layout, xxh3-64 of another seed.
    Salted256Seeded,
}

impl Fused {
    /// The path of a filter of this layout and hasher on this CPU.
    fn of(layout: BlockLayout, hasher: &KeyHasher) -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if !crate::simd::avx2() {
                return Self::No;
            }
            let unseeded = hasher.seed_is_zero();
            let wide = crate::simd::avx512();
            match layout {
                BlockLayout::Sectors if hasher.is_xxh3() => Self::Sectors,
                BlockLayout::Salted if hasher.is_xxh3_64() => match (wide, unseeded) {
                    (true, true) => Self::SaltedWide,
                    (true, false) => Self::SaltedWideSeeded,
                    (false, true) => Self::Salted,
                    (false, false) => Self::SaltedSeeded,
                },
                BlockLayout::Salted256 if hasher.is_xxh3_64() && unseeded => Self::Salted256,
                BlockLayout::Salted256 if hasher.is_xxh3_64() => Self::Salted256Seeded,
                _ => Self::No,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (layout, hasher);
            Self::No
        }
    }

    /// The path inserts take: this one on owned words, none on a read-only map.
    fn for_writes(self, words: &Words) -> Self {
        if words.is_mapped() {
            Self::No
        } else {
            self
        }
    }
}

/// True when the salted layout can use this hasher: seeded xxh3 (which it turns into xxh3-64,
/// [`KeyHasher::to_xxh3_64`]) or keyed SipHash, whose low half it uses.
fn salted_hasher(hasher: &KeyHasher) -> bool {
    use crate::hash::HashAlgorithm as A;
    matches!(
        hasher.algorithm(),
        A::Xxh3_128 | A::Xxh3_64 | A::SipHash13_128
    )
}

impl Build for BlockedBloomFilter {
    type Options = BlockedOptions;
    fn build(b: &Builder<Self>) -> Result<Self> {
        let forced = b.opts.layout;
        let b = &b.sizing;
        let eight = forced.is_some_and(BlockLayout::sets_eight);
        if eight && b.hashes.is_some_and(|k| k != SECTOR_K) {
            return Err(invalid(
                "hashes",
                "the sectors and salted layouts set exactly 8 bits per key",
            ));
        }
        if forced.is_some_and(BlockLayout::is_salted) && !salted_hasher(&b.key_hasher()) {
            return Err(invalid(
                "hasher",
                "the salted layout hashes with xxh3 (seeded) or keyed SipHash",
            ));
        }
        // the layout sizing from (n, p) picks where sectors would do: salted when the hasher
        // allows it (the same bits per key, one 64-bit hash per key)
        let salted = salted_hasher(&b.key_hasher());
        let eight_bits = if salted {
            BlockLayout::Salted
        } else {
            BlockLayout::Sectors
        };
        let (blocks, k, layout, n, p) = match b.bits {
            Some(0) => return Err(invalid("bits", "must be at least 1")),
            Some(m) => {
                let blocks = m.div_ceil(BLOCK_BITS).max(1);
                let layout = forced.unwrap_or(BlockLayout::Positions);
                let k = match (layout, b.hashes, b.capacity) {
                    (BlockLayout::Sectors | BlockLayout::Salted | BlockLayout::Salted256, _, _) => {
                        SECTOR_K
                    }
                    (_, Some(k), _) => k,
                    (_, None, Some(n)) => {
                        params::blocked_best_k(n, blocks, BLOCK_BITS, BLOCKED_MAX_K)
                    }
                    (_, None, None) => {
                        return Err(invalid("hashes", "give hashes or a capacity with bits"))
                    }
                };
                (
                    blocks,
                    k,
                    layout,
                    b.capacity.unwrap_or(0),
                    b.fpr.unwrap_or(0.0),
                )
            }
            None => {
                let (n, p) = b.sized()?;
                // refuse absurd sizes before searching
                store::check_size((params::bits_asymptotic(n, p) / 8.0) as u64, b.limit())?;
                match (b.hashes, forced) {
                    (_, Some(layout @ (BlockLayout::Sectors | BlockLayout::Salted))) => {
                        (params::sectors_blocks(n, p)?, SECTOR_K, layout, n, p)
                    }
                    (_, Some(BlockLayout::Salted256)) => (
                        params::salted256_lines(n, p)?,
                        SECTOR_K,
                        BlockLayout::Salted256,
                        n,
                        p,
                    ),
                    (None, layout) => {
                        let (blocks, k, layout) = auto_shape(n, p, layout.is_none(), eight_bits)?;
                        (blocks, k, layout, n, p)
                    }
                    (Some(k), _) => {
                        params::check_hashes(k, BLOCKED_MAX_K)?;
                        let mut blocks = params::blocked_shape(n, p, BLOCK_BITS)?.blocks;
                        let mut model = params::BlockedModel::new(BLOCK_BITS, k);
                        while model.rate(n, blocks) > p {
                            blocks += blocks / 64 + 1;
                            store::check_size(blocks * 64, b.limit())?;
                        }
                        (blocks, k, BlockLayout::Positions, n, p)
                    }
                }
            }
        };
        // sized by capacity and rate: a block count that folding can halve
        let blocks = if b.bits.is_none() {
            params::foldable_blocks(blocks)
        } else {
            blocks
        };
        let hasher = if layout.is_salted() {
            b.key_hasher().to_xxh3_64()
        } else {
            b.key_hasher()
        };
        let mut f = Self::with_layout(blocks, k, layout, hasher, b.limit())?;
        f.core.capacity = n;
        f.core.target_fpr = if p > 0.0 && p < 1.0 { p } else { 0.0 };
        Ok(f)
    }
}

/// The shape sized from (n, p) with k free: the best positions shape or, where `eight` allows
/// it and it costs at most `SECTORS_MAX_EXTRA` more memory, 8 bits per key in `eight_bits`
/// (sectors beyond [`SALTED_MAX_BLOCKS`]). Blocks not yet made foldable.
fn auto_shape(
    n: u64,
    p: f64,
    eight: bool,
    eight_bits: BlockLayout,
) -> Result<(u64, u32, BlockLayout)> {
    let s = params::blocked_shape(n, p, BLOCK_BITS)?;
    let sectors = if eight {
        params::sectors_blocks(n, p)
            .ok()
            .filter(|&sb| sb as f64 <= s.blocks as f64 * SECTORS_MAX_EXTRA)
    } else {
        None
    };
    Ok(match sectors {
        Some(sb) if sb <= SALTED_MAX_BLOCKS => (sb, SECTOR_K, eight_bits),
        Some(sb) => (sb, SECTOR_K, BlockLayout::Sectors),
        None => (s.blocks, s.k, BlockLayout::Positions),
    })
}

/// What `BlockedBloomFilter::builder().capacity(n).fpr(p).hasher(hasher)` makes, without
/// making it: blocks, k, layout and the hasher the filter hashes with (xxh3-64 of the same
/// seed for the salted layout). For a caller that lays out such a filter without holding it
/// (a sharded filter built shard by shard, [`crate::shard`]).
pub(crate) fn default_shape(
    n: u64,
    p: f64,
    hasher: KeyHasher,
) -> Result<(u64, u32, BlockLayout, KeyHasher)> {
    params::check_capacity(n)?;
    params::check_fpr(p)?;
    let eight_bits = if salted_hasher(&hasher) {
        BlockLayout::Salted
    } else {
        BlockLayout::Sectors
    };
    let (blocks, k, layout) = auto_shape(n, p, true, eight_bits)?;
    let hasher = match layout {
        BlockLayout::Salted => hasher.to_xxh3_64(),
        _ => hasher,
    };
    Ok((params::foldable_blocks(blocks), k, layout, hasher))
}

/// The setting only a blocked filter's builder has (see [`Builder::layout`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct BlockedOptions {
    layout: Option<BlockLayout>,
}

impl Builder<BlockedBloomFilter> {
    /// Force a block layout instead of the automatic choice (salted — sectors with a hasher
    /// other than xxh3 or keyed SipHash — where sectors cost at most `SECTORS_MAX_EXTRA` more
    /// memory, positions otherwise and whenever `hashes` or `bits` are given; salted-256 only
    /// when forced here). The
    /// salted layouts turn an xxh3-128 hasher into xxh3-64 of the same seed
    /// ([`HashAlgorithm::Xxh3_64`](crate::hashing::HashAlgorithm::Xxh3_64)).
    ///
    /// ```
    /// use bloomery::BlockedBloomFilter;
    /// use bloomery::builders::BlockLayout;
    ///
    /// # fn main() -> bloomery::Result<()> {
    /// let f = BlockedBloomFilter::builder()
    ///     .capacity(1000)
    ///     .fpr(0.01)
    ///     .layout(BlockLayout::Positions)
    ///     .try_build()?;
    /// assert_eq!(f.layout(), BlockLayout::Positions);
    /// # Ok(()) }
    /// ```
    pub fn layout(mut self, layout: BlockLayout) -> Self {
        self.opts.layout = Some(layout);
        self
    }
}

/// The most blocks a salted filter has: up to 2³² blocks (256 GiB) the block (the high bits
/// of the 64-bit hash) and the bits inside it (its low 32 bits) are independent; beyond,
/// sizing takes the sectors layout instead.
pub const SALTED_MAX_BLOCKS: u64 = 1 << 32;

/// The most 512-bit lines a salted-256 filter has: 2³¹ lines are 2³² blocks of 256 bits
/// (128 GiB), the most for which the block (the high bits of the 64-bit hash) and the bits
/// inside it (its low 32 bits) are independent; beyond, sizing takes another layout.
pub const SALTED256_MAX_LINES: u64 = 1 << 31;

/// Bits per key of the sectors and salted layouts.
pub(crate) const SECTOR_K: u32 = 8;

impl BlockedBloomFilter {
    /// Move the bit array with `mv` (see [`crate::store::Words::relocate`]).
    ///
    /// # Safety
    /// As [`Words::relocate`].
    pub(crate) unsafe fn relocate_words(
        &mut self,
        mv: &mut dyn FnMut(std::ptr::NonNull<u8>) -> Option<std::ptr::NonNull<u8>>,
    ) {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.core.words.relocate(mv) };
    }

    /// Bits in one block (one 64-byte cache line).
    pub const BLOCK_BITS: u64 = BLOCK_BITS;
    /// How many keys ahead batched inserts prefetch (the depth of a [`crate::tuning::Pipeline`] that
    /// feeds [`BlockedBloomFilter::prefetch_hashed`] / [`Filter::insert_hashed`]).
    pub const BATCH_AHEAD: usize = BATCH_AHEAD;

    /// A builder: `BlockedBloomFilter::builder().capacity(n).fpr(p).try_build()`.
    pub fn builder() -> Builder<Self> {
        Builder::new()
    }

    /// Sized for `n` items at false-positive rate `p` under the blocked model.
    pub fn try_new(n: u64, p: f64) -> Result<Self> {
        Self::builder().capacity(n).fpr(p).try_build()
    }

    /// An exact shape: `blocks` blocks of 512 bits, `k` bits per key (positions layout).
    pub fn try_with_shape(blocks: u64, k: u32) -> Result<Self> {
        Self::with_layout(
            blocks,
            k,
            BlockLayout::Positions,
            KeyHasher::new(),
            store::max_bytes(),
        )
    }

    /// An exact shape in the sectors layout: `blocks` blocks of 512 bits, 8 bits per key.
    pub fn try_with_sectors(blocks: u64) -> Result<Self> {
        Self::with_layout(
            blocks,
            SECTOR_K,
            BlockLayout::Sectors,
            KeyHasher::new(),
            store::max_bytes(),
        )
    }

    /// An exact shape in the salted layout: `blocks` blocks of 512 bits, 8 bits per key,
    /// hashed with xxh3-64 (seed 0).
    pub fn try_with_salted(blocks: u64) -> Result<Self> {
        Self::with_layout(
            blocks,
            SECTOR_K,
            BlockLayout::Salted,
            KeyHasher::new().to_xxh3_64(),
            store::max_bytes(),
        )
    }

    /// An exact shape in the salted-256 layout: `lines` lines of 512 bits, that is
    /// `2 · lines` blocks of 256 bits, 8 bits per key, hashed with xxh3-64 (seed 0).
    pub fn try_with_salted256(lines: u64) -> Result<Self> {
        Self::with_layout(
            lines,
            SECTOR_K,
            BlockLayout::Salted256,
            KeyHasher::new().to_xxh3_64(),
            store::max_bytes(),
        )
    }

    fn with_layout(
        blocks: u64,
        k: u32,
        layout: BlockLayout,
        hasher: KeyHasher,
        limit: u64,
    ) -> Result<Self> {
        if blocks == 0 {
            return Err(invalid("bits", "need at least one block"));
        }
        params::check_hashes(k, BLOCKED_MAX_K)?;
        if layout == BlockLayout::Salted && blocks > SALTED_MAX_BLOCKS {
            return Err(invalid(
                "bits",
                "the salted layout holds at most 2^32 blocks (256 GiB); use the sectors layout",
            ));
        }
        if layout == BlockLayout::Salted256 && blocks > SALTED256_MAX_LINES {
            return Err(invalid(
                "bits",
                "the salted-256 layout holds at most 2^32 blocks of 256 bits (128 GiB); \
                 use the salted or sectors layout",
            ));
        }
        if layout != BlockLayout::Positions && k != SECTOR_K {
            return Err(invalid(
                "hashes",
                "the sectors and salted layouts set exactly 8 bits per key",
            ));
        }
        let words = blocks
            .checked_mul(BLOCK_WORDS as u64)
            .and_then(|w| usize::try_from(w).ok())
            .ok_or_else(|| invalid("bits", "too large for this platform"))?;
        Ok(Self {
            core: Core::new(words, hasher, limit)?,
            blocks,
            k,
            layout,
            read: Fused::of(layout, &hasher),
            write: Fused::of(layout, &hasher),
        })
    }

    /// How the key's bits are placed in its block.
    pub fn layout(&self) -> BlockLayout {
        self.layout
    }

    /// Number of 512-bit blocks (lines; under the salted-256 layout each holds two 256-bit
    /// blocks).
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Bits per key (k).
    pub fn hashes(&self) -> u32 {
        self.k
    }

    /// The raw words (block b is words `8b..8b+8`).
    #[inline]
    pub fn as_words(&self) -> &[u64] {
        self.core.words.as_slice()
    }

    /// True when the words are a read-only view of a mapped file.
    pub fn is_mapped(&self) -> bool {
        self.core.words.is_mapped()
    }

    /// Remove every item.
    pub fn clear(&mut self) {
        self.core.words.as_mut_slice().fill(0);
        self.core.items = 0;
    }

    /// Query many keys, overlapping their cache misses: each key is hashed and its block
    /// prefetched [`BATCH_AHEAD`](BlockedBloomFilter::BATCH_AHEAD) keys before it is probed (a software pipeline), so up to that
    /// many misses are in flight. Writes one answer per key into `out`.
    pub fn contains_batch<K: Key>(&self, keys: &[K], out: &mut [bool]) -> Result<()> {
        if keys.len() != out.len() {
            return Err(invalid("out", "must have one slot per key"));
        }
        self.pipeline(keys, |i, hit| out[i] = hit);
        Ok(())
    }

    /// [`contains_batch`](Self::contains_batch) over keys already hashed with this filter's
    /// [`hasher`](Filter::hasher) (callers that read keys where hashing is cheapest, e.g.
    /// bindings that hash while they walk a foreign runtime's objects): the same pipeline of
    /// prefetches, the same answers.
    pub fn contains_hashed_batch(&self, hashes: &[Hashed], out: &mut [bool]) -> Result<()> {
        if hashes.len() != out.len() {
            return Err(invalid("out", "must have one slot per key"));
        }
        let answer = |i, hit| out[i] = hit;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `read` names a fused path only on a CPU with its kernel's features
        // (`Fused::of`).
        unsafe {
            self.pipeline_hashed_fused(hashes, answer)
        };
        #[cfg(not(target_arch = "x86_64"))]
        self.pipeline_with(hashes.iter().copied(), answer, |words, h| {
            self.probe(words, h)
        });
        Ok(())
    }

    /// Count how many of `keys` may be present, overlapping cache misses (see
    /// [`contains_batch`](Self::contains_batch)).
    pub fn count_batch<K: Key>(&self, keys: &[K]) -> usize {
        let mut hits = 0;
        self.pipeline(keys, |_, hit| hits += usize::from(hit));
        hits
    }

    /// The batched query loop: hash key `i` and prefetch its block, probe key
    /// `i - BATCH_AHEAD` (whose block has had time to arrive), then drain the last ones.
    #[inline(always)]
    fn pipeline<K: Key>(&self, keys: &[K], answer: impl FnMut(usize, bool)) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `read` names a fused path only on a CPU with its kernel's features
        // (`Fused::of`).
        unsafe {
            self.pipeline_fused(keys, answer)
        };
        #[cfg(not(target_arch = "x86_64"))]
        {
            let hasher = self.core.hasher;
            self.pipeline_with(keys.iter().map(|k| hasher.hash(k)), answer, |words, h| {
                self.probe(words, h)
            });
        }
    }

    /// The loop of [`pipeline`](Self::pipeline) over given hashes and probe (the portable
    /// path's).
    #[inline(always)]
    fn pipeline_with(
        &self,
        hashes: impl Iterator<Item = Hashed>,
        mut answer: impl FnMut(usize, bool),
        probe: impl Fn(&[u64], Hashed) -> bool,
    ) {
        let words = self.as_words();
        let mut pipe = Pipeline::<(usize, Hashed), BATCH_AHEAD>::default();
        for (i, h) in hashes.enumerate() {
            store::prefetch(words, block_start(h, self.blocks));
            if let Some((j, h)) = pipe.push((i, h)) {
                answer(j, probe(words, h));
            }
        }
        for (j, h) in pipe.drain() {
            answer(j, probe(words, h));
        }
    }

    #[inline(always)]
    fn probe(&self, words: &[u64], h: Hashed) -> bool {
        let (at, half) = place(h, self.blocks, self.layout);
        Block::at(words, at).check(h, self.k, self.layout, half)
    }

    /// Hint the CPU to fetch the block of a pre-hashed key ahead of an insert or a query, so
    /// that streaming callers (hash a key, insert it a few keys later) overlap cache misses.
    #[inline]
    pub fn prefetch_hashed(&self, h: Hashed) {
        store::prefetch(self.as_words(), block_start(h, self.blocks));
    }

    /// Insert many keys in parallel (rayon; feature `rayon`): hashed in parallel, then inserted by
    /// [`par_insert_hashed`](Self::par_insert_hashed) with each thread owning a disjoint region
    /// of blocks. The result is identical to inserting them one by one. Returns the number of
    /// keys that were new.
    #[cfg(feature = "rayon")]
    pub fn par_insert_all<K: Key + Sync>(&mut self, keys: &[K]) -> u64 {
        let hasher = self.core.hasher;
        let hashes: Vec<Hashed> = keys
            .par_iter()
            .with_min_len(4096)
            .map(|k| hasher.hash(k))
            .collect();
        self.par_insert_hashed(&hashes)
    }

    /// Halve the filter: OR adjacent block pairs, giving exactly the filter of half as many
    /// blocks built from the same keys. Requires an even block count ≥ 2 (a filter sized by
    /// capacity and rate has one, [`params::foldable_blocks`]).
    ///
    /// The block is chosen by multiply-shift, `⌊x·B / 2⁶⁴⌋`, and the bits inside it from
    /// other hash bits. For B = 2h, `⌊⌊x·2h / 2⁶⁴⌋ / 2⌋ = ⌊x·h / 2⁶⁴⌋`: blocks 2i and 2i+1
    /// are exactly the keys of block i of the filter of h blocks, with the same bits inside.
    /// An odd B has no such pairing. The halved filter keeps the items and the target rate;
    /// its capacity at that rate is half the original's.
    ///
    /// The half is built in memory, within the process's memory limit ([`crate::tuning::max_bytes`]):
    /// a larger one is [`Error::TooLarge`](crate::Error::TooLarge), before anything is allocated.
    pub fn fold(&self) -> Result<Self> {
        fold_check(self.blocks)?;
        let mut out = Self::with_layout(
            self.blocks / 2,
            self.k,
            self.layout,
            self.core.hasher,
            store::max_bytes(),
        )?;
        // blocks 2b and 2b+1 of the layout's width (a line, or half a line under the
        // salted-256 layout, whose 2·lines blocks halve the same way) OR into block b
        let width = self.layout.block_words();
        let src = self.as_words();
        for (dst, pair) in out
            .core
            .words
            .as_mut_slice()
            .chunks_exact_mut(width)
            .zip(src.chunks_exact(2 * width))
        {
            let (x, y) = pair.split_at(width);
            for i in 0..width {
                dst[i] = x[i] | y[i];
            }
        }
        out.core.items = self.core.items;
        out.core.capacity = self.core.capacity / 2;
        out.core.target_fpr = self.core.target_fpr;
        Ok(out)
    }

    /// The empty filter of the shape `times` folds give (`times` = 0: this shape), with this
    /// filter's hasher, k, layout and target, its capacity halved per fold and `items` items;
    /// its words are zero pages never to be written ([`store::untouched_arrays`]): what a
    /// result streamed into a file takes its header and figures from. Refused as
    /// [`fold`](Self::fold) refuses an odd block count.
    pub(crate) fn stream_shell(&self, times: u32, items: u64) -> Result<Self> {
        let mut blocks = self.blocks;
        for _ in 0..times {
            fold_check(blocks)?;
            blocks /= 2;
        }
        let mut out = store::untouched_arrays(|| {
            Self::with_layout(blocks, self.k, self.layout, self.core.hasher, u64::MAX)
        })?;
        out.core.items = items;
        out.core.capacity = (0..times).fold(self.core.capacity, |c, _| c / 2);
        out.core.target_fpr = self.core.target_fpr;
        Ok(out)
    }

    /// Mark a damaged byte range as all ones (Salman §3); no inserted key is lost.
    pub fn mark_damaged(&mut self, bytes: std::ops::Range<u64>) -> Result<()> {
        self.core.mark_damaged(bytes)
    }

    /// Estimated `|A ∪ B|`.
    pub fn estimate_union(&self, other: &Self) -> Result<f64> {
        self.check_compatible(other)?;
        let ones = store::count_or(self.as_words(), other.as_words());
        Ok(params::estimate_items(self.bit_len(), self.k, ones))
    }

    /// Estimated `|A ∩ B|` by the inner-product formula (Broder & Mitzenmacher §2.4), applied to the whole array.
    pub fn estimate_intersection(&self, other: &Self) -> Result<f64> {
        self.check_compatible(other)?;
        let m = self.bit_len();
        let (a, b) = (self.as_words(), other.as_words());
        let z1 = m - store::count_ones(a);
        let z2 = m - store::count_ones(b);
        let z12 = m - store::count_and(a, b);
        Ok(params::estimate_intersection(m, self.k, z1, z2, z12))
    }

    /// Estimated Jaccard similarity.
    pub fn estimate_jaccard(&self, other: &Self) -> Result<f64> {
        let i = self.estimate_intersection(other)?;
        let u = self.estimate_union(other)?;
        Ok(if u > 0.0 {
            (i / u).clamp(0.0, 1.0)
        } else {
            0.0
        })
    }

    pub(crate) fn check_compatible(&self, other: &Self) -> Result<()> {
        if self.blocks != other.blocks || self.k != other.k || self.layout != other.layout {
            return Err(shape_mismatch(
                format!("blocks={} k={} {}", self.blocks, self.k, self.layout.name()),
                format!(
                    "blocks={} k={} {}",
                    other.blocks,
                    other.k,
                    other.layout.name()
                ),
            ));
        }
        self.core.check_hasher(&other.core)
    }
}

fn empty_words() -> Words {
    Words::zeroed(0, u64::MAX).unwrap_or_else(|_| unreachable!("zero words always allocate"))
}

impl Filter for BlockedBloomFilter {
    #[inline]
    fn hasher(&self) -> &KeyHasher {
        &self.core.hasher
    }

    #[inline]
    fn insert<K: Key + ?Sized>(&mut self, key: &K) -> bool {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `write` names a fused path only on a CPU with AVX2 (`Fused::of`), the only
        // feature the fused paths need, and only when the words are owned (`for_writes`).
        if let Some(new) = unsafe { self.insert_avx2(key) } {
            return new;
        }
        let h = self.core.hasher.hash(key);
        let new = self.insert_hashed(h);
        // the insert made mapped words owned: later inserts can take the fused path
        self.write = self.read;
        new
    }

    #[inline]
    fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `insert`: `read` names a fused path only on a CPU with AVX2.
        if let Some(hit) = unsafe { self.contains_avx2(key) } {
            return hit;
        }
        self.contains_hashed(self.core.hasher.hash(key))
    }

    #[inline]
    fn insert_hashed(&mut self, h: Hashed) -> bool {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `insert`: `write` names a fused path only on a CPU with its kernel's
        // features, and only when the words are owned.
        if let Some(new) = unsafe { self.insert_hashed_fused(h) } {
            return new;
        }
        let (at, half) = place(h, self.blocks, self.layout);
        let new =
            Block::at_mut(self.core.words.as_mut_slice(), at).insert(h, self.k, self.layout, half);
        self.core.items = self.core.items.saturating_add(u64::from(new));
        // the insert made mapped words owned: later inserts can take the fused path
        self.write = self.read;
        new
    }

    #[inline]
    fn contains_hashed(&self, h: Hashed) -> bool {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `contains`.
        if let Some(hit) = unsafe { self.contains_hashed_fused(h) } {
            return hit;
        }
        self.probe(self.as_words(), h)
    }

    fn len(&self) -> u64 {
        self.core.items
    }
}

/// Refuse to halve a filter of `blocks` blocks unless the count is even and at least 2.
fn fold_check(blocks: u64) -> Result<()> {
    if blocks < 2 || !blocks.is_multiple_of(2) {
        return Err(invalid(
            "bits",
            format!(
                "cannot halve a filter of {blocks} blocks: folding ORs adjacent block pairs \
                 (2i, 2i+1), which needs an even block count ≥ 2"
            ),
        ));
    }
    Ok(())
}

impl Merge for BlockedBloomFilter {
    fn union_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        self.core.union(&other.core)
    }

    fn intersect_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        self.core.intersect(&other.core, self.bit_len(), self.k)
    }
}

impl Stats for BlockedBloomFilter {
    fn bit_len(&self) -> u64 {
        self.blocks * BLOCK_BITS
    }
    fn count_ones(&self) -> u64 {
        store::count_ones(self.as_words())
    }
    fn hash_count(&self) -> u32 {
        self.k
    }
    /// The exact rate of the current contents: the mean over blocks of the probability that a
    /// random key's bits are all set: `(ones_b / 512)^k` for the positions layout,
    /// `Π_j ones_bj / 64` over the eight words for the sectors layout.
    fn current_fpr(&self) -> f64 {
        FillPass::new(self).finish(self).current_fpr
    }
    fn capacity(&self) -> u64 {
        self.core.capacity
    }
    fn target_fpr(&self) -> f64 {
        self.core.target_fpr
    }
}

impl<K: Key> Extend<K> for BlockedBloomFilter {
    /// Inserts through the pipeline of
    /// [`insert_pipelined`](BlockedBloomFilter::insert_pipelined); the result is identical to
    /// inserting the keys one by one.
    fn extend<I: IntoIterator<Item = K>>(&mut self, iter: I) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `write` names a fused path only on a CPU with its kernel's features
        // (`Fused::of`), and only when the words are owned (`for_writes`).
        unsafe {
            self.extend_fused(iter.into_iter())
        };
        #[cfg(not(target_arch = "x86_64"))]
        {
            let hasher = self.core.hasher;
            self.insert_pipelined_portable(iter.into_iter().map(|k| hasher.hash(&k)));
        }
    }
}

impl BlockedBloomFilter {
    /// Insert a stream of pre-hashed keys through the same software pipeline as the batched
    /// queries: each key's block is prefetched [`BATCH_AHEAD`](BlockedBloomFilter::BATCH_AHEAD) keys before it is inserted, so
    /// consecutive cache misses overlap. The result is identical to inserting them one by one.
    pub fn insert_pipelined(&mut self, hashes: impl IntoIterator<Item = Hashed>) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `extend`.
        unsafe {
            self.insert_pipelined_fused(hashes.into_iter())
        };
        #[cfg(not(target_arch = "x86_64"))]
        self.insert_pipelined_portable(hashes.into_iter());
    }

    /// The portable loop of [`insert_pipelined`](Self::insert_pipelined).
    fn insert_pipelined_portable(&mut self, hashes: impl Iterator<Item = Hashed>) {
        let mut pipe = Pipeline::<Hashed, BATCH_AHEAD>::default();
        for h in hashes {
            self.prefetch_hashed(h);
            if let Some(due) = pipe.push(h) {
                self.insert_hashed(due);
            }
        }
        for due in pipe.drain() {
            self.insert_hashed(due);
        }
    }
}

impl BlockedBloomFilter {
    /// A filter holding `keys`, sized for exactly that many keys (at least 1) at rate `fpr`,
    /// with the default hasher: the fallible form of `collect()`. Collects the keys first,
    /// then sizes; an error (invalid `fpr`, a size over the memory
    /// limit) is returned instead of a panic.
    pub fn try_from_keys<K: Key>(keys: impl IntoIterator<Item = K>, fpr: f64) -> Result<Self> {
        crate::params::check_fpr(fpr)?;
        // the keys are kept, not their hashes: which hash the filter uses follows from the
        // layout its size picks (xxh3-64 for the salted layout, xxh3-128 for the others)
        let keys: Vec<K> = keys.into_iter().collect();
        let mut f = Self::try_new((keys.len() as u64).max(1), fpr)?;
        for k in &keys {
            f.insert(k);
        }
        Ok(f)
    }
}

impl<K: Key> FromIterator<K> for BlockedBloomFilter {
    /// Collects the keys' hashes, then sizes the filter for exactly that many keys at a 1%
    /// false-positive rate.
    ///
    /// # Panics
    /// When the filter cannot be made: a size over the memory limit
    /// ([`crate::tuning::max_bytes`]) or an allocation failure. Use
    /// [`BlockedBloomFilter::try_from_keys`] to get an error instead.
    fn from_iter<I: IntoIterator<Item = K>>(iter: I) -> Self {
        Self::try_from_keys(iter, 0.01).unwrap_or_else(|e| {
            panic!("cannot size a filter for the collected keys: {e} (use try_from_keys)")
        })
    }
}

impl BlockedBloomFilter {
    /// The word storage (for composite structures' payloads).
    pub(crate) fn words_ref(&self) -> &Words {
        debug_assert_eq!(self.layout, BlockLayout::Positions, "see from_parts");
        &self.core.words
    }

    /// The word storage in either layout, for a composite payload that records each
    /// sub-filter's layout itself (the scalable filter's layouts trailer).
    pub(crate) fn words_any_layout(&self) -> &Words {
        &self.core.words
    }

    /// Rebuild from stored parts (for composite structures), validating the shape, in the
    /// positions layout (the one composite builders force); a payload that records another
    /// layout applies it with [`BlockedBloomFilter::in_layout`].
    pub(crate) fn from_parts(
        blocks: u64,
        k: u32,
        hasher: KeyHasher,
        words: Words,
        items: u64,
        capacity: u64,
        target_fpr: f64,
    ) -> Result<Self> {
        if blocks == 0
            || k == 0
            || k > BLOCKED_MAX_K
            || words.len() as u64 != blocks * BLOCK_WORDS as u64
        {
            return Err(crate::error::inconsistent(format!(
                "blocked shape blocks={blocks} k={k}"
            )));
        }
        if !(target_fpr == 0.0 || (target_fpr > 0.0 && target_fpr < 1.0)) {
            return Err(crate::error::inconsistent("sub-filter rate out of range"));
        }
        Ok(Self {
            core: Core {
                words,
                hasher,
                items,
                capacity,
                target_fpr,
            },
            blocks,
            k,
            layout: BlockLayout::Positions,
            read: Fused::No,
            write: Fused::No,
        })
    }

    /// The same bits read in `layout` (a sub-filter decoded from a composite payload that
    /// records its layout), refused unless the filter has a shape the layout can have
    /// ([`check_layout_shape`]).
    pub(crate) fn in_layout(mut self, layout: BlockLayout) -> Result<Self> {
        check_layout_shape(layout, self.blocks, self.k, &self.core.hasher)?;
        self.layout = layout;
        self.read = Fused::of(layout, &self.core.hasher);
        self.write = self.read.for_writes(&self.core.words);
        Ok(self)
    }
}

/// Whether a blocked filter of `blocks` blocks, `k` bits per key and `hasher` can have
/// `layout` (what a composite payload that records its sub-filters' layouts, or a sharded
/// filter's descriptor, must be checked against before it is trusted): the sectors layout
/// needs k = 8; the salted layout k = 8, at most [`SALTED_MAX_BLOCKS`] blocks (beyond them
/// the block choice would use the bits that place the key inside its block) and one of the
/// hashers a salted filter is made with (xxh3-64, or keyed SipHash-1-3).
pub(crate) fn check_layout_shape(
    layout: BlockLayout,
    blocks: u64,
    k: u32,
    hasher: &KeyHasher,
) -> Result<()> {
    if layout != BlockLayout::Positions && k != SECTOR_K {
        return Err(crate::error::inconsistent(format!(
            "{} layout with k={k} (the layout sets 8 bits)",
            layout.name()
        )));
    }
    if layout == BlockLayout::Salted {
        if blocks > SALTED_MAX_BLOCKS {
            return Err(crate::error::inconsistent(format!(
                "salted layout with {blocks} blocks (it holds at most 2^32)"
            )));
        }
        use crate::hash::HashAlgorithm as A;
        if !matches!(hasher.algorithm(), A::Xxh3_64 | A::SipHash13_128) {
            return Err(crate::error::inconsistent(format!(
                "salted layout hashed with {} (it hashes with xxh3-64 or keyed SipHash)",
                hasher.algorithm().name()
            )));
        }
    }
    Ok(())
}

crate::filter::impl_set_operators!(BlockedBloomFilter);

impl crate::dispatch::SetKind for BlockedBloomFilter {
    const CAPABILITIES: Capabilities = Capabilities {
        insert: true,
        hashed: true,
        merge: true,
        fold: true,
        estimate: true,
        mark_damaged: true,
        ..Capabilities::NONE
    };
    hashed_set_kind!();
    fn kind(&self) -> Kind {
        self.layout().kind()
    }
    fn prefetch_hashed(&self, h: Hashed) {
        BlockedBloomFilter::prefetch_hashed(self, h)
    }
    /// One pass over the words counts the bits set and the rate together.
    fn stats(&self) -> SetStats {
        FillPass::new(self).finish(self)
    }
    fn layout_name(&self) -> Option<&'static str> {
        Some(self.layout().name())
    }
    fn fold(&self) -> Result<Self> {
        BlockedBloomFilter::fold(self)
    }
    fn estimate_overlap(&self, other: &Self) -> Result<(f64, f64)> {
        Ok((
            self.estimate_intersection(other)?,
            self.estimate_union(other)?,
        ))
    }
    fn mark_damaged(&mut self, bytes: std::ops::Range<u64>) -> Result<()> {
        BlockedBloomFilter::mark_damaged(self, bytes)
    }
    fn clear(&mut self) -> Result<()> {
        BlockedBloomFilter::clear(self);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
