//! The blocked Bloom filter, bloomery's fast default: [`BlockedBloomFilter`] (its docs say which
//! paper it follows and when to pick it).

pub(crate) mod lines;

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::dispatch::{hashed_set_kind, SetStats};
use crate::error::{invalid, Result};
use crate::filter::{shape_mismatch, Build, Builder, Core, Filter, Merge, Stats};
use crate::hash::{mix64, reduce, Hashed, Key, KeyHasher};
use crate::io::format::{
    self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::kind::Capabilities;
use crate::params::{self, BLOCKED_MAX_K};
use crate::store::{self, Pipeline, Words};

/// Bits per block (one 64-byte cache line).
pub const BLOCK_BITS: u64 = 512;
const BLOCK_WORDS: usize = 8;
/// How many keys ahead the batched queries hash and prefetch. 32 covers the memory latency of
/// a filter far beyond the caches on a busy machine (at 100M keys: 21 ns/key at 16 ahead,
/// 16 ns at 32 and 64, docs/BENCHMARKS.md); at sizes that fit the caches it makes no difference.
pub const BATCH_AHEAD: usize = 32;

/// Calls `f(p)` for each of the key's k bit positions `p` (0..512) inside its block, in order:
/// position `p` is word `p / 64`, bit `1 << (p % 64)`. This is the one definition of which bits
/// a key sets; [`for_each_bit`], [`block_mask`] and the probes are built on it.
///
/// The first 7 positions are the 9-bit slices of `h.hi` from the low end; each further group of
/// 7 comes from a fixed mix of both halves and the round number.
#[inline(always)]
fn for_each_pos(h: Hashed, k: u32, mut f: impl FnMut(usize)) {
    let mut x = h.hi;
    let mut left = k;
    let mut round = 0u64;
    loop {
        let take = left.min(7);
        for _ in 0..take {
            f((x & 511) as usize);
            x >>= 9;
        }
        left -= take;
        if left == 0 {
            return;
        }
        // 7 more 9-bit positions from both halves and the round number
        round += 1;
        x = mix64(h.hi ^ h.lo.rotate_left(32) ^ round.wrapping_mul(0xD1B5_4A32_D192_ED03));
    }
}

/// [`for_each_pos`] as `f(word, bit mask)`.
#[inline(always)]
fn for_each_bit(h: Hashed, k: u32, mut f: impl FnMut(usize, u64)) {
    for_each_pos(h, k, |p| f(p >> 6, 1u64 << (p & 63)));
}

/// True if all of the key's bits are set in `block`.
///
/// Written as an AND of `word >> p` (bit 0 of the result is the answer) rather than a mask
/// test: with BMI2 each position is then a shift, a load-and-shift (`shrx` with a memory
/// operand) and an AND, which keeps a single query short enough for the CPU to overlap the
/// cache misses of several consecutive queries.
#[inline(always)]
fn test_block(block: &[u64; BLOCK_WORDS], h: Hashed, k: u32) -> bool {
    let mut all = u64::MAX;
    for_each_pos(h, k, |p| all &= block[p >> 6] >> (p & 63));
    all & 1 == 1
}

/// Set the key's bits in `block`; true if any of them was zero (the key is new).
#[inline(always)]
fn set_block(block: &mut [u64; BLOCK_WORDS], h: Hashed, k: u32) -> bool {
    let mut all = u64::MAX;
    for_each_pos(h, k, |p| {
        let w = &mut block[p >> 6];
        all &= *w >> (p & 63);
        *w |= 1u64 << (p & 63);
    });
    all & 1 == 0
}

/// [`test_block`] compiled for BMI2 (`shlx`/`shrx`/`andn`), used when the CPU has it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi1,bmi2")]
fn test_block_bmi2(block: &[u64; BLOCK_WORDS], h: Hashed, k: u32) -> bool {
    test_block(block, h, k)
}

/// [`set_block`] compiled for BMI2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi1,bmi2")]
fn set_block_bmi2(block: &mut [u64; BLOCK_WORDS], h: Hashed, k: u32) -> bool {
    set_block(block, h, k)
}

/// [`test_block`] with run-time dispatch to the BMI2 build (same bits, fewer instructions).
#[inline(always)]
fn probe_block(block: &[u64; BLOCK_WORDS], h: Hashed, k: u32) -> bool {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::bmi2() {
        // SAFETY: the CPU supports BMI1 and BMI2 (`simd::bmi2` checked both with std's cached
        // CPUID test), which is all `test_block_bmi2` requires.
        return unsafe { test_block_bmi2(block, h, k) };
    }
    test_block(block, h, k)
}

/// [`set_block`] with run-time dispatch to the BMI2 build.
#[inline(always)]
fn insert_block(block: &mut [u64; BLOCK_WORDS], h: Hashed, k: u32) -> bool {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::bmi2() {
        // SAFETY: as in `probe_block`: the CPU supports the features the function enables.
        return unsafe { set_block_bmi2(block, h, k) };
    }
    set_block(block, h, k)
}

/// How a key's bits are placed inside its 512-bit block. Both layouts pick the block the same
/// way (multiply-shift of the hash's low half); they differ inside it, and each is its own
/// file kind, so a file always reads back with the layout it was written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BlockLayout {
    /// k positions anywhere in the block from 9-bit slices of the high hash half (any k from
    /// 1 to 32; file kind `blocked`, id 3). The memory-optimal choice at any rate, and the
    /// layout every `blocked` file written before format kind 20 existed uses.
    Positions,
    /// One bit in each of the block's eight 64-bit words ("sectors"): bit `(hi >> 6j) & 63`
    /// of word j, so k = 8 (file kind `blocked-sectors`, id 20). A query is two 256-bit vector
    /// tests with AVX2 (eight shifts and ANDs without), about half the instructions of the
    /// positions layout, which lets the CPU overlap more cache misses. It needs at most ~2%
    /// more memory than the best positions shape between rates of 2·10⁻² and 10⁻³ and more
    /// outside that range; the builder picks it automatically only where it costs at most
    /// `SECTORS_MAX_EXTRA` more memory.
    Sectors,
}

/// The automatic layout choice takes [`BlockLayout::Sectors`] when its block count is at most
/// this factor above the best [`BlockLayout::Positions`] shape.
pub const SECTORS_MAX_EXTRA: f64 = 1.05;

impl BlockLayout {
    /// The file kind of this layout.
    pub fn kind(self) -> Kind {
        match self {
            BlockLayout::Positions => Kind::Blocked,
            BlockLayout::Sectors => Kind::BlockedSectors,
        }
    }

    /// Short name (`positions` / `sectors`).
    pub fn name(self) -> &'static str {
        match self {
            BlockLayout::Positions => "positions",
            BlockLayout::Sectors => "sectors",
        }
    }
}

/// Sectors layout: the bit of word `j` (0..8) for hash `h` is `(h.hi >> 6j) & 63`.
#[inline(always)]
fn sector_shift(h: Hashed, j: usize) -> u64 {
    (h.hi >> (6 * j)) & 63
}

/// True if all eight sector bits of the key are set in `block` (portable version).
#[inline(always)]
fn sector_test(block: &[u64; BLOCK_WORDS], h: Hashed) -> bool {
    let mut all = u64::MAX;
    for (j, w) in block.iter().enumerate() {
        all &= w >> sector_shift(h, j);
    }
    all & 1 == 1
}

/// Set the key's eight sector bits; true if any was zero (portable version).
#[inline(always)]
fn sector_set(block: &mut [u64; BLOCK_WORDS], h: Hashed) -> bool {
    let mut all = u64::MAX;
    for (j, w) in block.iter_mut().enumerate() {
        let s = sector_shift(h, j);
        all &= *w >> s;
        *w |= 1u64 << s;
    }
    all & 1 == 0
}

/// The sectors layout with AVX2: the eight shifts are two `vpsrlvq`, the masks two `vpsllvq`,
/// the test two `vptest` (carry set when every mask bit is set in the block).
#[cfg(target_arch = "x86_64")]
mod sectors_avx2 {
    use super::{Hashed, BLOCK_WORDS};
    use std::arch::x86_64::*;

    /// The two 4-word masks of the key's sector bits.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn masks(h: Hashed) -> (__m256i, __m256i) {
        let x = _mm256_set1_epi64x(h.hi as i64);
        let low6 = _mm256_set1_epi64x(63);
        let one = _mm256_set1_epi64x(1);
        let s0 = _mm256_and_si256(_mm256_srlv_epi64(x, _mm256_setr_epi64x(0, 6, 12, 18)), low6);
        let s1 = _mm256_and_si256(
            _mm256_srlv_epi64(x, _mm256_setr_epi64x(24, 30, 36, 42)),
            low6,
        );
        (_mm256_sllv_epi64(one, s0), _mm256_sllv_epi64(one, s1))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn test(block: &[u64; BLOCK_WORDS], h: Hashed) -> bool {
        let (m0, m1) = masks(h);
        let p = block.as_ptr() as *const __m256i;
        // SAFETY: `block` is 8 readable u64s (64 bytes): `p` and `p + 1` cover them exactly,
        // and the unaligned loads have no alignment requirement.
        let (b0, b1) = unsafe { (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))) };
        (_mm256_testc_si256(b0, m0) & _mm256_testc_si256(b1, m1)) == 1
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn set(block: &mut [u64; BLOCK_WORDS], h: Hashed) -> bool {
        let (m0, m1) = masks(h);
        let p = block.as_mut_ptr() as *mut __m256i;
        // SAFETY: `block` is 8 writable u64s (64 bytes) borrowed exclusively: `p` and `p + 1`
        // cover them exactly, and unaligned loads/stores have no alignment requirement.
        unsafe {
            let (b0, b1) = (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1)));
            let had = _mm256_testc_si256(b0, m0) & _mm256_testc_si256(b1, m1);
            _mm256_storeu_si256(p, _mm256_or_si256(b0, m0));
            _mm256_storeu_si256(p.add(1), _mm256_or_si256(b1, m1));
            had == 0
        }
    }
}

/// [`sector_test`] with run-time dispatch to AVX2 (same answer).
#[inline(always)]
fn sector_probe(block: &[u64; BLOCK_WORDS], h: Hashed) -> bool {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::avx2() {
        // SAFETY: the CPU supports AVX2 (`simd::avx2` checked it), the only feature
        // `sectors_avx2::test` enables.
        return unsafe { sectors_avx2::test(block, h) };
    }
    sector_test(block, h)
}

/// [`sector_set`] with run-time dispatch to AVX2 (same bits).
#[inline(always)]
fn sector_insert(block: &mut [u64; BLOCK_WORDS], h: Hashed) -> bool {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::avx2() {
        // SAFETY: as in `sector_probe`: the CPU supports AVX2.
        return unsafe { sectors_avx2::set(block, h) };
    }
    sector_set(block, h)
}

/// Query a block under either layout.
#[inline(always)]
fn layout_probe(block: &[u64; BLOCK_WORDS], h: Hashed, k: u32, layout: BlockLayout) -> bool {
    match layout {
        BlockLayout::Positions => probe_block(block, h, k),
        BlockLayout::Sectors => sector_probe(block, h),
    }
}

/// Insert into a block under either layout; true if any bit was new.
#[inline(always)]
fn layout_insert(block: &mut [u64; BLOCK_WORDS], h: Hashed, k: u32, layout: BlockLayout) -> bool {
    match layout {
        BlockLayout::Positions => insert_block(block, h, k),
        BlockLayout::Sectors => sector_insert(block, h),
    }
}

/// The 512-bit mask of a key's bits inside its block.
#[inline(always)]
fn block_mask(h: Hashed, k: u32, layout: BlockLayout) -> [u64; BLOCK_WORDS] {
    let mut mask = [0u64; BLOCK_WORDS];
    match layout {
        BlockLayout::Positions => for_each_bit(h, k, |w, bit| mask[w] |= bit),
        BlockLayout::Sectors => {
            for (j, m) in mask.iter_mut().enumerate() {
                *m = 1u64 << sector_shift(h, j);
            }
        }
    }
    mask
}

/// The key's block: words `8b..8b+8` for its block index `b`.
#[inline(always)]
fn block_range(h: Hashed, blocks: u64) -> std::ops::Range<usize> {
    let b = block_index(h, blocks) * BLOCK_WORDS;
    b..b + BLOCK_WORDS
}

/// Index of the key's block among `blocks`.
#[inline(always)]
fn block_index(h: Hashed, blocks: u64) -> usize {
    reduce(h.lo, blocks) as usize
}

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
///
/// Sizing from (n, p) picks sectors when they need at most `SECTORS_MAX_EXTRA` (5%) more
/// memory than the best positions shape, positions otherwise (e.g. at 10% or 10⁻⁵); fixing k or
/// the bits, or calling [`Builder::layout`], decides it explicitly. Keys crowd unevenly into
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
/// ([`AtomicBlockedBloomFilter`]), parallel bulk builds ([`BlockedBloomFilter::par_insert_all`]),
/// batched queries that overlap cache misses ([`BlockedBloomFilter::contains_batch`]), union,
/// intersection, halving and every estimate. Prefer the classic filter only for the textbook
/// formulas, and the split-block filter when Parquet must read the bits.
#[derive(Debug, Clone)]
pub struct BlockedBloomFilter {
    core: Core,
    blocks: u64,
    k: u32,
    layout: BlockLayout,
    /// Single-key queries take the fused AVX2 path ([`sectors_simd`]); decided once, when the
    /// filter is made.
    simd: bool,
    /// Single-key inserts take it too: `simd` and the words are owned (not a read-only map,
    /// which the first insert on the portable path copies; see [`Filter::insert`]).
    simd_write: bool,
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

/// True when single-key operations on a filter of this layout and hasher can take the fused
/// AVX2 path: sectors layout, the default xxh3-128 hasher, and a CPU with AVX2. Deciding this
/// once per filter (instead of testing the CPU feature, the layout and the hash algorithm on
/// every key) keeps a single-key operation short, and on a filter larger than the caches
/// fewer instructions per key let the core overlap more of the keys' cache misses.
fn sectors_simd(layout: BlockLayout, hasher: &KeyHasher) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        layout == BlockLayout::Sectors && hasher.is_xxh3() && crate::simd::avx2()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (layout, hasher);
        false
    }
}

impl Build for BlockedBloomFilter {
    fn build(b: &Builder<Self>) -> Result<Self> {
        let forced = b.layout;
        if forced == Some(BlockLayout::Sectors) && b.hashes.is_some_and(|k| k != SECTOR_K) {
            return Err(invalid(
                "hashes",
                "the sectors layout sets exactly 8 bits per key",
            ));
        }
        let (blocks, k, layout, n, p) = match b.bits {
            Some(0) => return Err(invalid("bits", "must be at least 1")),
            Some(m) => {
                let blocks = m.div_ceil(BLOCK_BITS).max(1);
                let layout = forced.unwrap_or(BlockLayout::Positions);
                let k = match (layout, b.hashes, b.capacity) {
                    (BlockLayout::Sectors, _, _) => SECTOR_K,
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
                store::check_size((params::bits_asymptotic(n, p) / 8.0) as u64, b.max_bytes)?;
                match (b.hashes, forced) {
                    (_, Some(BlockLayout::Sectors)) => (
                        params::sectors_blocks(n, p)?,
                        SECTOR_K,
                        BlockLayout::Sectors,
                        n,
                        p,
                    ),
                    (None, layout) => {
                        let s = params::blocked_shape(n, p, BLOCK_BITS)?;
                        let sectors = if layout.is_none() {
                            params::sectors_blocks(n, p)
                                .ok()
                                .filter(|&sb| sb as f64 <= s.blocks as f64 * SECTORS_MAX_EXTRA)
                        } else {
                            None
                        };
                        match sectors {
                            Some(sb) => (sb, SECTOR_K, BlockLayout::Sectors, n, p),
                            None => (s.blocks, s.k, BlockLayout::Positions, n, p),
                        }
                    }
                    (Some(k), _) => {
                        params::check_hashes(k, BLOCKED_MAX_K)?;
                        let mut blocks = params::blocked_shape(n, p, BLOCK_BITS)?.blocks;
                        let mut model = params::BlockedModel::new(BLOCK_BITS, k);
                        while model.rate(n, blocks) > p {
                            blocks += blocks / 64 + 1;
                            store::check_size(blocks * 64, b.max_bytes)?;
                        }
                        (blocks, k, BlockLayout::Positions, n, p)
                    }
                }
            }
        };
        let mut f = Self::with_layout(blocks, k, layout, b.hasher, b.max_bytes)?;
        f.core.capacity = n;
        f.core.target_fpr = if p > 0.0 && p < 1.0 { p } else { 0.0 };
        Ok(f)
    }
}

/// Bits per key of the sectors layout.
const SECTOR_K: u32 = 8;

impl BlockedBloomFilter {
    /// Bits in one block (one 64-byte cache line).
    pub const BLOCK_BITS: u64 = BLOCK_BITS;
    /// How many keys ahead batched inserts prefetch (the depth of a [`crate::Pipeline`] that
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
        if layout == BlockLayout::Sectors && k != SECTOR_K {
            return Err(invalid(
                "hashes",
                "the sectors layout sets exactly 8 bits per key",
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
            simd: sectors_simd(layout, &hasher),
            simd_write: sectors_simd(layout, &hasher),
        })
    }

    /// How the key's bits are placed in its block.
    pub fn layout(&self) -> BlockLayout {
        self.layout
    }

    /// Number of 512-bit blocks.
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
        if self.simd {
            // SAFETY: `simd` is true only on a CPU with AVX2 (`sectors_simd`), the only
            // feature `pipeline_avx2` enables.
            return unsafe { self.pipeline_avx2(keys, answer) };
        }
        let hasher = self.core.hasher;
        self.pipeline_with(
            keys,
            answer,
            |k| hasher.hash(k),
            |words, h| self.probe(words, h),
        );
    }

    /// The loop of [`pipeline`](Self::pipeline) over a given hash and probe.
    #[inline(always)]
    fn pipeline_with<K: Key>(
        &self,
        keys: &[K],
        mut answer: impl FnMut(usize, bool),
        hash: impl Fn(&K) -> Hashed,
        probe: impl Fn(&[u64], Hashed) -> bool,
    ) {
        let words = self.as_words();
        let mut pipe = Pipeline::<(usize, Hashed), BATCH_AHEAD>::default();
        for (i, key) in keys.iter().enumerate() {
            let h = hash(key);
            store::prefetch(words, block_index(h, self.blocks) * BLOCK_WORDS);
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
        let block: &[u64; BLOCK_WORDS] = words[block_range(h, self.blocks)]
            .try_into()
            .expect("a block is BLOCK_WORDS words");
        layout_probe(block, h, self.k, self.layout)
    }

    /// Hint the CPU to fetch the block of a pre-hashed key ahead of an insert or a query, so
    /// that streaming callers (hash a key, insert it a few keys later) overlap cache misses.
    #[inline]
    pub fn prefetch_hashed(&self, h: Hashed) {
        store::prefetch(self.as_words(), block_index(h, self.blocks) * BLOCK_WORDS);
    }

    /// Insert many keys in parallel (rayon): hashed in parallel, then inserted by
    /// [`par_insert_hashed`](Self::par_insert_hashed) with each thread owning a disjoint region
    /// of blocks. The result is identical to inserting them one by one. Returns the number of
    /// keys that were new.
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
    /// blocks built from the same keys. Requires a power-of-two block count ≥ 2.
    pub fn fold(&self) -> Result<Self> {
        if !self.blocks.is_power_of_two() || self.blocks < 2 {
            return Err(invalid(
                "bits",
                format!(
                    "folding needs a power-of-two block count ≥ 2, have {}",
                    self.blocks
                ),
            ));
        }
        let mut out = Self::with_layout(
            self.blocks / 2,
            self.k,
            self.layout,
            self.core.hasher,
            u64::MAX,
        )?;
        let src = self.as_words();
        for (b, dst) in out
            .core
            .words
            .as_mut_slice()
            .chunks_exact_mut(BLOCK_WORDS)
            .enumerate()
        {
            let (x, y) = (
                &src[2 * b * BLOCK_WORDS..],
                &src[(2 * b + 1) * BLOCK_WORDS..],
            );
            for i in 0..BLOCK_WORDS {
                dst[i] = x[i] | y[i];
            }
        }
        out.core.items = self.core.items;
        out.core.capacity = self.core.capacity;
        out.core.target_fpr = self.core.target_fpr;
        Ok(out)
    }

    /// Mark a damaged byte range as all ones (000 §3); no inserted key is lost.
    pub fn mark_damaged(&mut self, bytes: std::ops::Range<u64>) -> Result<()> {
        self.core.mark_damaged(bytes)
    }

    /// Estimated `|A ∪ B|`.
    pub fn estimate_union(&self, other: &Self) -> Result<f64> {
        self.check_compatible(other)?;
        let ones = store::count_or(self.as_words(), other.as_words());
        Ok(params::estimate_items(self.bit_len(), self.k, ones))
    }

    /// Estimated `|A ∩ B|` by the inner-product formula (002 §2.4), applied to the whole array.
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

    fn check_compatible(&self, other: &Self) -> Result<()> {
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

    /// Share for concurrent inserts through `&self` (atomic words).
    pub fn into_atomic(self) -> AtomicBlockedBloomFilter {
        let words = self.as_words().iter().map(|&w| AtomicU64::new(w)).collect();
        let items = AtomicU64::new(self.core.items);
        let mut shape = self;
        shape.core.words = empty_words();
        AtomicBlockedBloomFilter {
            words,
            items,
            shape,
        }
    }
}

fn empty_words() -> Words {
    Words::zeroed(0, u64::MAX).unwrap_or_else(|_| unreachable!("zero words always allocate"))
}

#[inline(always)]
fn atomic_insert(atoms: &[AtomicU64], h: Hashed, f: &BlockedBloomFilter) -> bool {
    let b = block_index(h, f.blocks) * BLOCK_WORDS;
    let mask = block_mask(h, f.k, f.layout);
    let mut new = false;
    for (i, &m) in mask.iter().enumerate() {
        if m != 0 {
            let prev = atoms[b + i].fetch_or(m, Ordering::Relaxed);
            new |= prev & m != m;
        }
    }
    new
}

/// The fused single-key paths of the sectors layout (see [`sectors_simd`]): hashing, the
/// block index and the two-vector update in one function compiled for AVX2, with the block
/// addressed without a bounds check. Same bits and answers as the portable path (tested).
#[cfg(target_arch = "x86_64")]
impl BlockedBloomFilter {
    /// The key's block, from a slice of exactly `blocks · BLOCK_WORDS` words.
    #[inline(always)]
    fn block_ptr(&self, words: *const u64, h: Hashed) -> *const [u64; BLOCK_WORDS] {
        let start = block_index(h, self.blocks) * BLOCK_WORDS;
        debug_assert!(start + BLOCK_WORDS <= self.core.words.len());
        // SAFETY: `block_index(h, blocks) < blocks` (multiply-shift reduction), and every
        // constructor (`with_layout`, `decode_from`, `from_parts`) makes the words exactly
        // `blocks · BLOCK_WORDS` long, so the block lies inside the allocation `words` points to.
        unsafe { words.add(start).cast() }
    }

    #[target_feature(enable = "avx2")]
    fn insert_avx2<K: Key + ?Sized>(&mut self, key: &K) -> bool {
        let h = self.core.hasher.hash_xxh3(key);
        self.insert_hashed_avx2(h)
    }

    #[target_feature(enable = "avx2")]
    fn contains_avx2<K: Key + ?Sized>(&self, key: &K) -> bool {
        let h = self.core.hasher.hash_xxh3(key);
        let p = self.block_ptr(self.core.words.as_slice().as_ptr(), h);
        // SAFETY: `p` is an in-bounds block of the words (`block_ptr`), borrowed shared.
        sectors_avx2::test(unsafe { &*p }, h)
    }

    /// Insert a pre-hashed key on the fused path (requires `simd_write`); true if a bit was new.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn insert_hashed_avx2(&mut self, h: Hashed) -> bool {
        debug_assert!(!self.core.words.is_mapped());
        let words = self.core.words.owned_mut_ptr();
        let p = self.block_ptr(words, h).cast_mut();
        // SAFETY: `p` is an in-bounds block of the words (`block_ptr`), which are owned and
        // writable (`simd_write` is false while they are a read-only map: `decode_from`), and
        // `&mut self` excludes every other reference to them.
        let new = sectors_avx2::set(unsafe { &mut *p }, h);
        self.core.items += u64::from(new);
        new
    }

    #[target_feature(enable = "avx2")]
    fn insert_pipelined_avx2(&mut self, hashes: impl IntoIterator<Item = Hashed>) {
        // the closure inherits this function's AVX2, which `insert_hashed_avx2` needs
        self.insert_pipelined_with(hashes, |f, h| {
            f.insert_hashed_avx2(h);
        });
    }

    #[target_feature(enable = "avx2")]
    fn pipeline_avx2<K: Key>(&self, keys: &[K], answer: impl FnMut(usize, bool)) {
        let hasher = self.core.hasher;
        self.pipeline_with(
            keys,
            answer,
            |k| hasher.hash_xxh3(k),
            |words, h| {
                let p = self.block_ptr(words.as_ptr(), h);
                // SAFETY: an in-bounds block of the words (`block_ptr`), borrowed shared; the
                // CPU has AVX2 (this function's requirement).
                unsafe { sectors_avx2::test(&*p, h) }
            },
        );
    }
}

impl Filter for BlockedBloomFilter {
    #[inline]
    fn hasher(&self) -> &KeyHasher {
        &self.core.hasher
    }

    #[inline]
    fn insert<K: Key + ?Sized>(&mut self, key: &K) -> bool {
        #[cfg(target_arch = "x86_64")]
        if self.simd_write {
            // SAFETY: `simd_write` is true only on a CPU with AVX2 (`sectors_simd`), the only
            // feature `insert_avx2` enables, and only when the words are owned.
            return unsafe { self.insert_avx2(key) };
        }
        let h = self.core.hasher.hash(key);
        let new = self.insert_hashed(h);
        // the insert made mapped words owned: later inserts can take the fused path
        self.simd_write = self.simd;
        new
    }

    #[inline]
    fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        #[cfg(target_arch = "x86_64")]
        if self.simd {
            // SAFETY: as in `insert`: the CPU has AVX2.
            return unsafe { self.contains_avx2(key) };
        }
        self.contains_hashed(self.core.hasher.hash(key))
    }

    #[inline]
    fn insert_hashed(&mut self, h: Hashed) -> bool {
        let range = block_range(h, self.blocks);
        let block: &mut [u64; BLOCK_WORDS] = (&mut self.core.words.as_mut_slice()[range])
            .try_into()
            .expect("a block is BLOCK_WORDS words");
        let new = layout_insert(block, h, self.k, self.layout);
        self.core.items += u64::from(new);
        new
    }

    #[inline]
    fn contains_hashed(&self, h: Hashed) -> bool {
        self.probe(self.as_words(), h)
    }

    fn len(&self) -> u64 {
        self.core.items
    }
}

impl Merge for BlockedBloomFilter {
    fn union_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        self.core.union(&other.core)
    }

    fn intersect_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        self.core.intersect(&other.core)
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
        let sum: f64 = self
            .as_words()
            .chunks_exact(BLOCK_WORDS)
            .map(|b| match self.layout {
                BlockLayout::Positions => {
                    let ones: u32 = b.iter().map(|w| w.count_ones()).sum();
                    (f64::from(ones) / BLOCK_BITS as f64).powi(self.k as i32)
                }
                BlockLayout::Sectors => b
                    .iter()
                    .map(|w| f64::from(w.count_ones()) / 64.0)
                    .product::<f64>(),
            })
            .sum();
        sum / self.blocks as f64
    }
    fn capacity(&self) -> u64 {
        self.core.capacity
    }
    fn target_fpr(&self) -> f64 {
        self.core.target_fpr
    }
}

impl Persist for BlockedBloomFilter {
    const KIND: Kind = Kind::Blocked;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let params = ParamWriter::new()
            .u64(self.blocks)
            .u32(self.k)
            .u32(BLOCK_BITS as u32)
            .finish();
        (
            self.core.header(self.layout.kind(), params),
            Payload::new(vec![&self.core.words]),
        )
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let blocks = r.u64()?;
        let k = r.u32()?;
        let block_bits = r.u32()?;
        r.finish()?;
        let layout = match d.header.kind {
            Kind::BlockedSectors => BlockLayout::Sectors,
            _ => BlockLayout::Positions,
        };
        if blocks == 0
            || k == 0
            || k > BLOCKED_MAX_K
            || u64::from(block_bits) != BLOCK_BITS
            || (layout == BlockLayout::Sectors && k != SECTOR_K)
        {
            return Err(crate::error::inconsistent(format!(
                "blocked shape blocks={blocks} k={k} block_bits={block_bits} layout={}",
                layout.name()
            )));
        }
        let words = blocks
            .checked_mul(BLOCK_WORDS as u64)
            .and_then(|w| usize::try_from(w).ok())
            .ok_or_else(|| crate::error::inconsistent("too many blocks"))?;
        format::check_payload(d, words)?;
        let core = Core::from_header(&d.header, src.words(d.payload_offset, words, limit)?);
        let simd = sectors_simd(layout, &core.hasher);
        let simd_write = simd && !core.words.is_mapped();
        Ok(Self {
            core,
            blocks,
            k,
            layout,
            simd,
            simd_write,
        })
    }
}

impl<K: Key> Extend<K> for BlockedBloomFilter {
    /// Inserts through [`insert_pipelined`](BlockedBloomFilter::insert_pipelined); the result
    /// is identical to inserting the keys one by one.
    fn extend<I: IntoIterator<Item = K>>(&mut self, iter: I) {
        let hasher = self.core.hasher;
        self.insert_pipelined(iter.into_iter().map(|k| hasher.hash(&k)));
    }
}

impl BlockedBloomFilter {
    /// Insert a stream of pre-hashed keys through the same software pipeline as the batched
    /// queries: each key's block is prefetched [`BATCH_AHEAD`](BlockedBloomFilter::BATCH_AHEAD) keys before it is inserted, so
    /// consecutive cache misses overlap. The result is identical to inserting them one by one.
    pub fn insert_pipelined(&mut self, hashes: impl IntoIterator<Item = Hashed>) {
        #[cfg(target_arch = "x86_64")]
        if self.simd_write {
            // SAFETY: `simd_write` is true only on a CPU with AVX2 (`sectors_simd`), the only
            // feature `insert_pipelined_avx2` enables, and only when the words are owned.
            return unsafe { self.insert_pipelined_avx2(hashes) };
        }
        self.insert_pipelined_with(hashes, |f, h| {
            f.insert_hashed(h);
        });
    }

    /// The loop of [`insert_pipelined`](Self::insert_pipelined) over a given insert.
    #[inline(always)]
    fn insert_pipelined_with(
        &mut self,
        hashes: impl IntoIterator<Item = Hashed>,
        insert: impl Fn(&mut Self, Hashed),
    ) {
        let mut pipe = Pipeline::<Hashed, BATCH_AHEAD>::default();
        for h in hashes {
            self.prefetch_hashed(h);
            if let Some(due) = pipe.push(h) {
                insert(self, due);
            }
        }
        for due in pipe.drain() {
            insert(self, due);
        }
    }
}

impl<K: Key> FromIterator<K> for BlockedBloomFilter {
    /// Collects the keys' hashes, then sizes the filter for exactly that many keys at a 1%
    /// false-positive rate.
    fn from_iter<I: IntoIterator<Item = K>>(iter: I) -> Self {
        let hasher = KeyHasher::new();
        let hashes: Vec<Hashed> = iter.into_iter().map(|k| hasher.hash(&k)).collect();
        let mut f = Self::try_new((hashes.len() as u64).max(1), 0.01)
            .unwrap_or_else(|e| panic!("cannot size a filter for {} keys: {e}", hashes.len()));
        for h in hashes {
            f.insert_hashed(h);
        }
        f
    }
}

/// A blocked filter that many threads insert into through `&self` (lock-free atomic ORs).
/// Convert with [`BlockedBloomFilter::into_atomic`] and back with
/// [`AtomicBlockedBloomFilter::into_filter`].
#[derive(Debug)]
pub struct AtomicBlockedBloomFilter {
    words: Box<[AtomicU64]>,
    items: AtomicU64,
    /// Shape and hasher (its own words are empty).
    shape: BlockedBloomFilter,
}

impl AtomicBlockedBloomFilter {
    /// Sized for `n` items at rate `p`.
    pub fn try_new(n: u64, p: f64) -> Result<Self> {
        Ok(BlockedBloomFilter::try_new(n, p)?.into_atomic())
    }

    /// Insert from any thread.
    #[inline]
    pub fn insert<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.insert_hashed(self.shape.core.hasher.hash(key))
    }

    /// Insert a pre-hashed key from any thread.
    #[inline]
    pub fn insert_hashed(&self, h: Hashed) -> bool {
        let new = atomic_insert(&self.words, h, &self.shape);
        if new {
            self.items.fetch_add(1, Ordering::Relaxed);
        }
        new
    }

    /// Query from any thread.
    #[inline]
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hashed(self.shape.core.hasher.hash(key))
    }

    /// Query a pre-hashed key.
    #[inline]
    pub fn contains_hashed(&self, h: Hashed) -> bool {
        let b = block_index(h, self.shape.blocks) * BLOCK_WORDS;
        let mask = block_mask(h, self.shape.k, self.shape.layout);
        mask.iter()
            .enumerate()
            .all(|(i, &m)| m == 0 || self.words[b + i].load(Ordering::Relaxed) & m == m)
    }

    /// The hasher.
    pub fn hasher(&self) -> &KeyHasher {
        &self.shape.core.hasher
    }

    /// Items inserted so far.
    pub fn len(&self) -> u64 {
        self.items.load(Ordering::Relaxed)
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Back to a plain filter (to save, merge or query without atomics).
    pub fn into_filter(self) -> BlockedBloomFilter {
        let mut f = self.shape;
        let mut w = Words::zeroed(self.words.len(), u64::MAX)
            .unwrap_or_else(|_| std::alloc::handle_alloc_error(std::alloc::Layout::new::<u64>()));
        for (d, s) in w.as_mut_slice().iter_mut().zip(self.words.iter()) {
            *d = s.load(Ordering::Relaxed);
        }
        f.core.words = w;
        f.core.items = self.items.load(Ordering::Relaxed);
        f
    }
}

impl BlockedBloomFilter {
    /// The word storage (for composite structures' payloads).
    pub(crate) fn words_ref(&self) -> &Words {
        debug_assert_eq!(self.layout, BlockLayout::Positions, "see from_parts");
        &self.core.words
    }

    /// Rebuild from stored parts (for composite structures), validating the shape. Composite
    /// payloads hold positions-layout sub-filters only (their builders force
    /// [`BlockLayout::Positions`]), so the layout is not stored.
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
            simd: false,
            simd_write: false,
        })
    }
}

impl BlockedBloomFilter {
    /// Insert many pre-hashed keys using every thread of the current rayon pool, with plain
    /// (non-atomic) writes: the blocks are split into disjoint regions, the hashes are bucketed
    /// by region in parallel, then each region is filled by one thread. No atomic
    /// read-modify-write is needed (those serialise memory accesses and would cost more than
    /// they save), so this scales with cores. The result is the same filter as inserting the
    /// keys one by one; returns the number of keys that were new.
    pub fn par_insert_hashed(&mut self, hashes: &[Hashed]) -> u64 {
        let threads = rayon::current_num_threads().max(1);
        if threads == 1 || hashes.len() < 4096 {
            let before = self.core.items;
            self.insert_pipelined(hashes.iter().copied());
            return self.core.items - before;
        }
        let regions = self.insert_regions(threads * 4);
        // bucket: each chunk of hashes sorted into per-region lists, in parallel
        let chunk = hashes.len().div_ceil(threads * 4).max(1);
        let buckets: Vec<Vec<Vec<Hashed>>> = hashes
            .par_chunks(chunk)
            .map(|c| {
                let mut out =
                    vec![Vec::with_capacity(c.len() / regions.count() + 16); regions.count()];
                for h in c {
                    out[regions.region_of(*h)].push(*h);
                }
                out
            })
            .collect();
        self.par_insert_bucketed(&regions, &buckets)
    }

    /// A split of this filter's blocks into about `n` (at least 1) contiguous regions, for
    /// callers that bucket their hashes by region as they compute them and then insert them
    /// with [`par_insert_bucketed`](Self::par_insert_bucketed).
    pub fn insert_regions(&self, n: usize) -> InsertRegions {
        let per_region = self.blocks.div_ceil(n.max(1) as u64).max(1);
        // floor(b / d) = (b · ceil(2^64 / d)) >> 64 exactly when b and d are below 2^32
        // (Lemire, Kaser, Kurz 2019), so region_of needs no division on such filters
        let magic = if self.blocks < 1 << 32 && per_region > 1 {
            u64::MAX / per_region + 1
        } else {
            0
        };
        InsertRegions {
            blocks: self.blocks,
            per_region,
            magic,
            count: self.blocks.div_ceil(per_region) as usize,
        }
    }

    /// Insert pre-bucketed hashes using every thread of the current rayon pool, with plain
    /// writes: `buckets` is a list of batches, each holding one list per region of `regions`
    /// (from [`insert_regions`](Self::insert_regions)); region `r` is filled by one task with
    /// `buckets[0][r]`, then `buckets[1][r]`, ..., through [`RegionWriter::insert_batch`]. A
    /// key's bits all lie in its block, so when the batches are in input order the filter and
    /// its item count equal those of inserting the keys one by one. A hash found in the wrong
    /// region's list (or a region split made for another shape) is still inserted, after the
    /// parallel fill. Returns the number of keys that were new.
    pub fn par_insert_bucketed<B: AsRef<[Vec<Hashed>]> + Sync>(
        &mut self,
        regions: &InsertRegions,
        buckets: &[B],
    ) -> u64 {
        let before = self.core.items;
        if regions.blocks != self.blocks {
            // a split for another shape: insert in order, one thread
            let all = buckets
                .iter()
                .flat_map(|b| b.as_ref().iter().flatten().copied());
            self.insert_pipelined(all);
            return self.core.items - before;
        }
        self.fill_regions(regions, |writers| {
            writers.par_iter_mut().enumerate().for_each(|(r, w)| {
                for b in buckets {
                    if let Some(hashes) = b.as_ref().get(r) {
                        w.insert_batch(hashes);
                    }
                }
            })
        });
        // lists beyond the region count
        let extra = buckets
            .iter()
            .flat_map(|b| b.as_ref().iter().skip(regions.count).flatten().copied());
        self.insert_pipelined(extra);
        self.core.items - before
    }

    /// Fill the filter from several threads without atomics or locks: `fill` gets one
    /// [`RegionWriter`] per region of `regions` (from [`insert_regions`](Self::insert_regions);
    /// a split made for another shape is remade with the same count), each owning its
    /// region's blocks, so each can be moved to its own thread (scoped threads, rayon). When
    /// `fill` returns, the keys the writers counted as new are added to the item count, and
    /// the hashes a writer was given for blocks outside its region are inserted, writer after
    /// writer, in the order they were given. Keys given to the writer of their region in
    /// input order give the filter *and* the item count of inserting them one by one.
    pub fn fill_regions<R>(
        &mut self,
        regions: &InsertRegions,
        fill: impl FnOnce(&mut [RegionWriter<'_>]) -> R,
    ) -> R {
        let regions = if regions.blocks == self.blocks {
            *regions
        } else {
            self.insert_regions(regions.count)
        };
        let (blocks, k, layout) = (self.blocks, self.k, self.layout);
        let region_words = regions.per_region as usize * BLOCK_WORDS;
        let mut writers: Vec<RegionWriter<'_>> = self
            .core
            .words
            .as_mut_slice()
            .chunks_mut(region_words)
            .enumerate()
            .map(|(r, words)| RegionWriter {
                words,
                base: r * region_words,
                blocks,
                k,
                layout,
                new: 0,
                stray: Vec::new(),
            })
            .collect();
        let out = fill(&mut writers);
        let new: u64 = writers.iter().map(|w| w.new).sum();
        let stray: Vec<Hashed> = writers.into_iter().flat_map(|w| w.stray).collect();
        self.core.items += new;
        self.insert_pipelined(stray);
        out
    }
}

/// One region of a [`BlockedBloomFilter`]'s blocks, written by one thread during
/// [`BlockedBloomFilter::fill_regions`] (plain stores: no other writer touches these blocks).
#[derive(Debug)]
pub struct RegionWriter<'a> {
    words: &'a mut [u64],
    /// The index, in the whole filter, of the region's first word.
    base: usize,
    blocks: u64,
    k: u32,
    layout: BlockLayout,
    /// Keys that set at least one new bit.
    new: u64,
    /// Hashes of blocks outside the region, inserted after the fill.
    stray: Vec<Hashed>,
}

impl RegionWriter<'_> {
    /// Insert pre-hashed keys, in order, through the prefetching pipeline of
    /// [`BlockedBloomFilter::insert_pipelined`]. A hash whose block lies outside this region
    /// is kept and inserted when the fill ends.
    pub fn insert_batch(&mut self, hashes: &[Hashed]) {
        // (first word of the block within the region, hash)
        let mut pipe = Pipeline::<(usize, Hashed), BATCH_AHEAD>::default();
        for &h in hashes {
            let at = (block_index(h, self.blocks) * BLOCK_WORDS).wrapping_sub(self.base);
            if at >= self.words.len() {
                self.stray.push(h);
                continue;
            }
            store::prefetch(self.words, at);
            if let Some((at, h)) = pipe.push((at, h)) {
                self.put(at, h);
            }
        }
        for (at, h) in pipe.drain() {
            self.put(at, h);
        }
    }

    /// Insert one hash whose block starts at word `at` of this region.
    #[inline(always)]
    fn put(&mut self, at: usize, h: Hashed) {
        let block: &mut [u64; BLOCK_WORDS] = (&mut self.words[at..at + BLOCK_WORDS])
            .try_into()
            .expect("a block is BLOCK_WORDS words");
        self.new += u64::from(layout_insert(block, h, self.k, self.layout));
    }
}

/// A split of a blocked filter's blocks into contiguous regions (see
/// [`BlockedBloomFilter::insert_regions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InsertRegions {
    blocks: u64,
    per_region: u64,
    /// `ceil(2^64 / per_region)` when every block index and `per_region` fit 32 bits and
    /// `per_region > 1`; 0 otherwise (then `region_of` divides).
    magic: u64,
    count: usize,
}

impl InsertRegions {
    /// The number of regions.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The region of a hashed key's block.
    #[inline(always)]
    pub fn region_of(&self, h: Hashed) -> usize {
        let b = block_index(h, self.blocks) as u64;
        if self.magic != 0 {
            ((u128::from(b) * u128::from(self.magic)) >> 64) as usize
        } else {
            (b / self.per_region) as usize
        }
    }
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
    fn stats(&self) -> SetStats {
        SetStats::of(self)
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
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_roundtrip_and_batch() {
        let mut f = BlockedBloomFilter::try_new(5000, 0.01).unwrap();
        let keys: Vec<u64> = (0..5000).collect();
        f.extend(keys.iter().copied());
        assert!(keys.iter().all(|k| f.contains(k)));
        let mut out = vec![false; keys.len()];
        f.contains_batch(&keys, &mut out).unwrap();
        assert!(out.iter().all(|&b| b));
        assert_eq!(f.count_batch(&keys), keys.len());
        let g = BlockedBloomFilter::from_bytes(&f.to_bytes()).unwrap();
        assert_eq!(f, g);
    }

    /// The mask as the first implementation computed it (one loop, a round counter): the
    /// key→bits mapping must never drift from it.
    fn reference_mask(h: Hashed, k: u32) -> [u64; BLOCK_WORDS] {
        let mut mask = [0u64; BLOCK_WORDS];
        let mut x = h.hi;
        let mut left = 7;
        let mut round = 0u64;
        for _ in 0..k {
            if left == 0 {
                round += 1;
                x = mix64(h.hi ^ h.lo.rotate_left(32) ^ round.wrapping_mul(0xD1B5_4A32_D192_ED03));
                left = 7;
            }
            let p = (x & 511) as usize;
            x >>= 9;
            left -= 1;
            mask[p >> 6] |= 1u64 << (p & 63);
        }
        mask
    }

    #[test]
    fn probes_match_the_reference_mapping() {
        let hasher = KeyHasher::new();
        for k in 1..=BLOCKED_MAX_K {
            let mut f = BlockedBloomFilter::try_with_shape(97, k).unwrap();
            for i in 0..300u64 {
                let h = hasher.hash(&i);
                assert_eq!(
                    block_mask(h, k, BlockLayout::Positions),
                    reference_mask(h, k),
                    "k={k} key={i}"
                );
                let mut g = BlockedBloomFilter::try_with_shape(97, k).unwrap();
                g.insert_hashed(h);
                let b = block_index(h, 97) * BLOCK_WORDS;
                let mut want = vec![0u64; 97 * BLOCK_WORDS];
                want[b..b + BLOCK_WORDS].copy_from_slice(&reference_mask(h, k));
                assert_eq!(g.as_words(), &want[..], "k={k} key={i}");
                f.insert_hashed(h);
            }
            let keys: Vec<u64> = (0..300).collect();
            assert_eq!(f.count_batch(&keys), 300);
            assert!((0..300u64).all(|i| f.contains(&i)));
        }
    }

    /// The sectors layout's bits, written out plainly: word j gets bit `(hi >> 6j) & 63`.
    fn reference_sectors(h: Hashed) -> [u64; BLOCK_WORDS] {
        let mut mask = [0u64; BLOCK_WORDS];
        for (j, m) in mask.iter_mut().enumerate() {
            *m = 1u64 << ((h.hi >> (6 * j as u32)) & 63);
        }
        mask
    }

    #[test]
    fn sectors_match_the_reference_mapping_and_simd_equals_scalar() {
        let hasher = KeyHasher::new();
        let mut f = BlockedBloomFilter::try_with_sectors(97).unwrap();
        assert_eq!(f.layout(), BlockLayout::Sectors);
        assert_eq!(f.hashes(), 8);
        let mut rng = 0x1234_5678_9ABC_DEF0u64;
        for i in 0..2000u64 {
            let h = hasher.hash(&i);
            assert_eq!(block_mask(h, 8, BlockLayout::Sectors), reference_sectors(h));
            // dispatched (AVX2 where available) and portable versions agree on random blocks
            let mut block = [0u64; BLOCK_WORDS];
            for w in block.iter_mut() {
                rng = mix64(rng);
                *w = rng | mix64(rng ^ 1); // dense: ~75% ones, so both answers occur
            }
            assert_eq!(sector_probe(&block, h), sector_test(&block, h), "key={i}");
            let (mut a, mut b) = (block, block);
            assert_eq!(sector_insert(&mut a, h), sector_set(&mut b, h), "key={i}");
            assert_eq!(a, b);
            assert!(sector_probe(&a, h));
            if i < 300 {
                let mut g = BlockedBloomFilter::try_with_sectors(97).unwrap();
                g.insert_hashed(h);
                let at = block_index(h, 97) * BLOCK_WORDS;
                let mut want = vec![0u64; 97 * BLOCK_WORDS];
                want[at..at + BLOCK_WORDS].copy_from_slice(&reference_sectors(h));
                assert_eq!(g.as_words(), &want[..], "key={i}");
                f.insert_hashed(h);
            }
        }
        let keys: Vec<u64> = (0..300).collect();
        assert_eq!(f.count_batch(&keys), 300);
        assert!((0..300u64).all(|i| f.contains(&i)));
        let g = BlockedBloomFilter::from_bytes(&f.to_bytes()).unwrap();
        assert_eq!(g.layout(), BlockLayout::Sectors);
        assert_eq!(f, g);
    }

    /// A sectors file (kind 20) whose stored k is not 8 is refused on load, with an error, not
    /// read as something else; the same k in a positions file (kind 3) is a valid shape.
    /// The fused AVX2 single-key and batched paths (taken on CPUs with AVX2 for sectors
    /// filters with the default hasher) set the same bits and give the same answers as the
    /// portable per-hash path, including on a memory-mapped filter, whose first insert takes the
    /// portable path (copying the map) and later ones the fused path.
    #[test]
    fn fused_paths_equal_portable_paths() {
        let keyed = KeyHasher::keyed().unwrap();
        for hasher in [KeyHasher::new(), KeyHasher::with_seed(77), keyed] {
            let build = || {
                BlockedBloomFilter::builder()
                    .capacity(4000)
                    .fpr(0.01)
                    .hasher(hasher)
                    .try_build()
                    .unwrap()
            };
            let (mut fused, mut portable, mut extended) = (build(), build(), build());
            assert_eq!(fused.layout(), BlockLayout::Sectors);
            #[cfg(target_arch = "x86_64")]
            assert_eq!(
                fused.simd,
                hasher.algorithm() == crate::HashAlgorithm::Xxh3_128 && crate::simd::avx2()
            );
            let keys: Vec<String> = (0..6000u32).map(|i| format!("key-{i}")).collect();
            for k in &keys[..3000] {
                let h = hasher.hash(k);
                assert_eq!(fused.insert(k), portable.insert_hashed(h), "{k}");
            }
            extended.extend(keys[..3000].iter());
            assert_eq!(fused, portable);
            assert_eq!(extended, portable);
            assert_eq!(fused.len(), portable.len());

            // a mapped copy: first insert copies the map, then everything matches
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("f.bloom");
            fused.save(&path).unwrap();
            let mut mapped =
                BlockedBloomFilter::open_mmap(&path, format::Verify::Checksum).unwrap();
            assert!(mapped.is_mapped());
            assert!(!mapped.simd_write);
            for k in &keys[3000..3600] {
                let h = hasher.hash(k);
                let new = portable.insert_hashed(h);
                assert_eq!(fused.insert(k), new, "{k}");
                assert_eq!(mapped.insert(k), new, "{k}");
            }
            assert!(!mapped.is_mapped());
            assert_eq!(mapped.simd_write, fused.simd_write);
            assert_eq!(mapped, portable);
            assert_eq!(fused, portable);

            // queries: present, absent and false-positive keys all agree across the paths
            let probe: Vec<String> = (0..20_000u32).map(|i| format!("key-{i}")).collect();
            let mut batch = vec![false; probe.len()];
            fused.contains_batch(&probe, &mut batch).unwrap();
            let mut hits = 0;
            for (k, &b) in probe.iter().zip(&batch) {
                let want = portable.contains_hashed(hasher.hash(k));
                assert_eq!(fused.contains(k), want, "{k}");
                assert_eq!(b, want, "{k}");
                hits += usize::from(want);
            }
            assert_eq!(fused.count_batch(&probe), hits);
            // every inserted key, plus false positives among the 16,400 absent ones (~1%)
            assert!((3600..3600 + 16_400 / 20).contains(&hits), "hits {hits}");
        }
    }

    #[test]
    fn sectors_file_with_another_k_is_refused() {
        // the kind-specific parameters start right after the 72-byte fixed header:
        // blocks (u64), then k (u32)
        let with_k = |bytes: &[u8], k: u32| {
            let mut b = bytes.to_vec();
            b[80..84].copy_from_slice(&k.to_le_bytes());
            let body = b.len() - 8;
            let sum = xxhash_rust::xxh3::xxh3_64(&b[..body]);
            b[body..].copy_from_slice(&sum.to_le_bytes());
            b
        };
        let sectors = BlockedBloomFilter::try_with_sectors(4).unwrap().to_bytes();
        assert!(BlockedBloomFilter::from_bytes(&with_k(&sectors, 8)).is_ok());
        let e = BlockedBloomFilter::from_bytes(&with_k(&sectors, 7)).unwrap_err();
        assert!(e.to_string().contains("layout=sectors"), "{e}");
        assert!(crate::AnyFilter::from_bytes(&with_k(&sectors, 7)).is_err());
        let positions = BlockedBloomFilter::try_with_shape(4, 8).unwrap().to_bytes();
        let p7 = BlockedBloomFilter::from_bytes(&with_k(&positions, 7)).unwrap();
        assert_eq!((p7.layout(), p7.hashes()), (BlockLayout::Positions, 7));
    }

    #[test]
    fn automatic_layout_choice() {
        // sectors where they cost at most SECTORS_MAX_EXTRA more memory ...
        let f = BlockedBloomFilter::try_new(100_000, 0.01).unwrap();
        assert_eq!(f.layout(), BlockLayout::Sectors);
        let best = params::blocked_shape(100_000, 0.01, BLOCK_BITS).unwrap();
        assert!(f.blocks() as f64 <= best.blocks as f64 * SECTORS_MAX_EXTRA);
        // ... positions where they would cost more (10%: k = 8 is far from optimal) ...
        let f = BlockedBloomFilter::try_new(100_000, 0.1).unwrap();
        assert_eq!(f.layout(), BlockLayout::Positions);
        // ... and whenever the caller fixes k or the bits, or forces a layout
        let f = BlockedBloomFilter::builder()
            .capacity(100_000)
            .fpr(0.01)
            .hashes(6)
            .try_build();
        assert_eq!(f.unwrap().layout(), BlockLayout::Positions);
        let f = BlockedBloomFilter::builder()
            .bits(1 << 20)
            .hashes(6)
            .try_build()
            .unwrap();
        assert_eq!(f.layout(), BlockLayout::Positions);
        let f = BlockedBloomFilter::builder()
            .capacity(100_000)
            .fpr(0.1)
            .layout(BlockLayout::Sectors)
            .try_build()
            .unwrap();
        assert_eq!(f.layout(), BlockLayout::Sectors);
        assert!(params::fpr_sectors(100_000, f.blocks()) <= 0.1);
        let e = BlockedBloomFilter::builder()
            .capacity(10)
            .fpr(0.1)
            .hashes(3)
            .layout(BlockLayout::Sectors)
            .try_build();
        assert!(e.is_err());
        // the two layouts never merge
        let mut a = BlockedBloomFilter::try_with_sectors(8).unwrap();
        let b = BlockedBloomFilter::try_with_shape(8, 8).unwrap();
        assert!(a.union_with(&b).is_err());
    }

    #[test]
    fn par_insert_hashed_equals_sequential() {
        let hasher = KeyHasher::new();
        let hashes: Vec<Hashed> = (0..60_000u64).map(|i| hasher.hash(&i)).collect();
        for blocks in [1u64, 3, 1000, 1171] {
            let mut a = BlockedBloomFilter::try_with_shape(blocks, 6).unwrap();
            let mut b = a.clone();
            for h in &hashes {
                a.insert_hashed(*h);
            }
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(3)
                .build()
                .unwrap();
            pool.install(|| b.par_insert_hashed(&hashes));
            assert_eq!(a.as_words(), b.as_words(), "blocks={blocks}");
            assert!(b.len() <= 60_000 && b.len() * 10 >= a.len() * 9);
        }
    }

    #[test]
    fn par_insert_bucketed_equals_sequential_items_included() {
        let hasher = KeyHasher::new();
        // duplicates and near-full blocks: the item count depends on the insert order
        let hashes: Vec<Hashed> = (0..40_000u64).map(|i| hasher.hash(&(i % 25_000))).collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        for blocks in [1u64, 3, 200, 1171] {
            let mut a = BlockedBloomFilter::try_with_shape(blocks, 6).unwrap();
            let mut b = a.clone();
            for h in &hashes {
                a.insert_hashed(*h);
            }
            let regions = b.insert_regions(5);
            assert!(regions.count() >= 1 && regions.count() <= 5);
            // three batches in input order, each bucketed by region
            let batches: Vec<Vec<Vec<Hashed>>> = hashes
                .chunks(15_000)
                .map(|c| {
                    let mut out = vec![Vec::new(); regions.count()];
                    for h in c {
                        out[regions.region_of(*h)].push(*h);
                    }
                    out
                })
                .collect();
            let new = pool.install(|| b.par_insert_bucketed(&regions, &batches));
            assert_eq!(a, b, "blocks={blocks}");
            assert_eq!(new, a.len());
        }
    }

    #[test]
    fn region_of_is_the_block_index_divided_by_the_region_size() {
        let hasher = KeyHasher::new();
        let hashes: Vec<Hashed> = (0..20_000u64).map(|i| hasher.hash(&i)).collect();
        // shapes without building filters of those sizes: only `blocks` matters here
        let mut shape = BlockedBloomFilter::try_with_shape(1, 6).unwrap();
        let mut edges = vec![
            Hashed { lo: 0, hi: 0 },
            Hashed {
                lo: u64::MAX,
                hi: 0,
            },
            Hashed { lo: 1 << 63, hi: 0 },
        ];
        edges.extend(hashes);
        for blocks in [
            1u64,
            2,
            3,
            7,
            1000,
            1171,
            65_537,
            (1 << 32) - 1,
            1 << 32,
            u64::MAX / 64,
        ] {
            shape.blocks = blocks;
            for n in [1usize, 2, 3, 4, 7, 8, 13, 64] {
                let r = shape.insert_regions(n);
                assert_eq!(r.magic != 0, blocks < 1 << 32 && r.per_region > 1);
                for &h in &edges {
                    let want = (block_index(h, blocks) as u64 / r.per_region) as usize;
                    assert_eq!(r.region_of(h), want, "blocks={blocks} n={n}");
                    assert!(want < r.count());
                }
            }
        }
    }

    #[test]
    fn par_insert_bucketed_inserts_misplaced_hashes() {
        let hasher = KeyHasher::new();
        let hashes: Vec<Hashed> = (0..5_000u64).map(|i| hasher.hash(&i)).collect();
        let mut a = BlockedBloomFilter::try_with_shape(100, 6).unwrap();
        let mut b = a.clone();
        a.insert_pipelined(hashes.iter().copied());
        // everything in region 0's list, plus lists beyond the region count
        let regions = b.insert_regions(4);
        let batch = vec![
            hashes[..4000].to_vec(),
            vec![],
            vec![],
            vec![],
            hashes[4000..].to_vec(),
        ];
        b.par_insert_bucketed(&regions, &[batch]);
        assert_eq!(a.as_words(), b.as_words());
        // a split made for another shape
        let mut c = BlockedBloomFilter::try_with_shape(100, 6).unwrap();
        let other = BlockedBloomFilter::try_with_shape(7, 6)
            .unwrap()
            .insert_regions(4);
        c.par_insert_bucketed(&other, &[vec![hashes.clone()]]);
        assert_eq!(a, c);
    }

    #[test]
    fn parallel_build_equals_sequential() {
        let keys: Vec<u64> = (0..50_000).collect();
        let mut a = BlockedBloomFilter::try_new(50_000, 0.01).unwrap();
        let mut b = a.clone();
        a.extend(keys.iter().copied());
        b.par_insert_all(&keys);
        assert_eq!(a.as_words(), b.as_words());
    }

    #[test]
    fn atomic_concurrent_inserts() {
        let f = AtomicBlockedBloomFilter::try_new(20_000, 0.01).unwrap();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let f = &f;
                s.spawn(move || {
                    for i in 0..5000u64 {
                        f.insert(&(t * 5000 + i));
                    }
                });
            }
        });
        assert!((0..20_000u64).all(|i| f.contains(&i)));
        let plain = f.into_filter();
        assert!((0..20_000u64).all(|i| plain.contains(&i)));
    }

    #[test]
    fn fold_equals_half() {
        let mut big = BlockedBloomFilter::try_with_shape(64, 6).unwrap();
        let mut half = BlockedBloomFilter::try_with_shape(32, 6).unwrap();
        let mut big_s = BlockedBloomFilter::try_with_sectors(64).unwrap();
        let mut half_s = BlockedBloomFilter::try_with_sectors(32).unwrap();
        for i in 0..500u32 {
            big.insert(&i);
            half.insert(&i);
            big_s.insert(&i);
            half_s.insert(&i);
        }
        assert_eq!(big.fold().unwrap().as_words(), half.as_words());
        assert_eq!(big_s.fold().unwrap(), half_s);
    }
}
