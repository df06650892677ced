//! The counting family under one small trait, for `benches/counting.rs` and the
//! `counting_bits` binary. See docs/BENCHMARKS.md ("## Counting family").
//!
//! Shapes at n items and rate p (all fixed-seed, all from the library's own sizing unless
//! said otherwise):
//!
//! * `classic`: `BloomFilter::try_new(n, p)` — m bits, k hashes (the reference).
//! * `counting`: `CountingBloomFilter` with the classic filter's m and k, 4-bit counters.
//! * `blocked_counting`: `BlockedCountingBloomFilter` with the classic filter's k, 4-bit
//!   counters, sized by the library's blocked model for (n, p) at that k ([`BlockedCounting::same_k`]).
//! * `dlcbf`: `DLeftCountingBloomFilter::try_new(n, p)` (Bonomi et al. shape).
//! * `spectral`: `SpectralBloomFilter` Minimum Selection with the classic m and k, 4-bit
//!   counters (the same memory as `counting`).
//! * `cms_eps` / `cms_eps_cu`: `CountMinSketch` sized by the structure's own parameters,
//!   `(ε, δ) = (`[`CMS_EPSILON`]`, `[`CMS_DELTA`]`)`: width ⌈e/ε⌉ = 27,183, depth 4 (the
//!   headline rows; see [`CMS_EPSILON`] for why).
//! * `cms` / `cms_cu`: `CountMinSketch` of depth 4 × width [`cms_width`], plain and
//!   conservative (the big-table case: 2 MiB at 1M, 32 MiB at 10M).
//! * `ibf`: `IterativeBloomFilter` with the classic m and k.
//! * `scbf`: `SpaceCodeBloomFilter` sized by the library for (n, p).
//! * `pc_cms` / `pc_bloom`: probabilistic-collections' `CountMinSketch` (same depth and width,
//!   SipHash, i64 cells) and `BloomFilter` (its own sizing for (n, p)). probabilistic-collections
//!   has no counting Bloom filter.

use bloomery::builders::SpectralMethod;
use bloomery::{
    BlockedCountingBloomFilter, BloomFilter, Count, CountMinSketch, CountingBloomFilter,
    DLeftCountingBloomFilter, Filter, IterativeBloomFilter, Remove, SpaceCodeBloomFilter,
    SpectralBloomFilter, Stats,
};

/// Rows of every count-min sketch.
pub const CMS_DEPTH: u32 = 4;

/// The additive error of the headline count-min rows, as a fraction of the stream: a sketch
/// of a 10M-update stream with ε = 10⁻⁴ over-estimates any key by at most εN = 1,000 (with
/// probability 1 - δ), so every key above 0.1% of the stream (10,000) is estimated within 10%
/// — the usual heavy-hitter sizing. Width ⌈e/ε⌉ = 27,183 cells per row.
pub const CMS_EPSILON: f64 = 1e-4;

/// The failure probability of the headline count-min rows: δ = 2% gives depth ⌈ln 1/δ⌉ = 4,
/// the depth of the target (4 × 27,183 × 8 bytes = 850 KiB).
pub const CMS_DELTA: f64 = 0.02;

/// Width of the count-min sketches for n items: the largest power of two ≤ n/8, at least 2¹⁶
/// (2¹⁶ × 4 rows = 2 MiB at 1M, 2²⁰ × 4 rows = 32 MiB at 10M: ε = e/width = 2.6·10⁻⁶, an
/// additive error of at most 26 at N = 10M with probability 1 - e⁻⁴).
pub fn cms_width(n: usize) -> u64 {
    let x = (n as u64 / 8).max(1 << 16);
    1u64 << (63 - x.leading_zeros())
}

/// A counting structure under test.
pub trait Counted {
    /// Add one occurrence.
    fn insert(&mut self, k: u64);
    /// The estimated count.
    fn count(&self, k: u64) -> u64;
    /// Remove one occurrence (false when refused or unsupported).
    fn remove(&mut self, k: u64) -> bool;
    /// Whether removal exists.
    fn removable(&self) -> bool;
    /// Empty it (memory kept).
    fn clear(&mut self);
    /// Bits of payload memory.
    fn bits(&self) -> u64;
    /// Add one occurrence of every key, in order (the structure's batched path where it has
    /// one; one by one otherwise).
    fn insert_all(&mut self, keys: &[u64]) {
        for &k in keys {
            self.insert(k);
        }
    }
}

/// The reference: bloomery's classic filter (count = 0 or 1).
pub struct Classic(pub BloomFilter);
impl Classic {
    /// Sized by the library.
    pub fn new(n: usize, p: f64) -> Self {
        Self(BloomFilter::try_new(n as u64, p).expect("classic"))
    }
    /// (m, k).
    pub fn shape(&self) -> (u64, u32) {
        (self.0.bits(), self.0.hashes())
    }
}
impl Counted for Classic {
    #[inline]
    fn insert(&mut self, k: u64) {
        self.0.insert(&k);
    }
    #[inline]
    fn count(&self, k: u64) -> u64 {
        u64::from(self.0.contains(&k))
    }
    fn remove(&mut self, _: u64) -> bool {
        false
    }
    fn removable(&self) -> bool {
        false
    }
    fn clear(&mut self) {
        self.0.clear()
    }
    fn bits(&self) -> u64 {
        self.0.bits()
    }
}

/// bloomery's blocked counting filter (one cache line per key).
pub struct BlockedCounting(pub BlockedCountingBloomFilter);
impl BlockedCounting {
    /// 4-bit counters, k counters per key, as many lines as the blocked model needs for
    /// `n` items at rate `p` with that k.
    pub fn same_k(n: usize, p: f64, k: u32) -> Self {
        Self(
            BlockedCountingBloomFilter::builder()
                .capacity(n as u64)
                .fpr(p)
                .hashes(k)
                .try_build()
                .expect("blocked counting"),
        )
    }
}
impl Counted for BlockedCounting {
    #[inline]
    fn insert(&mut self, k: u64) {
        self.0.insert(&k);
    }
    #[inline]
    fn count(&self, k: u64) -> u64 {
        Count::count(&self.0, &k)
    }
    #[inline]
    fn remove(&mut self, k: u64) -> bool {
        Remove::remove(&mut self.0, &k).is_ok()
    }
    fn removable(&self) -> bool {
        true
    }
    fn clear(&mut self) {
        self.0.clear()
    }
    fn bits(&self) -> u64 {
        self.0.byte_len() * 8
    }
    fn insert_all(&mut self, keys: &[u64]) {
        self.0.insert_batch(keys);
    }
}

/// bloomery's counting filter.
pub struct Counting(pub CountingBloomFilter);
impl Counting {
    /// m 4-bit counters, k hashes.
    pub fn with_shape(m: u64, k: u32) -> Self {
        Self(CountingBloomFilter::try_with_shape(m, k, 4).expect("counting"))
    }
}
impl Counted for Counting {
    #[inline]
    fn insert(&mut self, k: u64) {
        self.0.insert(&k);
    }
    #[inline]
    fn count(&self, k: u64) -> u64 {
        Count::count(&self.0, &k)
    }
    #[inline]
    fn remove(&mut self, k: u64) -> bool {
        Remove::remove(&mut self.0, &k).is_ok()
    }
    fn removable(&self) -> bool {
        true
    }
    fn clear(&mut self) {
        self.0.clear()
    }
    fn bits(&self) -> u64 {
        self.0.counters().byte_len() * 8
    }
    fn insert_all(&mut self, keys: &[u64]) {
        self.0.insert_batch(keys);
    }
}

/// bloomery's d-left counting filter.
pub struct DLeft(pub DLeftCountingBloomFilter);
impl DLeft {
    /// Sized by the library.
    pub fn new(n: usize, p: f64) -> Self {
        Self(DLeftCountingBloomFilter::try_new(n as u64, p).expect("dlcbf"))
    }
}
impl Counted for DLeft {
    #[inline]
    fn insert(&mut self, k: u64) {
        // a full bucket is an error the benchmark does not expect at the design load
        let _ = self.0.insert(&k);
    }
    #[inline]
    fn count(&self, k: u64) -> u64 {
        Count::count(&self.0, &k)
    }
    #[inline]
    fn remove(&mut self, k: u64) -> bool {
        Remove::remove(&mut self.0, &k).is_ok()
    }
    fn removable(&self) -> bool {
        true
    }
    fn clear(&mut self) {
        let shape = self.0.shape();
        self.0 = DLeftCountingBloomFilter::builder()
            .shape(shape)
            .hasher(*self.0.hasher())
            .try_build()
            .expect("dlcbf");
    }
    fn bits(&self) -> u64 {
        self.0.bit_len()
    }
}

/// bloomery's spectral filter, Minimum Selection.
pub struct Spectral(pub SpectralBloomFilter);
impl Spectral {
    /// m 4-bit counters, k hashes.
    pub fn with_shape(m: u64, k: u32) -> Self {
        Self(
            SpectralBloomFilter::builder()
                .counters(m)
                .hashes(k)
                .counter_width(4)
                .method(SpectralMethod::MinimumSelection)
                .try_build()
                .expect("spectral"),
        )
    }
}
impl Counted for Spectral {
    #[inline]
    fn insert(&mut self, k: u64) {
        self.0.insert(&k);
    }
    #[inline]
    fn count(&self, k: u64) -> u64 {
        Count::count(&self.0, &k)
    }
    #[inline]
    fn remove(&mut self, k: u64) -> bool {
        Remove::remove(&mut self.0, &k).is_ok()
    }
    fn removable(&self) -> bool {
        true
    }
    fn clear(&mut self) {
        self.0.clear()
    }
    fn bits(&self) -> u64 {
        self.0.counters().byte_len() * 8
    }
}

/// bloomery's count-min sketch.
pub struct Cms(pub CountMinSketch);
impl Cms {
    /// Depth [`CMS_DEPTH`] × `width`, plain or conservative.
    pub fn new(width: u64, conservative: bool) -> Self {
        Self(
            CountMinSketch::builder()
                .dimensions(width, CMS_DEPTH)
                .conservative(conservative)
                .try_build()
                .expect("cms"),
        )
    }
    /// Sized by the sketch's own parameters `(ε, δ)`, plain or conservative.
    pub fn with_error(epsilon: f64, delta: f64, conservative: bool) -> Self {
        Self(
            CountMinSketch::builder()
                .error(epsilon, delta)
                .conservative(conservative)
                .try_build()
                .expect("cms"),
        )
    }
    /// (width, depth).
    pub fn shape(&self) -> (u64, u32) {
        (self.0.width(), self.0.depth())
    }
}
impl Counted for Cms {
    #[inline]
    fn insert(&mut self, k: u64) {
        self.0.insert(&k);
    }
    #[inline]
    fn count(&self, k: u64) -> u64 {
        Count::count(&self.0, &k)
    }
    fn remove(&mut self, _: u64) -> bool {
        false
    }
    fn removable(&self) -> bool {
        false
    }
    fn clear(&mut self) {
        self.0.clear()
    }
    fn bits(&self) -> u64 {
        self.0.as_words().len() as u64 * 64
    }
    fn insert_all(&mut self, keys: &[u64]) {
        self.0.insert_batch(keys);
    }
}

/// bloomery's Iterative Bloom Filter.
pub struct Ibf(pub IterativeBloomFilter);
impl Ibf {
    /// m bits, k hashes.
    pub fn with_shape(m: u64, k: u32) -> Self {
        Self(IterativeBloomFilter::try_with_shape(m, k).expect("ibf"))
    }
}
impl Counted for Ibf {
    #[inline]
    fn insert(&mut self, k: u64) {
        self.0.insert(&k);
    }
    #[inline]
    fn count(&self, k: u64) -> u64 {
        Count::count(&self.0, &k)
    }
    fn remove(&mut self, _: u64) -> bool {
        false
    }
    fn removable(&self) -> bool {
        false
    }
    fn clear(&mut self) {
        let (m, k) = (self.0.bits(), self.0.hashes());
        self.0 = IterativeBloomFilter::try_with_shape(m, k).expect("ibf");
    }
    fn bits(&self) -> u64 {
        self.0.bits()
    }
}

/// bloomery's Space-Code Bloom filter.
pub struct Scbf(pub SpaceCodeBloomFilter);
impl Scbf {
    /// Sized by the library for (n, p).
    pub fn new(n: usize, p: f64) -> Self {
        Self(
            SpaceCodeBloomFilter::builder()
                .capacity(n as u64)
                .fpr(p)
                .try_build()
                .expect("scbf"),
        )
    }
}
impl Counted for Scbf {
    #[inline]
    fn insert(&mut self, k: u64) {
        self.0.insert(&k);
    }
    #[inline]
    fn count(&self, k: u64) -> u64 {
        Count::count(&self.0, &k)
    }
    fn remove(&mut self, _: u64) -> bool {
        false
    }
    fn removable(&self) -> bool {
        false
    }
    fn clear(&mut self) {
        let (m, k, l) = (self.0.bits(), self.0.hashes(), self.0.groups());
        self.0 = SpaceCodeBloomFilter::try_with_shape(m, k, l).expect("scbf");
    }
    fn bits(&self) -> u64 {
        self.0.bit_len()
    }
}

/// probabilistic-collections' count-min sketch (SipHash, i64 cells, minimum strategy).
pub struct PcCms(
    pub probabilistic_collections::count_min_sketch::CountMinSketch<CountMinStrategy, u64>,
);
use probabilistic_collections::count_min_sketch::CountMinStrategy;
impl PcCms {
    /// Depth [`CMS_DEPTH`] × `width`.
    pub fn new(width: u64) -> Self {
        Self(
            probabilistic_collections::count_min_sketch::CountMinSketch::new(
                CMS_DEPTH as usize,
                width as usize,
            ),
        )
    }
}
impl Counted for PcCms {
    #[inline]
    fn insert(&mut self, k: u64) {
        self.0.insert(&k, 1);
    }
    #[inline]
    fn count(&self, k: u64) -> u64 {
        self.0.count(&k).max(0) as u64
    }
    #[inline]
    fn remove(&mut self, k: u64) -> bool {
        self.0.remove(&k, 1);
        true
    }
    fn removable(&self) -> bool {
        true
    }
    fn clear(&mut self) {
        self.0.clear()
    }
    fn bits(&self) -> u64 {
        (self.0.rows() * self.0.cols()) as u64 * 64
    }
}

/// probabilistic-collections' Bloom filter (SipHash; its own sizing).
pub struct PcBloom(pub probabilistic_collections::bloom::BloomFilter<u64>);
impl PcBloom {
    /// Sized by the crate for (n, p).
    pub fn new(n: usize, p: f64) -> Self {
        Self(probabilistic_collections::bloom::BloomFilter::new(n, p))
    }
}
impl Counted for PcBloom {
    #[inline]
    fn insert(&mut self, k: u64) {
        self.0.insert(&k);
    }
    #[inline]
    fn count(&self, k: u64) -> u64 {
        u64::from(self.0.contains(&k))
    }
    fn remove(&mut self, _: u64) -> bool {
        false
    }
    fn removable(&self) -> bool {
        false
    }
    fn clear(&mut self) {
        self.0.clear()
    }
    fn bits(&self) -> u64 {
        self.0.len() as u64
    }
}
