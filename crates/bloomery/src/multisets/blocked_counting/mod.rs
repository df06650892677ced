//! The blocked counting Bloom filter: [`BlockedCountingBloomFilter`] (its docs say which paper it
//! follows and when to pick it).

use crate::counters::{View, ViewMut, MAX_WIDTH};
use crate::error::{inconsistent, invalid, Result};
use crate::filter::{
    shape_mismatch, Build, Builder, Count, Filter, Merge, Remove, RemoveError, Sizing, Stats,
};
use crate::hash::{mix64, reduce, Hashed, Key, KeyHasher};
use crate::io::format::{self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist};
use crate::kind::Capabilities;
use crate::multisets::counter_kind::counting_filter_kind;
use crate::params::{self, BLOCKED_MAX_K};
use crate::store::{self, Pipeline, Words};

/// Bits per line (one 64-byte cache line).
pub const LINE_BITS: u32 = 512;
const LINE_WORDS: usize = 8;

/// The default counter width in bits (Broder & Mitzenmacher §2.5).
pub const DEFAULT_COUNTER_WIDTH: u32 = 4;

/// Largest k accepted (that of the blocked filter).
pub const MAX_HASHES: u32 = BLOCKED_MAX_K;

/// How many keys ahead [`BlockedCountingBloomFilter::insert_batch`] hashes and prefetches.
pub const INSERT_AHEAD: usize = 16;

/// Counters per line for counters of `width` bits: `⌊512 / width⌋`.
pub const fn cells_per_line(width: u32) -> u64 {
    (LINE_BITS / width) as u64
}

/// Digits (counter positions) drawn from one 64-bit word for `cells` counters per line:
/// `⌊56 / ⌈log₂ cells⌉⌋`.
const fn digits_per_word(cells: u64) -> u32 {
    56 / (64 - (cells - 1).leading_zeros())
}

/// The 4-bit line: 128 counters, 8 positions per word (constants, so the hot paths fold
/// them into shifts).
const CELLS4: u64 = cells_per_line(4);
const DIGITS4: u32 = digits_per_word(CELLS4);

/// The word whose digits are a key's positions of round `round` ≥ 1 (see the module docs).
#[inline(always)]
fn refresh(h: Hashed, round: u64) -> u64 {
    mix64(h.hi ^ h.lo.rotate_left(32) ^ round.wrapping_mul(0xD1B5_4A32_D192_ED03))
}

/// Iterator over a key's k counter positions inside its line (see the [`BlockedCountingBloomFilter`] docs).
#[derive(Debug, Clone)]
pub struct CellPositions {
    x: u64,
    h: Hashed,
    cells: u64,
    per_word: u32,
    left_in_word: u32,
    left: u32,
    round: u64,
}

impl CellPositions {
    #[inline(always)]
    fn new(h: Hashed, k: u32, cells: u64, per_word: u32) -> Self {
        Self {
            x: h.hi,
            h,
            cells,
            per_word,
            left_in_word: per_word,
            left: k,
            round: 0,
        }
    }
}

impl Iterator for CellPositions {
    type Item = u64;

    #[inline(always)]
    fn next(&mut self) -> Option<u64> {
        if self.left == 0 {
            return None;
        }
        if self.left_in_word == 0 {
            self.round += 1;
            self.x = refresh(self.h, self.round);
            self.left_in_word = self.per_word;
        }
        let wide = u128::from(self.x) * u128::from(self.cells);
        self.x = wide as u64;
        self.left_in_word -= 1;
        self.left -= 1;
        Some((wide >> 64) as u64)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2;
mod nibbles;

/// The blocked counting Bloom filter: a counting filter whose k counters for a key all lie in
/// one 64-byte cache line, so an insert, a count or a remove costs one cache miss instead of k.
///
/// It combines the counting filter of Broder & Mitzenmacher §2.5 (small saturating counters instead of
/// bits, so keys can be removed; see [`counting`](crate::CountingBloomFilter)) with the blocked layout of Putze,
/// Sanders & Singler, "Cache-, Hash- and Space-Efficient Bloom Filters" (2007; see
/// [`blocked`](crate::BlockedBloomFilter)).
///
/// # Layout and mapping (format kind 21, `blocked-counting`)
/// The counters form `blocks` lines of 512 bits (8 words, 64-byte aligned); a line holds
/// `B = ⌊512 / w⌋` counters of w bits (w = 1..=32, default 4: B = 128), counter j of a line at
/// bits `[j·w, j·w + w)` of the line, little-endian as in `counters` (so a counter
/// may straddle two words of its line when w does not divide 64; the `512 - B·w` bits left at
/// the end of a line are always zero). For a key's [`Hashed`] value `h`:
///
/// - its **line** is `(h.lo · blocks) >> 64` (multiply-shift, as in the blocked filter);
/// - its **k counters** inside the line are the base-B digits of the fraction `h.hi / 2⁶⁴`:
///   `x₀ = h.hi`, `cellᵢ = (xᵢ · B) >> 64`, `xᵢ₊₁ = (xᵢ · B) mod 2⁶⁴` — for B a power of two
///   simply consecutive ⌈log₂ B⌉-bit slices of `h.hi` from the top (7-bit slices for 4-bit
///   counters). One 64-bit word gives `G = ⌊56 / ⌈log₂ B⌉⌋` digits (8 for B = 128, so k ≤ 8
///   uses `h.hi` alone); each further group of G starts again from
///   `mix64(h.hi ^ h.lo.rotl(32) ^ r·0xD1B54A32D192ED03)` for round r = 1, 2, … (the refresh
///   of the blocked filter). With `B^G ≤ 2⁵⁶` every tuple of G digits has probability
///   `B^-G` up to a relative error below 2⁻⁸ (exactly, for B a power of two).
///
/// The counters are drawn **with replacement**: a key may hit the same counter twice, which it
/// then increments twice (and a remove decrements twice), exactly as the classic-layout
/// counting filter does. That is the model of [`params::BlockedModel`] with B cells per block
/// (binomial occupancy of the key's line, a Markov chain over the k marked cells, the
/// distinct-draw distribution of k draws from B), so the sizing by (n, p) uses it unchanged
/// with `block_bits = B` and picks the smallest line count (and the best k) that meets the
/// requested rate; `tests/fpr.rs` checks the measured rate against it.
///
/// # Semantics
/// Those of [`crate::CountingBloomFilter`]: counters saturate at `2^w - 1` and a saturated
/// counter is never decremented; a remove is refused with [`RemoveError::NotPresent`] (and
/// changes nothing) when any of the key's counters is zero; the count is the minimum of the
/// key's counters, never below the true count while none of them saturated;
/// [`BlockedCountingBloomFilter::saturated_counters`] reports the saturated ones; union is the
/// counter-wise saturating sum and intersection the counter-wise minimum.
///
/// # Speed
/// With 4-bit counters and k ≤ 16 (the sizing picks k = 6 at p = 1%, 10 at 0.1%) single-key
/// operations take a short fast path on the line: on x86-64 with AVX2 one counter per vector
/// lane (`avx2`: a count is about 80 instructions per key with the hash, fewer than the
/// classic filter's 97 at k = 7), elsewhere an unrolled scalar pass (`nibbles`); the path is
/// chosen once per filter. Other widths and larger k go through the counters' generic views.
/// On a filter larger than the caches an operation costs about what the classic filter's costs
/// (one line instead of k), far less than the classic-layout counting filter's; the batched
/// [`BlockedCountingBloomFilter::insert_batch`] overlaps the misses of 16 keys. Where the
/// classic filter still fits a cache and this one (4× the memory or more) does not, a
/// single-key operation is slower. Measured ratios: `docs/BENCHMARKS.md`, "Counting family".
///
/// # When to pick it
/// A set with deletions (or small counts) where speed matters: on a filter larger than the
/// caches each operation is one cache miss instead of k. The price is memory: keys crowd
/// unevenly into lines of only 128 counters, so at the same false-positive rate it needs more
/// counters than the classic-layout [`crate::CountingBloomFilter`]: at p = 1%, 10.9 counters
/// per item (k = 6 by its own sizing; 11.0 at the classic k = 7) against 9.6, **13–14% more
/// memory**; at p = 0.1% (k = 10) 19.4 against 14.4, 35% more — the gap grows as p falls
/// (`docs/BENCHMARKS.md`, "Counting family"). Below p = 0.1% it grows fast: at
/// p = 10⁻⁴ … 10⁻⁶ the sizing needs 31–77 counters per item (k = 10–13) against the classic
/// layout's 19–29, 1.6–2.7× the memory; small filters at such rates also spread from one
/// instance to the next (the sizing meets p on average over filters; at n = 10⁴ the lab
/// measured one filter at 1.20× and 1.35× the request at 10⁻⁴ and 10⁻⁵, its exact contents
/// rate 1.16× and 1.37× the model, `docs/lab/blocked-model.md`). [`Stats::current_fpr`] (the
/// CLI's `info`) is a built filter's own rate, exactly, from its counters. So pick it for p ≥ 0.1%; pick the
/// classic-layout filter when memory matters more than speed or p is smaller, the d-left
/// filter ([`crate::DLeftCountingBloomFilter`]) for the least memory.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BlockedCountingBloomFilter, Count, Filter, Remove};
///
/// let mut f = BlockedCountingBloomFilter::try_new(1000, 0.01)?;
/// for _ in 0..3 {
///     f.insert("hot");
/// }
/// assert_eq!(f.count("hot"), 3);
/// f.remove("hot")?;
/// assert_eq!(f.count("hot"), 2);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct BlockedCountingBloomFilter {
    words: Words,
    blocks: u64,
    k: u32,
    width: u32,
    hasher: KeyHasher,
    items: u64,
    capacity: u64,
    target_fpr: f64,
    /// The code of single-key operations, fixed by (width, k) and the CPU.
    path: Path,
}

/// Which code runs a single-key operation, decided once when a filter is made or loaded (so
/// an operation makes one choice instead of testing the width, k and the CPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    /// Any width and k: the counters' generic views.
    Views,
    /// 4-bit counters, k ≤ 16: [`nibbles`].
    Nibbles,
    /// 4-bit counters, k ≤ 8, AVX2: [`avx2`] over the digits of `h.hi`.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// 4-bit counters, 8 < k ≤ 16, AVX2: [`avx2`] over both words of digits.
    #[cfg(target_arch = "x86_64")]
    Avx2Wide,
}

impl Path {
    fn choose(width: u32, k: u32) -> Self {
        if width != 4 || k > nibbles::MAX_K {
            return Path::Views;
        }
        #[cfg(target_arch = "x86_64")]
        if crate::simd::avx2() {
            return if k <= DIGITS4 {
                Path::Avx2
            } else {
                Path::Avx2Wide
            };
        }
        Path::Nibbles
    }
}

/// Builder for [`BlockedCountingBloomFilter`]: `BlockedCountingBloomFilter::builder()
/// .capacity(n).fpr(p).counter_width(4).try_build()`.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BlockedCountingBloomFilter, Count, Filter, Remove};
///
/// let mut f = BlockedCountingBloomFilter::builder().capacity(1000).fpr(0.01).counter_width(4).try_build()?;
/// f.insert("k");
/// f.remove("k")?;
/// assert_eq!(f.count("k"), 0);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct BlockedCountingBuilder {
    sizing: Sizing,
    width: u32,
}

impl Default for BlockedCountingBuilder {
    fn default() -> Self {
        Self {
            sizing: Sizing::default(),
            width: DEFAULT_COUNTER_WIDTH,
        }
    }
}

fn check_width(width: u32) -> Result<()> {
    if width == 0 || width > MAX_WIDTH {
        return Err(invalid(
            "counter_width",
            format!("must be in 1..={MAX_WIDTH}, got {width}"),
        ));
    }
    Ok(())
}

impl BlockedCountingBuilder {
    crate::filter::sizing_setters!();

    /// At least this many counters (rounded up to whole lines), overriding the sizing.
    pub fn counters(mut self, m: u64) -> Self {
        self.sizing.bits = Some(m);
        self
    }
    /// An exact number of hash functions (k counters per key).
    pub fn hashes(mut self, k: u32) -> Self {
        self.sizing.hashes = Some(k);
        self
    }
    /// Bits per counter, 1..=32 (default 4); a line holds `⌊512 / w⌋` counters.
    pub fn counter_width(mut self, w: u32) -> Self {
        self.width = w;
        self
    }

    /// Build, validating every parameter.
    pub fn try_build(self) -> Result<BlockedCountingBloomFilter> {
        check_width(self.width)?;
        let cells = cells_per_line(self.width);
        let (blocks, k, n, p) = match (self.sizing.bits, self.sizing.hashes) {
            (Some(0), _) => return Err(invalid("counters", "must be at least 1")),
            (Some(m), k) => {
                let blocks = m.div_ceil(cells);
                let k = match (k, self.sizing.capacity) {
                    (Some(k), _) => k,
                    (None, Some(n)) => {
                        params::check_capacity(n)?;
                        store::check_size(blocks.saturating_mul(64), self.sizing.limit())?;
                        params::blocked_best_k(n, blocks, cells, MAX_HASHES)
                    }
                    (None, None) => {
                        return Err(invalid(
                            "hashes",
                            "give the hash count or a capacity with the counters",
                        ))
                    }
                };
                (
                    blocks,
                    k,
                    self.sizing.capacity.unwrap_or(0),
                    self.sizing.fpr.unwrap_or(0.0),
                )
            }
            (None, k) => {
                let n = self
                    .sizing
                    .capacity
                    .ok_or_else(|| invalid("capacity", "required"))?;
                let p = self.sizing.fpr.ok_or_else(|| invalid("fpr", "required"))?;
                params::check_capacity(n)?;
                params::check_fpr(p)?;
                // refuse absurd sizes before searching
                let bytes = params::bits_asymptotic(n, p) * f64::from(self.width) / 8.0;
                store::check_size(bytes as u64, self.sizing.limit())?;
                match k {
                    None => {
                        let s = params::blocked_shape(n, p, cells)?;
                        (s.blocks, s.k, n, p)
                    }
                    Some(k) => {
                        params::check_hashes(k, MAX_HASHES)?;
                        (params::blocked_blocks_for_k(n, p, cells, k)?, k, n, p)
                    }
                }
            }
        };
        store::check_size(blocks.saturating_mul(64), self.sizing.limit())?;
        let mut f = BlockedCountingBloomFilter::with_parts(
            blocks,
            k,
            self.width,
            self.sizing.key_hasher(),
            self.sizing.limit(),
        )?;
        f.capacity = n;
        f.target_fpr = if p > 0.0 && p < 1.0 { p } else { 0.0 };
        Ok(f)
    }
}

impl BlockedCountingBloomFilter {
    /// Move the structure's heap allocations with `mv` (for an allocator that defragments by
    /// moving allocations, as the Redis module's defrag callback does): the counter blocks. Arrays in a
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
        unsafe { self.words.relocate(mv) };
    }

    /// The hasher keys go through (what [`Filter::hasher`](crate::filter::Filter::hasher) and
    /// [`Count::hasher`](crate::filter::Count::hasher) answer; inherent, so that a call
    /// needs neither trait in scope and is not ambiguous with both).
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// Counter width used when none is given (bits).
    pub const DEFAULT_COUNTER_WIDTH: u32 = DEFAULT_COUNTER_WIDTH;

    /// Counters in one 64-byte line at `width` bits each: ⌊512 / width⌋.
    pub const fn cells_per_line_at(width: u32) -> u64 {
        cells_per_line(width)
    }

    /// A builder.
    pub fn builder() -> BlockedCountingBuilder {
        BlockedCountingBuilder::default()
    }

    /// Sized for `n` items at false-positive rate `p` with 4-bit counters (lines and k chosen
    /// by the blocked model).
    pub fn try_new(n: u64, p: f64) -> Result<Self> {
        Self::builder().capacity(n).fpr(p).try_build()
    }

    /// An exact shape: `blocks` lines of counters of `width` bits, `k` counters per key,
    /// default hasher.
    pub fn try_with_shape(blocks: u64, k: u32, width: u32) -> Result<Self> {
        Self::with_parts(blocks, k, width, KeyHasher::new(), store::max_bytes())
    }

    fn with_parts(blocks: u64, k: u32, width: u32, hasher: KeyHasher, limit: u64) -> Result<Self> {
        if blocks == 0 {
            return Err(invalid("counters", "need at least one line"));
        }
        params::check_hashes(k, MAX_HASHES)?;
        check_width(width)?;
        let words = blocks
            .checked_mul(LINE_WORDS as u64)
            .and_then(|w| usize::try_from(w).ok())
            .ok_or(crate::error::Error::TooLarge {
                requested: u64::MAX,
                limit,
            })?;
        Ok(Self {
            words: Words::zeroed(words, limit)?,
            blocks,
            k,
            width,
            hasher,
            items: 0,
            capacity: 0,
            target_fpr: 0.0,
            path: Path::choose(width, k),
        })
    }

    /// Number of 512-bit lines.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Counters per line, `⌊512 / w⌋`.
    pub fn cells_per_line(&self) -> u64 {
        cells_per_line(self.width)
    }

    /// Counters in all (lines × counters per line).
    pub fn counter_len(&self) -> u64 {
        self.blocks * self.cells_per_line()
    }

    /// Bits per counter (w).
    pub fn counter_width(&self) -> u32 {
        self.width
    }

    /// Counters per key (k).
    pub fn hashes(&self) -> u32 {
        self.k
    }

    /// The raw words (line b is words `8b..8b+8`).
    pub fn as_words(&self) -> &[u64] {
        self.words.as_slice()
    }

    /// Bytes of counters.
    pub fn byte_len(&self) -> u64 {
        self.words.len() as u64 * 8
    }

    /// True when the counters are a read-only view of a mapped file.
    pub fn is_mapped(&self) -> bool {
        self.words.is_mapped()
    }

    /// The key's line (0..blocks).
    #[inline(always)]
    pub fn line_of(&self, h: Hashed) -> u64 {
        reduce(h.lo, self.blocks)
    }

    /// The key's k counter positions inside its line (0..⌊512 / w⌋), in order.
    pub fn positions(&self, h: Hashed) -> CellPositions {
        let cells = self.cells_per_line();
        CellPositions::new(h, self.k, cells, digits_per_word(cells))
    }

    /// Counter `j` of line `b` (`b < blocks`, `j < ⌊512 / w⌋`; panics otherwise).
    pub fn counter(&self, b: u64, j: u64) -> u32 {
        assert!(b < self.blocks && j < self.cells_per_line());
        View::over(self.line_at(b as usize), self.width).get(j)
    }

    /// Counters stuck at their maximum `2^w - 1` (never decremented again).
    pub fn saturated_counters(&self) -> u64 {
        let max = (u64::MAX >> (64 - self.width)) as u32;
        self.count_cells(|v| v == max)
    }

    /// Remove every item.
    pub fn clear(&mut self) {
        self.words.as_mut_slice().fill(0);
        self.items = 0;
    }

    /// Line `b`'s 8 words.
    #[inline(always)]
    fn line_at(&self, b: usize) -> &[u64] {
        &self.words.as_slice()[b * LINE_WORDS..b * LINE_WORDS + LINE_WORDS]
    }

    /// The key's line, without a bounds check.
    #[inline(always)]
    fn line(&self, h: Hashed) -> &[u64; LINE_WORDS] {
        let start = self.line_of(h) as usize * LINE_WORDS;
        let words = self.words.as_slice();
        debug_assert!(start + LINE_WORDS <= words.len());
        // SAFETY: `line_of` is a multiply-shift reduction into [0, blocks), and the words are
        // exactly `blocks · 8` long (checked when made and when decoded), so the 8 words from
        // `start` are in bounds; they are u64s, so the cast to an array of 8 is valid.
        unsafe { &*(words.as_ptr().add(start) as *const [u64; LINE_WORDS]) }
    }

    /// The key's line, mutable (a mapped view is copied once, on the first write).
    #[inline(always)]
    fn line_mut(&mut self, h: Hashed) -> &mut [u64; LINE_WORDS] {
        let start = self.line_of(h) as usize * LINE_WORDS;
        let words = self.words.as_mut_slice();
        debug_assert!(start + LINE_WORDS <= words.len());
        // SAFETY: as in `line`; the exclusive borrow of `self` makes this the only reference.
        unsafe { &mut *(words.as_mut_ptr().add(start) as *mut [u64; LINE_WORDS]) }
    }

    /// Counters for which `pred(value)` holds.
    fn count_cells(&self, pred: impl Fn(u32) -> bool) -> u64 {
        let cells = self.cells_per_line();
        let mut n = 0;
        // a step at a time, a mapped file's pages dropped behind (steps are whole lines)
        crate::store::Behind::steps(&self.words, |_, step| {
            n += step
                .chunks_exact(LINE_WORDS)
                .map(|line| {
                    let v = View::over(line, self.width);
                    (0..cells).filter(|&j| pred(v.get(j))).count() as u64
                })
                .sum::<u64>();
        });
        n
    }

    /// Insert `n` occurrences of a pre-hashed key at once (each counter saturating); true when
    /// one of its counters was zero.
    #[inline]
    pub fn insert_many_hashed(&mut self, h: Hashed, n: u32) -> bool {
        let new = if n == 1 {
            self.add_one(h)
        } else {
            self.add_generic(h, n)
        };
        self.items = self.items.saturating_add(u64::from(n));
        new
    }

    /// Insert `n` occurrences of a key at once (each counter saturating); true when the key
    /// was new (a counter was zero). The same call as [`CountMinSketch::insert_many`](crate::CountMinSketch::insert_many).
    pub fn insert_many<K: crate::hash::Key + ?Sized>(&mut self, key: &K, n: u32) -> bool {
        let h = self.hasher.hash(key);
        self.insert_many_hashed(h, n)
    }

    /// Add one to each of the key's counters along the filter's [`Path`].
    #[inline(always)]
    fn add_one(&mut self, h: Hashed) -> bool {
        let k = self.k;
        match self.path {
            // SAFETY: `Path::Avx2` is chosen only when the CPU supports AVX2 (`simd::avx2`).
            #[cfg(target_arch = "x86_64")]
            Path::Avx2 => unsafe { avx2::insert(self.line_mut(h), h.hi, k) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            Path::Avx2Wide => unsafe { avx2::insert_wide(self.line_mut(h), h, k) },
            Path::Nibbles => nibbles::insert(self.line_mut(h), nibbles::digit_words(h, k), k),
            Path::Views => self.add_generic(h, 1),
        }
    }

    /// [`insert_many_hashed`](Self::insert_many_hashed) for every width and k, through the
    /// counters' views (kept out of line so the 4-bit fast path stays short).
    #[inline(never)]
    fn add_generic(&mut self, h: Hashed, n: u32) -> bool {
        let pos = self.positions(h);
        let width = self.width;
        // SAFETY: every position is a base-B digit, below B = ⌊512 / w⌋, so the counter lies
        // inside the 8-word line.
        unsafe { ViewMut::over(self.line_mut(h), width).add_each(pos, n) }
    }

    /// Hint the CPU to fetch the key's line ahead of an insert, a count or a remove.
    #[inline]
    pub fn prefetch_hashed(&self, h: Hashed) {
        store::prefetch(self.words.as_slice(), self.line_of(h) as usize * LINE_WORDS);
    }

    /// Insert a stream of pre-hashed keys through a software pipeline: each key's line is
    /// prefetched `INSERT_AHEAD` keys before it is updated, so the cache misses of
    /// consecutive keys overlap. Identical to inserting them one by one; returns how many keys
    /// had a zero counter (were new).
    pub fn insert_hashed_pipelined(&mut self, hashes: impl IntoIterator<Item = Hashed>) -> u64 {
        let mut pipe = Pipeline::<Hashed, INSERT_AHEAD>::default();
        let mut new = 0u64;
        for h in hashes {
            self.prefetch_hashed(h);
            if let Some(due) = pipe.push(h) {
                new += u64::from(self.insert_hashed(due));
            }
        }
        for due in pipe.drain() {
            new += u64::from(self.insert_hashed(due));
        }
        new
    }

    /// Insert every key of `keys` through
    /// [`insert_hashed_pipelined`](Self::insert_hashed_pipelined) (identical to inserting them
    /// one by one); returns how many were new.
    pub fn insert_batch<K: Key>(&mut self, keys: &[K]) -> u64 {
        let hasher = self.hasher;
        self.insert_hashed_pipelined(keys.iter().map(|k| hasher.hash(k)))
    }

    fn check_compatible(&self, other: &Self) -> Result<()> {
        if self.blocks != other.blocks || self.k != other.k || self.width != other.width {
            return Err(shape_mismatch(
                format!("blocks={} k={} w={}", self.blocks, self.k, self.width),
                format!("blocks={} k={} w={}", other.blocks, other.k, other.width),
            ));
        }
        if self.hasher != other.hasher {
            return Err(crate::error::Error::Incompatible(
                crate::error::Incompatibility::Hashing,
            ));
        }
        Ok(())
    }

    /// Combine every counter with the other filter's: `f(mine, theirs)` (at most the maximum).
    fn combine(&mut self, other: &Self, f: impl Fn(u32, u32) -> u32) {
        let (width, cells) = (self.width, self.cells_per_line());
        let theirs = other.words.as_slice().chunks_exact(LINE_WORDS);
        for (mine, theirs) in self
            .words
            .as_mut_slice()
            .chunks_exact_mut(LINE_WORDS)
            .zip(theirs)
        {
            let t = View::over(theirs, width);
            let mut m = ViewMut::over(mine, width);
            for j in 0..cells {
                let (a, b) = (m.get(j), t.get(j));
                let v = f(a, b);
                if v != a {
                    m.set(j, v);
                }
            }
        }
    }
}

/// The shared [`Builder`] sizing goes to this structure's own builder (bits: the number of
/// counters or bits; every other setting at its default).
impl Build for BlockedCountingBloomFilter {
    type Options = ();
    fn build(b: &Builder<Self>) -> Result<Self> {
        BlockedCountingBloomFilter::builder()
            .sizing(b.sizing)
            .try_build()
    }
}

impl Filter for BlockedCountingBloomFilter {
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// Increment the key's counters (saturating); true when one of them was zero.
    #[inline]
    fn insert_hashed(&mut self, h: Hashed) -> bool {
        self.insert_many_hashed(h, 1)
    }

    #[inline]
    fn contains_hashed(&self, h: Hashed) -> bool {
        self.count_hashed(h) != 0
    }

    /// Inserts minus successful removes (so duplicates count every time).
    fn len(&self) -> u64 {
        self.items
    }
}

impl Count for BlockedCountingBloomFilter {
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// The minimum of the key's counters: never below the true count unless one of its
    /// counters saturated.
    #[inline]
    fn count_hashed(&self, h: Hashed) -> u64 {
        let k = self.k;
        u64::from(match self.path {
            // SAFETY: `Path::Avx2` is chosen only when the CPU supports AVX2 (`simd::avx2`).
            #[cfg(target_arch = "x86_64")]
            Path::Avx2 => unsafe { avx2::min(self.line(h), h.hi, k) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            Path::Avx2Wide => unsafe { avx2::min_wide(self.line(h), h, k) },
            Path::Nibbles => nibbles::min(self.line(h), nibbles::digit_words(h, k), k),
            Path::Views => return self.count_generic(h),
        })
    }
}

impl BlockedCountingBloomFilter {
    #[inline(never)]
    fn count_generic(&self, h: Hashed) -> u64 {
        // SAFETY: as in `add_generic`, every position is below B.
        u64::from(unsafe { View::over(self.line(h), self.width).min_of(self.positions(h)) })
    }

    #[inline(never)]
    fn remove_generic(&mut self, h: Hashed) -> bool {
        let pos = self.positions(h);
        let width = self.width;
        // SAFETY: as in `add_generic`; k ≤ 32 ≤ 64 positions.
        unsafe { ViewMut::over(self.line_mut(h), width).decrement_unless_zero(pos) }
    }
}

impl Remove for BlockedCountingBloomFilter {
    /// Decrement the key's counters, except saturated ones; refused (nothing changed) when any
    /// of them is zero.
    #[inline]
    fn remove_hashed(&mut self, h: Hashed) -> Result<(), RemoveError> {
        let k = self.k;
        let done = match self.path {
            // SAFETY: `Path::Avx2` is chosen only when the CPU supports AVX2 (`simd::avx2`).
            #[cfg(target_arch = "x86_64")]
            Path::Avx2 => unsafe { avx2::remove(self.line_mut(h), h.hi, k) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            Path::Avx2Wide => unsafe { avx2::remove_wide(self.line_mut(h), h, k) },
            Path::Nibbles => nibbles::remove(self.line_mut(h), nibbles::digit_words(h, k), k),
            Path::Views => self.remove_generic(h),
        };
        if !done {
            return Err(RemoveError::NotPresent);
        }
        self.items = self.items.saturating_sub(1);
        Ok(())
    }
}

impl Merge for BlockedCountingBloomFilter {
    /// Counter-wise saturating sum: the filter of every insert made into either (counts add,
    /// and each side's keys can still be removed).
    fn union_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        let max = (u64::MAX >> (64 - self.width)) as u32;
        self.combine(other, |a, b| {
            (u64::from(a) + u64::from(b)).min(u64::from(max)) as u32
        });
        self.items = self.items.saturating_add(other.items);
        Ok(())
    }

    /// Counter-wise minimum: contains every key inserted into both, with the smaller count.
    fn intersect_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        self.combine(other, u32::min);
        self.items = self.items.min(other.items);
        Ok(())
    }
}

impl Stats for BlockedCountingBloomFilter {
    /// Counters (lines × counters per line).
    fn bit_len(&self) -> u64 {
        self.counter_len()
    }
    /// Non-zero counters.
    fn count_ones(&self) -> u64 {
        self.count_cells(|v| v != 0)
    }
    fn hash_count(&self) -> u32 {
        self.k
    }
    /// The exact rate of the current contents for k draws with replacement: the mean over
    /// lines of `(non-zero counters of the line / B)^k`.
    fn current_fpr(&self) -> f64 {
        let cells = self.cells_per_line();
        let mut sum = 0.0;
        // in line order (the sum's order), a step at a time, a mapped file's pages dropped
        // behind (steps are whole lines)
        crate::store::Behind::steps(&self.words, |_, step| {
            for line in step.chunks_exact(LINE_WORDS) {
                let v = View::over(line, self.width);
                let nonzero = (0..cells).filter(|&j| v.get(j) != 0).count();
                sum += (nonzero as f64 / cells as f64).powi(self.k as i32);
            }
        });
        sum / self.blocks as f64
    }
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn target_fpr(&self) -> f64 {
        self.target_fpr
    }
}

impl Persist for BlockedCountingBloomFilter {
    const KIND: Kind = Kind::BlockedCounting;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut h = Header::new(Kind::BlockedCounting, self.hasher);
        h.items = self.items;
        h.capacity = self.capacity;
        h.target_fpr = self.target_fpr;
        h.params = ParamWriter::new()
            .u64(self.blocks)
            .u32(self.k)
            .u8(self.width as u8)
            .finish();
        (h, Payload::new(vec![&self.words]))
    }

    fn decode_from(d: &Decoded, src: format::Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let blocks = r.u64()?;
        let k = r.u32()?;
        let width = u32::from(r.u8()?);
        r.finish()?;
        if blocks == 0 || k == 0 || k > MAX_HASHES || width == 0 || width > MAX_WIDTH {
            return Err(inconsistent(format!(
                "blocked counting shape blocks={blocks} k={k} w={width}"
            )));
        }
        let words = blocks
            .checked_mul(LINE_WORDS as u64)
            .and_then(|w| usize::try_from(w).ok())
            .ok_or_else(|| inconsistent("too many lines"))?;
        format::check_payload(d, words)?;
        let w = src.words(d.payload_offset, words, limit)?;
        // the bits after the last counter of each line are zero
        let used = cells_per_line(width) * u64::from(width);
        if used < u64::from(LINE_BITS) {
            let (wi, off) = ((used / 64) as usize, used % 64);
            let dirty = w
                .as_slice()
                .chunks_exact(LINE_WORDS)
                .any(|line| line[wi] >> off != 0 || line[wi + 1..].iter().any(|&x| x != 0));
            if dirty {
                return Err(inconsistent("bits set beyond the last counter of a line"));
            }
        }
        Ok(Self {
            words: w,
            blocks,
            k,
            width,
            hasher: d.header.hasher,
            items: d.header.items,
            capacity: d.header.capacity,
            target_fpr: d.header.target_fpr,
            path: Path::choose(width, k),
        })
    }
}

/// Inserts through [`BlockedCountingBloomFilter::insert_hashed_pipelined`] (identical to
/// inserting one by one).
impl<K: Key> Extend<K> for BlockedCountingBloomFilter {
    fn extend<I: IntoIterator<Item = K>>(&mut self, iter: I) {
        let hasher = self.hasher;
        self.insert_hashed_pipelined(iter.into_iter().map(|k| hasher.hash(&k)));
    }
}

impl BlockedCountingBloomFilter {
    /// A filter holding `keys`, sized for that many keys (duplicates included, at least 1) at
    /// rate `fpr` with 4-bit counters and the default hasher: the fallible form of
    /// `collect()`. Collects the keys' hashes first (16 bytes per key), then sizes; an error
    /// (invalid `fpr`, a size over the memory limit) is returned instead of a panic.
    pub fn try_from_keys<K: Key>(keys: impl IntoIterator<Item = K>, fpr: f64) -> Result<Self> {
        crate::params::check_fpr(fpr)?;
        let hasher = KeyHasher::new();
        let hashes: Vec<Hashed> = keys.into_iter().map(|k| hasher.hash(&k)).collect();
        let mut f = Self::try_new((hashes.len() as u64).max(1), fpr)?;
        f.insert_hashed_pipelined(hashes);
        Ok(f)
    }
}

impl<K: Key> FromIterator<K> for BlockedCountingBloomFilter {
    /// Collects the keys' hashes, then sizes the filter for that many keys (duplicates
    /// included) at a 1% false-positive rate with 4-bit counters.
    ///
    /// # Panics
    /// When the filter cannot be made: a size over the memory limit
    /// ([`crate::tuning::max_bytes`]) or an allocation failure. Use
    /// [`BlockedCountingBloomFilter::try_from_keys`] to get an error instead.
    fn from_iter<I: IntoIterator<Item = K>>(iter: I) -> Self {
        Self::try_from_keys(iter, 0.01).unwrap_or_else(|e| {
            panic!("cannot size a filter for the collected keys: {e} (use try_from_keys)")
        })
    }
}

impl crate::multisets::counter_kind::CounterKind for BlockedCountingBloomFilter {
    const CAPABILITIES: Capabilities = Capabilities {
        insert: true,
        hashed: true,
        count: true,
        remove: true,
        ..Capabilities::NONE
    };
    counting_filter_kind!(len: Filter::len, remove);
    fn describe(&self, i: &mut crate::multisets::counter_kind::CounterInfo) {
        i.capacity = self.capacity();
        (i.target_fpr, i.current_fpr) = crate::multisets::counter_kind::rates(self);
        i.saturated_counters = Some(self.saturated_counters());
        i.counter_bits = Some(self.counter_width());
        i.hashes = Some(self.hashes());
        i.size = Some(self.counter_len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn insert_count_remove_refuse() {
        let mut f = BlockedCountingBloomFilter::try_new(1000, 0.01).unwrap();
        assert_eq!(f.counter_width(), 4);
        assert_eq!(f.cells_per_line(), 128);
        assert!(f.insert("a"));
        assert!(!f.insert("a"));
        assert_eq!(f.count("a"), 2);
        assert_eq!(f.len(), 2);
        f.remove("a").unwrap();
        assert_eq!(f.count("a"), 1);
        f.remove("a").unwrap();
        assert!(!f.contains("a"));
        assert_eq!(f.remove("a"), Err(RemoveError::NotPresent));
        assert_eq!(f.remove("never"), Err(RemoveError::NotPresent));
        assert_eq!(f.len(), 0);
        assert_eq!(f.count_ones(), 0);
    }

    #[test]
    fn positions_stay_in_the_line_and_are_digits_of_hi() {
        for width in 1..=MAX_WIDTH {
            let f = BlockedCountingBloomFilter::try_with_shape(3, 32, width).unwrap();
            let cells = f.cells_per_line();
            let h = Hashed::new(0x1234_5678_9ABC_DEF0, u64::MAX);
            let pos: Vec<u64> = f.positions(h).collect();
            assert_eq!(pos.len(), 32);
            assert!(pos.iter().all(|&p| p < cells), "w={width}");
            // the largest hi gives the largest digits in the first word
            let g = digits_per_word(cells) as usize;
            assert!(pos[..g].iter().all(|&p| p == cells - 1), "w={width}");
        }
        // 4-bit counters: consecutive 7-bit slices of hi from the top
        let f = BlockedCountingBloomFilter::try_with_shape(1, 8, 4).unwrap();
        let hi = 0xFEDC_BA98_7654_3210u64;
        let want: Vec<u64> = (0..8).map(|i| (hi << (7 * i)) >> 57).collect();
        assert_eq!(f.positions(Hashed::new(0, hi)).collect::<Vec<_>>(), want);
    }

    #[test]
    fn every_width_works_and_padding_stays_clear() {
        for width in 1..=MAX_WIDTH {
            let mut f = BlockedCountingBloomFilter::try_with_shape(4, 5, width).unwrap();
            for i in 0..200u32 {
                f.insert(&(i % 60));
            }
            for i in 0..60u32 {
                assert!(f.count(&i) >= 1, "w={width}");
            }
            let g = BlockedCountingBloomFilter::from_bytes(&f.to_bytes()).unwrap();
            assert_eq!(f, g, "w={width}");
            for i in 0..200u32 {
                f.remove(&(i % 60)).unwrap();
            }
            if f.saturated_counters() == 0 {
                assert_eq!(f.count_ones(), 0, "w={width}");
            }
        }
    }

    #[test]
    fn batched_inserts_equal_one_by_one() {
        let keys: Vec<u32> = (0..3000u32).map(|i| (i * 7919) % 1100).collect();
        for width in [4, 3] {
            let mut one = BlockedCountingBloomFilter::try_with_shape(40, 5, width).unwrap();
            let mut new_one = 0;
            for k in &keys {
                new_one += u64::from(one.insert(k));
            }
            let mut batch = BlockedCountingBloomFilter::try_with_shape(40, 5, width).unwrap();
            assert_eq!(batch.insert_batch(&keys), new_one);
            assert_eq!(batch, one);
            let mut ext = BlockedCountingBloomFilter::try_with_shape(40, 5, width).unwrap();
            ext.extend(keys.iter().copied());
            assert_eq!(ext, one);
        }
        let f: BlockedCountingBloomFilter = (0..100u32).collect();
        assert_eq!(f.len(), 100);
        assert!((0..100u32).all(|i| f.contains(&i)));
    }

    #[test]
    fn saturated_counters_stay() {
        let mut f = BlockedCountingBloomFilter::try_with_shape(1, 3, 2).unwrap();
        for _ in 0..10 {
            f.insert("x");
        }
        assert_eq!(f.count("x"), 3); // saturated at 2^2 - 1
        assert!(f.saturated_counters() >= 1);
        for _ in 0..10 {
            f.remove("x").unwrap(); // saturated counters never go down
        }
        assert_eq!(f.count("x"), 3);
        // a union saturates too
        let mut g = f.clone();
        g.union_with(&f).unwrap();
        assert_eq!(g.count("x"), 3);
        assert_eq!(g.len(), 2 * f.len());
    }

    #[test]
    fn refusal_changes_nothing() {
        let mut f = BlockedCountingBloomFilter::try_with_shape(2, 6, 4).unwrap();
        for i in 0..20u32 {
            f.insert(&i);
        }
        let before = f.clone();
        let mut refused = 0;
        for i in 1000..3000u32 {
            let snap = f.clone();
            if f.remove(&i).is_err() {
                refused += 1;
                assert_eq!(f, snap);
            }
        }
        assert!(refused > 0);
        // put back what the false-positive removes took: counts are restored exactly
        let mut g = before.clone();
        for i in 1000..3000u32 {
            if g.remove(&i).is_ok() {
                g.insert(&i);
            }
        }
        assert_eq!(g, before);
    }

    #[test]
    fn sizing_uses_the_blocked_model() {
        let f = BlockedCountingBloomFilter::try_new(100_000, 0.01).unwrap();
        let model = params::fpr_blocked(100_000, f.blocks(), 128, f.hashes());
        assert!(model <= 0.01 && model > 0.0097, "{model}");
        let smaller = params::fpr_blocked(100_000, f.blocks() - 1, 128, f.hashes());
        assert!(
            smaller > 0.01
                || params::blocked_best_k(100_000, f.blocks() - 1, 128, MAX_HASHES) != f.hashes()
        );
        let g = BlockedCountingBloomFilter::builder()
            .capacity(100_000)
            .fpr(0.01)
            .hashes(4)
            .try_build()
            .unwrap();
        assert!(params::fpr_blocked(100_000, g.blocks(), 128, 4) <= 0.01);
        assert!(params::fpr_blocked(100_000, g.blocks() - 1, 128, 4) > 0.01);
        let h = BlockedCountingBloomFilter::builder()
            .counters(1000)
            .capacity(100)
            .try_build()
            .unwrap();
        assert_eq!(h.blocks(), 8);
        assert_eq!(h.counter_len(), 1024);
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(BlockedCountingBloomFilter::try_with_shape(0, 3, 4).is_err());
        assert!(BlockedCountingBloomFilter::try_with_shape(10, 0, 4).is_err());
        assert!(BlockedCountingBloomFilter::try_with_shape(10, 33, 4).is_err());
        assert!(BlockedCountingBloomFilter::try_with_shape(10, 3, 0).is_err());
        assert!(BlockedCountingBloomFilter::try_with_shape(10, 3, 33).is_err());
        assert!(BlockedCountingBloomFilter::try_with_shape(u64::MAX, 3, 4).is_err());
        assert!(BlockedCountingBloomFilter::try_new(0, 0.1).is_err());
        assert!(BlockedCountingBloomFilter::try_new(10, 2.0).is_err());
        assert!(BlockedCountingBloomFilter::builder()
            .counters(100)
            .try_build()
            .is_err());
        for b in [
            BlockedCountingBloomFilter::builder()
                .capacity(1 << 40)
                .fpr(0.001)
                .max_bytes(1 << 20),
            BlockedCountingBloomFilter::builder()
                .counters(u64::MAX)
                .hashes(3)
                .max_bytes(1 << 20),
            BlockedCountingBloomFilter::builder()
                .counters(1 << 40)
                .capacity(10)
                .max_bytes(1 << 20),
        ] {
            assert!(matches!(
                b.try_build(),
                Err(crate::error::Error::TooLarge { .. })
            ));
        }
        let a = BlockedCountingBloomFilter::try_with_shape(10, 3, 4).unwrap();
        let mut b = BlockedCountingBloomFilter::try_with_shape(10, 3, 8).unwrap();
        assert!(b.union_with(&a).is_err());
        let mut c = BlockedCountingBloomFilter::builder()
            .counters(1280)
            .hashes(3)
            .seed(1)
            .try_build()
            .unwrap();
        assert!(matches!(
            c.intersect_with(&a),
            Err(crate::error::Error::Incompatible(
                crate::error::Incompatibility::Hashing
            ))
        ));
    }

    #[cfg(feature = "mmap")]
    #[test]
    fn save_mmap_and_bad_files() {
        let mut f = BlockedCountingBloomFilter::try_new(100, 0.01).unwrap();
        for i in 0..100u32 {
            f.insert(&i);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.bloom");
        f.save(&path).unwrap();
        assert_eq!(BlockedCountingBloomFilter::load(&path).unwrap(), f);
        let mut mapped =
            BlockedCountingBloomFilter::open_mmap(&path, format::Verify::Checksum).unwrap();
        assert_eq!(mapped, f);
        assert!(mapped.is_mapped());
        mapped.remove(&5u32).unwrap(); // copy on write
        assert_eq!(mapped.count(&5u32) + 1, f.count(&5u32));
        assert_eq!(BlockedCountingBloomFilter::load(&path).unwrap(), f);
        // every parameter is validated on decode
        let file = |blocks: u64, k: u32, w: u8, words: &Words| {
            let mut h = Header::new(Kind::BlockedCounting, KeyHasher::new());
            h.params = ParamWriter::new().u64(blocks).u32(k).u8(w).finish();
            let mut bytes = Vec::new();
            format::write(&h, &Payload::new(vec![words]), &mut bytes).unwrap();
            bytes
        };
        let eight = Words::zeroed(8, u64::MAX).unwrap();
        assert!(BlockedCountingBloomFilter::from_bytes(&file(1, 3, 4, &eight)).is_ok());
        for (b, k, w) in [
            (0u64, 3u32, 4u8),
            (1, 0, 4),
            (1, 33, 4),
            (1, 3, 0),
            (1, 3, 33),
        ] {
            let bytes = file(b, k, w, &eight);
            assert!(
                BlockedCountingBloomFilter::from_bytes(&bytes).is_err(),
                "{b} {k} {w}"
            );
        }
        // the wrong payload length
        assert!(BlockedCountingBloomFilter::from_bytes(&file(2, 3, 4, &eight)).is_err());
        // bits beyond the last counter of a line: 3-bit counters use 510 of 512 bits
        let mut dirty = Words::zeroed(8, u64::MAX).unwrap();
        dirty.as_mut_slice()[7] = 1 << 62;
        assert!(BlockedCountingBloomFilter::from_bytes(&file(1, 3, 3, &dirty)).is_err());
        assert!(BlockedCountingBloomFilter::from_bytes(&file(1, 3, 4, &dirty)).is_ok());
        // not a set filter, not a classic-layout counting filter
        assert!(crate::any::filter::AnyFilter::from_bytes(&f.to_bytes()).is_err());
        assert!(
            crate::multisets::counting::CountingBloomFilter::from_bytes(&f.to_bytes()).is_err()
        );
    }

    /// The one-pass remove's restore path: a counter at 1 that the key hits twice goes to 0
    /// once (removed), and a zero among the key's counters refuses with the line unchanged.
    #[test]
    fn nibble_remove_of_a_counter_at_one_hit_twice() {
        let hi = (5u64 << 57) | (5 << 50) | (9 << 43); // digits 5, 5, 9
        let mut line = [0u64; LINE_WORDS];
        line[0] = 1 << (4 * 5);
        assert!(nibbles::remove(&mut line, [hi, 0], 2));
        assert_eq!(line, [0; LINE_WORDS]);
        line[0] = (1 << (4 * 5)) | (3 << (4 * 7));
        let before = line;
        assert!(!nibbles::remove(&mut line, [hi, 0], 3)); // counter 9 is zero
        assert_eq!(line, before);
        line[0] |= 2 << (4 * 9);
        assert!(nibbles::remove(&mut line, [hi, 0], 3));
        assert_eq!(line[0], (3 << (4 * 7)) | (1 << (4 * 9)));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// The 4-bit fast path gives the results of the counters' views, on lines full of
        /// zeros and saturated counters.
        #[test]
        fn nibbles_match_the_views(
            seed in proptest::collection::vec(0u64..8, 128),
            hi in any::<u64>(),
            k in 1u32..=nibbles::MAX_K,
            lo in any::<u64>(),
        ) {
            let mut line = [0u64; LINE_WORDS];
            for (j, v) in seed.iter().enumerate() {
                // mostly 0, 1 and 15
                let c = match v { 0..=2 => 0, 3 => 15, x => x - 3 };
                line[j / 16] |= c << (4 * (j % 16));
            }
            let h = Hashed::new(lo, hi);
            let pos = || CellPositions::new(h, k, CELLS4, DIGITS4);
            let words = nibbles::digit_words(h, k);
            let slices = words.iter().flat_map(|&x| (0..DIGITS4).map(move |i| (x << (7 * i)) >> 57));
            prop_assert_eq!(pos().collect::<Vec<_>>(), slices.take(k as usize).collect::<Vec<_>>());
            // SAFETY: every position is below 128, the counters of the 8-word line.
            let want = unsafe { View::over(&line, 4).min_of(pos()) };
            prop_assert_eq!(nibbles::min_scalar(&line, words, k), want);
            let (mut fast, mut slow) = (line, line);
            let got = nibbles::insert_scalar(&mut fast, words, k);
            // SAFETY: as above.
            prop_assert_eq!(got, unsafe { ViewMut::over(&mut slow, 4).add_each(pos(), 1) });
            prop_assert_eq!(fast, slow);
            for start in [line, fast] {
                let (mut fast, mut slow) = (start, start);
                let got = nibbles::remove_scalar(&mut fast, words, k);
                // SAFETY: as above.
                let want = unsafe { ViewMut::over(&mut slow, 4).decrement_unless_zero(pos()) };
                prop_assert_eq!(got, want);
                prop_assert_eq!(fast, slow);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn no_false_negatives_counts_never_low(
            ops in proptest::collection::vec((0u8..40, any::<bool>()), 1..300),
            cut in 0usize..300,
            width in prop_oneof![Just(4u32), Just(8), 5u32..=12],
            k in prop_oneof![Just(4u32), Just(7), Just(12), Just(16), 1u32..=20],
        ) {
            // counters of ≥ 5 bits do not saturate here (at most 300 increments spread over
            // ≥ 12 keys per counter would be needed), so counts are never below the truth.
            // k covers both words of the 4-bit fast path (k ≤ 16) and the views beyond it.
            let make = || BlockedCountingBloomFilter::try_with_shape(4, k, width).unwrap();
            let (mut f, mut g) = (make(), make());
            let mut sides: [HashMap<u8, u64>; 2] = [HashMap::new(), HashMap::new()];
            for (i, (key, insert)) in ops.iter().enumerate() {
                let s = usize::from(i >= cut);
                let side = if s == 0 { &mut f } else { &mut g };
                let t = sides[s].entry(*key).or_default();
                if *insert {
                    side.insert(key);
                    *t += 1;
                } else if *t > 0 {
                    side.remove(key).unwrap();
                    *t -= 1;
                }
            }
            let mut truth = sides[0].clone();
            for (k, c) in &sides[1] {
                *truth.entry(*k).or_default() += c;
            }
            f.union_with(&g).unwrap();
            let f2 = BlockedCountingBloomFilter::from_bytes(&f.to_bytes()).unwrap();
            let sat = f2.saturated_counters();
            for (k, c) in &truth {
                if sat == 0 {
                    prop_assert!(f2.count(k) >= *c);
                }
                if *c > 0 { prop_assert!(f2.contains(k)); }
            }
            let mut h = f2.clone();
            let mut left = truth.clone();
            for (k, c) in &truth {
                for _ in 0..(*c / 2) {
                    h.remove(k).unwrap();
                    *left.get_mut(k).unwrap() -= 1;
                }
            }
            for (k, c) in &left {
                if sat == 0 {
                    prop_assert!(h.count(k) >= *c);
                }
                if *c > 0 { prop_assert!(h.contains(k)); }
            }
        }
    }
}
