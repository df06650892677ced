//! The scalable Bloom filter: [`ScalableBloomFilter`] (its docs say which paper it follows and when
//! to pick it).

use crate::dispatch::{hashed_set_kind, SetStats};
use crate::error::{inconsistent, invalid, Error, Result};
use crate::filter::{shape_mismatch, Build, Builder, Filter, Merge, Stats};
use crate::hash::{Hashed, Key, KeyHasher};
use crate::io::format::{
    self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::kind::Capabilities;
use crate::sets::blocked::{check_layout_shape, BlockLayout, BlockedBloomFilter};
use crate::store;

/// Most sub-filters a scalable filter may hold.
pub const MAX_FILTERS: usize = 64;

/// The scalable Bloom filter: a filter for sets whose size is not known in advance
/// (Almeida, Baquero, Preguiça & Hutchison, "Scalable Bloom Filters", IPL 2007; the growable
/// filter behind RedisBloom's `BF.*`).
///
/// It starts with one sub-filter sized for `n₀` items at rate `ε₀ = ε·(1 - r)`. When the newest
/// sub-filter reaches its capacity a new one is added with `s` times the capacity and `r` times
/// the rate: sub-filter i holds `n₀·sⁱ` items at `ε₀·rⁱ`. A query asks every sub-filter, so the
/// compound rate is at most `Σ ε₀ rⁱ < ε₀ / (1 - r) = ε` however far it grows. Inserts go to
/// the newest sub-filter only, after a membership check, so duplicates are not counted twice.
/// Sub-filters are [`BlockedBloomFilter`]s (each sized by the exact blocked model) and all use
/// one hasher, so a key is hashed once per operation whatever the number of sub-filters.
///
/// Defaults: growth `s = 2`, tightening `r = 0.5` (the RedisBloom defaults). Almeida et al.
/// suggest `r` between 0.8 and 0.9 when many growths are expected: the first sub-filter then
/// costs more bits per item, later ones less.
///
/// **Memory.** A growth that would take the filter past its memory limit is refused
/// ([`Error::TooLarge`] from [`try_insert`](Self::try_insert); [`insert`](Filter::insert) keeps
/// filling the newest sub-filter). The limit is the builder's
/// ([`Builder::max_bytes`], by default the process-wide [`max_bytes`](crate::tuning::max_bytes)); a
/// loaded filter obeys the loading process's limit, lowered by a limit its creator gave the
/// builder explicitly (the only limit a file stores; otherwise it stores `u64::MAX`, none).
/// The growth factor is 1 to [`MAX_GROWTH`](Self::MAX_GROWTH), checked on creation and on
/// load.
///
/// **When to pick it:** when you cannot bound the set size up front (a crawler's seen-set,
/// a blocklist that keeps growing). If you can bound it, a single blocked filter is smaller and
/// faster.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Filter, ScalableBloomFilter, Stats};
///
/// // sized for 1,000 items, given 20,000: it grows and keeps the compound rate under 1%
/// let mut f = ScalableBloomFilter::try_new(1000, 0.01)?;
/// for i in 0..20_000u64 {
///     f.insert(&i);
/// }
/// assert!((0..20_000u64).all(|i| f.contains(&i)));
/// assert!(f.current_fpr() <= 0.01);
/// assert!(f.len() > 19_800); // counts the inserts that set a new bit
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ScalableBloomFilter {
    filters: Vec<BlockedBloomFilter>,
    hasher: KeyHasher,
    initial_capacity: u64,
    fpr: f64,
    growth: u32,
    tightening: f64,
    scaling: bool,
    items: u64,
    /// The limit growth obeys here: the builder's, or on load the smaller of the file's own
    /// limit and the loading process's.
    max_bytes: u64,
    /// The limit stored in the file: one given to the builder explicitly, else `u64::MAX`
    /// (none of its own: the process that loads the file decides).
    own_limit: u64,
}

impl Build for ScalableBloomFilter {
    type Options = ScalableOptions;
    fn build(b: &Builder<Self>) -> Result<Self> {
        let o = &b.opts;
        let b = &b.sizing;
        let (n, p) = b.sized()?;
        let growth = o.growth.unwrap_or(2);
        let tightening = o.tightening.unwrap_or(0.5);
        if !(1..=Self::MAX_GROWTH).contains(&growth) {
            return Err(invalid(
                "growth",
                format!("must be 1 to {}, got {growth}", Self::MAX_GROWTH),
            ));
        }
        if !(tightening > 0.0 && tightening < 1.0) {
            return Err(invalid(
                "tightening",
                format!(
                    "must be strictly between 0 and 1, got {}",
                    crate::params::show(tightening)
                ),
            ));
        }
        let mut f = Self {
            filters: Vec::new(),
            hasher: b.key_hasher(),
            initial_capacity: n,
            fpr: p,
            growth,
            tightening,
            scaling: o.scaling.unwrap_or(true),
            items: 0,
            max_bytes: b.limit(),
            own_limit: b.max_bytes.unwrap_or(u64::MAX),
        };
        f.grow()?;
        Ok(f)
    }
}

/// The settings only a scalable filter's builder has: growth, tightening, scaling.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScalableOptions {
    growth: Option<u32>,
    tightening: Option<f64>,
    scaling: Option<bool>,
}

impl Builder<ScalableBloomFilter> {
    /// Capacity multiplier per new sub-filter (1 to
    /// [`ScalableBloomFilter::MAX_GROWTH`]; default 2).
    ///
    /// ```
    /// use bloomery::ScalableBloomFilter;
    ///
    /// # fn main() -> bloomery::Result<()> {
    /// let f = ScalableBloomFilter::builder()
    ///     .capacity(1000)
    ///     .fpr(0.01)
    ///     .growth(4)
    ///     .tightening(0.8)
    ///     .scaling(true)
    ///     .try_build()?;
    /// assert_eq!((f.growth(), f.tightening()), (4, 0.8));
    /// assert!(ScalableBloomFilter::builder().capacity(1000).fpr(0.01).growth(0).try_build().is_err());
    /// # Ok(()) }
    /// ```
    pub fn growth(mut self, s: u32) -> Self {
        self.opts.growth = Some(s);
        self
    }
    /// Error tightening ratio r in (0, 1) (default 0.5).
    pub fn tightening(mut self, r: f64) -> Self {
        self.opts.tightening = Some(r);
        self
    }
    /// `false` refuses inserts past capacity instead of growing.
    pub fn scaling(mut self, on: bool) -> Self {
        self.opts.scaling = Some(on);
        self
    }
}

impl ScalableBloomFilter {
    /// Move the structure's heap allocations with `mv` (for an allocator that defragments by
    /// moving allocations, as the Redis module's defrag callback does): the list of sub-filters, then each sub-filter's bit array. Arrays in a
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
        unsafe { store::relocate_vec(&mut self.filters, mv) };
        for f in &mut self.filters {
            // SAFETY: as above.
            unsafe { f.relocate_words(mv) };
        }
    }

    /// Largest growth factor `s` accepted, on creation and on load (RedisBloom's bound on
    /// `EXPANSION`). Growth is bounded by the memory limit in any case; this bound keeps one
    /// growth step from asking for an absurd sub-filter.
    pub const MAX_GROWTH: u32 = 32_768;

    /// A builder: capacity and fpr are required; growth, tightening and scaling optional.
    pub fn builder() -> Builder<Self> {
        Builder::new()
    }

    /// Initial capacity `n`, compound rate `p`, default growth 2 and tightening 0.5.
    pub fn try_new(n: u64, p: f64) -> Result<Self> {
        Self::builder().capacity(n).fpr(p).try_build()
    }

    fn sub_params(&self, i: usize) -> Result<(u64, f64)> {
        let cap = u64::from(self.growth)
            .checked_pow(i as u32)
            .and_then(|g| g.checked_mul(self.initial_capacity))
            .ok_or(Error::TooLarge {
                requested: u64::MAX,
                limit: self.max_bytes,
            })?;
        let fpr = self.fpr * (1.0 - self.tightening) * self.tightening.powi(i as i32);
        Ok((cap, fpr))
    }

    fn grow(&mut self) -> Result<()> {
        let i = self.filters.len();
        if i >= MAX_FILTERS {
            return Err(Error::TooLarge {
                requested: u64::MAX,
                limit: self.max_bytes,
            });
        }
        let (cap, fpr) = self.sub_params(i)?;
        if fpr < 1e-15 {
            return Err(invalid(
                "tightening",
                "sub-filter error rate fell below 1e-15",
            ));
        }
        let used = self.allocated_bytes();
        let f = BlockedBloomFilter::builder()
            // a filter grows in the positions layout (the one RedisBloom-style BF values hold)
            .layout(BlockLayout::Positions)
            .capacity(cap)
            .fpr(fpr)
            .hasher(self.hasher)
            .max_bytes(self.max_bytes.saturating_sub(used))
            .try_build()
            .map_err(|e| crate::store::whole_after_growth(e, used, self.max_bytes))?;
        // one sub-filter at a time: the list holds exactly what it needs (memory reports count it)
        self.filters.reserve_exact(1);
        self.filters.push(f);
        Ok(())
    }

    /// Insert, refusing with [`Error::Full`] when the filter is non-scaling and at capacity, or
    /// with the growth error when a new sub-filter cannot be allocated (see
    /// [`Filter::try_insert_hashed`]).
    fn insert_checked(&mut self, h: Hashed) -> Result<bool> {
        if self.contains_hashed(h) {
            return Ok(false);
        }
        let last = self
            .filters
            .last()
            .map(|f| (f.len(), f.capacity()))
            .unwrap_or((0, 0));
        if last.0 >= last.1 {
            if !self.scaling {
                return Err(Error::Full {
                    capacity: self.initial_capacity,
                });
            }
            self.grow()?;
        }
        self.push_hashed(h);
        Ok(true)
    }

    fn push_hashed(&mut self, h: Hashed) {
        if let Some(f) = self.filters.last_mut() {
            f.insert_hashed(h);
        }
        self.items = self.items.saturating_add(1);
    }

    /// A non-scaling filter of one given sub-filter (a shard of a sharded filter, see
    /// [`crate::shard`]), sized for `capacity` items at `fpr`; its item count is the
    /// sub-filter's.
    pub(crate) fn single(filter: BlockedBloomFilter, capacity: u64, fpr: f64) -> Self {
        Self {
            hasher: *filter.hasher(),
            items: filter.len(),
            filters: vec![filter],
            initial_capacity: capacity.max(1),
            fpr,
            growth: 2,
            tightening: 0.5,
            scaling: false,
            max_bytes: store::max_bytes(),
            own_limit: u64::MAX,
        }
    }

    /// Sub-filters, oldest first.
    pub fn filters(&self) -> &[BlockedBloomFilter] {
        &self.filters
    }

    /// Initial capacity.
    pub fn initial_capacity(&self) -> u64 {
        self.initial_capacity
    }

    /// Total capacity before the next growth.
    pub fn capacity(&self) -> u64 {
        // saturating: sub-filter capacities come from files and may be absurd
        self.filters
            .iter()
            .fold(0u64, |sum, f| sum.saturating_add(f.capacity()))
    }

    /// The compound target rate.
    pub fn target_fpr(&self) -> f64 {
        self.fpr
    }

    /// Growth factor s.
    pub fn growth(&self) -> u32 {
        self.growth
    }

    /// Tightening ratio r.
    pub fn tightening(&self) -> f64 {
        self.tightening
    }

    /// Whether it grows.
    pub fn is_scaling(&self) -> bool {
        self.scaling
    }

    /// Bits over all sub-filters.
    pub fn bit_len(&self) -> u64 {
        self.filters.iter().map(|f| f.bit_len()).sum()
    }

    /// Bytes of bit arrays over all sub-filters.
    pub fn allocated_bytes(&self) -> u64 {
        self.bit_len() / 8
    }

    /// Set bits over all sub-filters.
    pub fn count_ones(&self) -> u64 {
        self.filters.iter().map(|f| f.count_ones()).sum()
    }

    /// The rate implied by the current contents: `1 - Π(1 - fᵢ)`.
    pub fn current_fpr(&self) -> f64 {
        1.0 - self
            .filters
            .iter()
            .map(|f| 1.0 - f.current_fpr())
            .product::<f64>()
    }

    /// Hint the CPU to fetch a pre-hashed key's block in every sub-filter (the blocks an
    /// insert or a query of it reads), so that streaming callers (hash a key, insert it a few
    /// keys later) overlap cache misses.
    #[inline]
    pub fn prefetch_hashed(&self, h: Hashed) {
        for f in &self.filters {
            f.prefetch_hashed(h);
        }
    }

    /// Query many keys, overlapping their cache misses: each key is hashed once, then each
    /// sub-filter (newest first) answers the keys not yet found through its batched query,
    /// which prefetches each key's block ahead of its probe
    /// ([`BlockedBloomFilter::contains_hashed_batch`]). Writes one answer per key into `out`:
    /// the answers of [`contains`](Filter::contains).
    ///
    /// ```
    /// use bloomery::{Filter, ScalableBloomFilter};
    ///
    /// # fn main() -> bloomery::Result<()> {
    /// let mut f = ScalableBloomFilter::try_new(100, 0.01)?;
    /// for i in 0..1000u32 {
    ///     f.insert(&i); // grows past its first sub-filter
    /// }
    /// let keys: Vec<u32> = (0..2000).collect();
    /// let mut out = vec![false; keys.len()];
    /// f.contains_batch(&keys, &mut out)?;
    /// assert!(out[..1000].iter().all(|&hit| hit));
    /// assert!(keys.iter().zip(&out).all(|(k, &hit)| hit == f.contains(k)));
    /// # Ok(()) }
    /// ```
    pub fn contains_batch<K: Key>(&self, keys: &[K], out: &mut [bool]) -> Result<()> {
        let hashes: Vec<Hashed> = keys.iter().map(|k| self.hasher.hash(k)).collect();
        self.contains_hashed_batch(&hashes, out)
    }

    /// [`contains_batch`](Self::contains_batch) over keys already hashed with this filter's
    /// [`hasher`](Filter::hasher).
    pub fn contains_hashed_batch(&self, hashes: &[Hashed], out: &mut [bool]) -> Result<()> {
        if hashes.len() != out.len() {
            return Err(invalid("out", "must have one slot per key"));
        }
        out.fill(false);
        let mut sub = self.filters.iter().rev();
        // the newest sub-filter answers every key (the only one, until the filter grows)
        let Some(newest) = sub.next() else {
            return Ok(());
        };
        newest.contains_hashed_batch(hashes, out)?;
        // the older ones, each for the keys still not found: their indexes, their hashes
        let mut open: Vec<usize> = (0..hashes.len()).filter(|&i| !out[i]).collect();
        let (mut asked, mut found) = (Vec::new(), Vec::new());
        for f in sub {
            if open.is_empty() {
                break;
            }
            asked.clear();
            asked.extend(open.iter().map(|&i| hashes[i]));
            found.clear();
            found.resize(asked.len(), false);
            f.contains_hashed_batch(&asked, &mut found)?;
            // `retain` visits the keys in order, as `found` holds their answers
            let mut hits = found.iter();
            open.retain(|&i| {
                let hit = hits.next().copied().unwrap_or(false);
                out[i] |= hit;
                !hit
            });
        }
        Ok(())
    }

    /// Estimated distinct items: the sum of the sub-filters' estimates.
    pub fn estimated_len(&self) -> f64 {
        self.filters.iter().map(|f| f.estimated_len()).sum()
    }
}

impl Filter for ScalableBloomFilter {
    #[inline]
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// Inserts; when growth is impossible (non-scaling, or out of memory budget) the key still
    /// goes into the newest sub-filter — never lost, at the price of a rate above target. Use
    /// [`try_insert`](Filter::try_insert) to be told instead.
    fn insert_hashed(&mut self, h: Hashed) -> bool {
        match self.insert_checked(h) {
            Ok(new) => new,
            Err(_) => {
                self.push_hashed(h);
                true
            }
        }
    }

    #[inline]
    fn contains_hashed(&self, h: Hashed) -> bool {
        // newest first: it holds the most items
        self.filters.iter().rev().any(|f| f.contains_hashed(h))
    }

    fn len(&self) -> u64 {
        self.items
    }

    /// Refuses with [`Error::Full`] when the filter is non-scaling and at capacity, and with
    /// the growth error when a new sub-filter cannot be allocated; nothing is inserted then.
    fn try_insert_hashed(&mut self, h: Hashed) -> Result<bool> {
        self.insert_checked(h)
    }
}

impl Merge for ScalableBloomFilter {
    /// Union of two scalable filters with the same sub-filter shapes.
    fn union_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        for (a, b) in self.filters.iter_mut().zip(&other.filters) {
            a.union_with(b)?;
        }
        self.items = self.items.max(other.items);
        Ok(())
    }

    /// Sub-filter-wise AND, for filters that have not grown (one sub-filter each). Once a
    /// filter has grown, a key can sit in sub-filter 0 of one and sub-filter 2 of the other,
    /// and the sub-filter-wise AND would lose it (a false negative): refused.
    fn intersect_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        if self.filters.len() > 1 {
            return Err(Error::Unsupported(format!(
                "intersecting scalable filters that have grown ({} sub-filters): a key in \
                 different sub-filters of the two would be lost",
                self.filters.len()
            )));
        }
        for (a, b) in self.filters.iter_mut().zip(&other.filters) {
            a.intersect_with(b)?;
        }
        // each sub-filter's items are now its inner-product estimate (Broder & Mitzenmacher §2.4)
        let est: u64 = self.filters.iter().map(|f| f.len()).sum();
        self.items = est.min(self.items.min(other.items));
        Ok(())
    }
}

impl ScalableBloomFilter {
    /// Union with a filter made with the same parameters (initial capacity, rate, growth,
    /// tightening, scaling and hashing) that may have grown to more or fewer sub-filters:
    /// sub-filters present in both are OR-ed, and those only `other` has are copied, so the
    /// result answers true for every key of either. [`Merge::union_with`] asks for the same
    /// number of sub-filters; this is the union of two filters reserved alike that grew
    /// differently. The item count becomes the larger of the two (a lower bound). Fails,
    /// changing nothing, when the parameters or a shared sub-filter's shape differ, or when
    /// the copied sub-filters would take the filter past its memory limit.
    ///
    /// ```
    /// use bloomery::{Filter, ScalableBloomFilter};
    ///
    /// # fn main() -> bloomery::Result<()> {
    /// let mut a = ScalableBloomFilter::try_new(100, 0.01)?;
    /// let mut b = ScalableBloomFilter::try_new(100, 0.01)?;
    /// for i in 0..50u32 {
    ///     a.try_insert(&i)?;
    /// }
    /// for i in 1000..1500u32 {
    ///     b.try_insert(&i)?; // grows to several sub-filters
    /// }
    /// a.union_grown(&b)?;
    /// assert_eq!(a.filters().len(), b.filters().len());
    /// assert!((0..50u32).chain(1000..1500).all(|i| a.contains(&i)));
    /// # Ok(()) }
    /// ```
    pub fn union_grown(&mut self, other: &Self) -> Result<()> {
        let params = |f: &Self| {
            format!(
                "initial capacity {}, rate {}, growth {}, tightening {}, {}",
                f.initial_capacity,
                f.fpr,
                f.growth,
                f.tightening,
                if f.scaling { "scaling" } else { "non-scaling" }
            )
        };
        if params(self) != params(other) {
            return Err(shape_mismatch(params(self), params(other)));
        }
        if self.hasher != other.hasher {
            return Err(Error::Incompatible(crate::error::Incompatibility::Hashing));
        }
        for (i, (a, b)) in self.filters.iter().zip(&other.filters).enumerate() {
            if (a.blocks(), a.hashes()) != (b.blocks(), b.hashes()) {
                return Err(shape_mismatch(
                    format!(
                        "sub-filter {i}: {} blocks, {} hashes",
                        a.blocks(),
                        a.hashes()
                    ),
                    format!(
                        "sub-filter {i}: {} blocks, {} hashes",
                        b.blocks(),
                        b.hashes()
                    ),
                ));
            }
        }
        let common = self.filters.len().min(other.filters.len());
        let extra = &other.filters[common..];
        let needed = self
            .allocated_bytes()
            .saturating_add(extra.iter().map(|f| f.bit_len() / 8).sum());
        if needed > self.max_bytes {
            return Err(Error::TooLarge {
                requested: needed,
                limit: self.max_bytes,
            });
        }
        for (a, b) in self.filters.iter_mut().zip(&other.filters) {
            a.union_with(b)?;
        }
        if !extra.is_empty() {
            self.filters.extend(extra.iter().cloned());
            self.filters.shrink_to_fit();
        }
        self.items = self.items.max(other.items);
        Ok(())
    }

    fn check_compatible(&self, other: &Self) -> Result<()> {
        let shape = |f: &Self| {
            f.filters
                .iter()
                .map(|s| (s.blocks(), s.hashes()))
                .collect::<Vec<_>>()
        };
        if shape(self) != shape(other) {
            return Err(shape_mismatch(
                format!("{} sub-filters {:?}", self.filters.len(), shape(self)),
                format!("{} sub-filters {:?}", other.filters.len(), shape(other)),
            ));
        }
        if self.hasher != other.hasher {
            return Err(Error::Incompatible(crate::error::Incompatibility::Hashing));
        }
        Ok(())
    }
}

/// A sub-filter's block layout in the optional layouts trailer of the parameters (the
/// sharded filter's descriptor uses the same ids).
pub(crate) fn layout_id(layout: BlockLayout) -> u8 {
    match layout {
        BlockLayout::Positions => 0,
        BlockLayout::Sectors => 1,
        // Salted256 never held: `shard` refuses such files, and the loader refuses the id
        BlockLayout::Salted => 2,
        BlockLayout::Salted256 => 3,
    }
}

/// The block layout of a trailer id; an unknown id is a format error.
pub(crate) fn layout_of_id(id: u8) -> Result<BlockLayout> {
    match id {
        0 => Ok(BlockLayout::Positions),
        1 => Ok(BlockLayout::Sectors),
        2 => Ok(BlockLayout::Salted),
        other => Err(inconsistent(format!(
            "unknown sub-filter block layout {other}"
        ))),
    }
}

/// Parameters (kind `scalable`): `u64` initial capacity, `f64` rate, `u32` growth, `f64`
/// tightening, `u8` scaling, `u64` own memory limit, `u32` sub-filter count, then per
/// sub-filter `u64` blocks, `u32` k, `u64` capacity, `f64` rate, `u64` items; then, only when
/// some sub-filter is not in the positions layout (a sharded filter's shard cut from a sectors
/// or salted file, [`crate::shard`]), one layout byte per sub-filter (0 positions, 1 sectors,
/// 2 salted). Without the trailer every sub-filter has the positions layout, so the bytes of
/// every filter made by growth are what they always were. The loader checks each sub-filter's
/// shape against its layout before it reads the payload (sectors and salted: k = 8; salted: at
/// most 2^32 blocks and a hasher the layout takes), and refuses an unknown layout byte: a
/// reader that predates a layout refuses its values rather than reading their bits in
/// another layout.
impl Persist for ScalableBloomFilter {
    const KIND: Kind = Kind::Scalable;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut w = ParamWriter::new()
            .u64(self.initial_capacity)
            .f64(self.fpr)
            .u32(self.growth)
            .f64(self.tightening)
            .u8(u8::from(self.scaling))
            .u64(self.own_limit)
            .u32(self.filters.len() as u32);
        for f in &self.filters {
            w = w
                .u64(f.blocks())
                .u32(f.hashes())
                .u64(f.capacity())
                .f64(f.target_fpr())
                .u64(f.len());
        }
        // sub-filter layouts: a trailer only when one is not the positions layout, so that a
        // filter of positions sub-filters writes the bytes it always wrote
        if self
            .filters
            .iter()
            .any(|f| f.layout() != BlockLayout::Positions)
        {
            for f in &self.filters {
                w = w.u8(layout_id(f.layout()));
            }
        }
        let mut h = Header::new(Kind::Scalable, self.hasher);
        h.items = self.items;
        h.capacity = self.initial_capacity;
        h.target_fpr = self.fpr;
        h.params = w.finish();
        (
            h,
            Payload::new(self.filters.iter().map(|f| f.words_any_layout()).collect()),
        )
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let initial_capacity = r.u64()?;
        let fpr = r.f64()?;
        let growth = r.u32()?;
        let tightening = r.f64()?;
        let scaling = r.u8()?;
        let own_limit = r.u64()?;
        let count = r.u32()? as usize;
        if !(1..=Self::MAX_GROWTH).contains(&growth) {
            return Err(inconsistent(format!(
                "scalable growth {growth} is out of range (1 to {})",
                Self::MAX_GROWTH
            )));
        }
        if initial_capacity == 0
            || !(fpr > 0.0 && fpr < 1.0)
            || !(tightening > 0.0 && tightening < 1.0)
            || scaling > 1
            || count == 0
            || count > MAX_FILTERS
        {
            return Err(inconsistent("scalable parameters out of range"));
        }
        // every sub-filter's parameters, then the optional layouts trailer (one byte per
        // sub-filter), all checked before any payload is read
        let mut subs = Vec::with_capacity(count);
        for _ in 0..count {
            subs.push((r.u64()?, r.u32()?, r.u64()?, r.f64()?, r.u64()?));
        }
        let mut layouts = vec![BlockLayout::Positions; count];
        if !r.is_done() {
            for l in layouts.iter_mut() {
                *l = layout_of_id(r.u8()?)?;
            }
        }
        r.finish()?;
        for (&(blocks, k, ..), &layout) in subs.iter().zip(&layouts) {
            check_layout_shape(layout, blocks, k, &d.header.hasher)?;
        }
        let mut filters = Vec::with_capacity(count);
        let mut offset = d.payload_offset;
        let mut total = 0u64;
        for ((blocks, k, capacity, sub_fpr, items), layout) in subs.into_iter().zip(layouts) {
            let words = blocks
                .checked_mul(8)
                .and_then(|w| usize::try_from(w).ok())
                .ok_or_else(|| inconsistent("too many blocks"))?;
            total = total.saturating_add(format::padded_len(words));
            if total > d.payload_len as u64 {
                return Err(inconsistent("sub-filters exceed the payload"));
            }
            let w = src.words(offset, words, limit)?;
            offset += format::padded_len(words) as usize;
            let f = BlockedBloomFilter::from_parts(
                blocks,
                k,
                d.header.hasher,
                w,
                items,
                capacity,
                sub_fpr,
            )?;
            filters.push(if layout == BlockLayout::Positions {
                f
            } else {
                f.in_layout(layout)?
            });
        }
        if total != d.payload_len as u64 {
            return Err(inconsistent("payload longer than the sub-filters"));
        }
        if src.copies() {
            // a mapped file's sub-filters are its pages, not the heap the limit bounds
            store::check_size(total, limit)?;
        }
        Ok(Self {
            filters,
            hasher: d.header.hasher,
            initial_capacity,
            fpr,
            growth,
            tightening,
            scaling: scaling == 1,
            items: d.header.items,
            // growth obeys the loading process's limit, whatever the file says; a limit the
            // creator gave explicitly (stored in the file) can only lower it
            max_bytes: own_limit.min(limit),
            own_limit,
        })
    }
}

impl<K: Key> Extend<K> for ScalableBloomFilter {
    fn extend<I: IntoIterator<Item = K>>(&mut self, iter: I) {
        for k in iter {
            self.insert(&k);
        }
    }
}

impl crate::dispatch::SetKind for ScalableBloomFilter {
    const CAPABILITIES: Capabilities = Capabilities {
        insert: true,
        hashed: true,
        merge: true,
        ..Capabilities::NONE
    };
    hashed_set_kind!();
    fn prefetch_hashed(&self, h: Hashed) {
        ScalableBloomFilter::prefetch_hashed(self, h)
    }
    fn stats(&self) -> SetStats {
        SetStats {
            bits: self.bit_len(),
            hashes: 0,
            ones: self.count_ones(),
            current_fpr: self.current_fpr(),
            capacity: self.capacity(),
            target_fpr: self.target_fpr(),
            estimated_items: self.estimated_len(),
            sub_filters: self.filters().len(),
            layers: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Grown filters would lose a key that sits in different sub-filters of the two sides,
    /// so their intersection is refused; filters that have not grown intersect.
    #[test]
    fn intersection_of_grown_filters_is_refused() {
        let mut a = ScalableBloomFilter::try_new(100, 0.01).unwrap();
        let mut b = ScalableBloomFilter::try_new(100, 0.01).unwrap();
        // key 0 is among the first of a (sub-filter 0) and the last of b (a later one)
        for i in 0..400u64 {
            a.insert(&i);
            b.insert(&(1000 + i));
        }
        b.insert(&0u64);
        assert!(a.filters().len() > 1 && a.filters().len() == b.filters().len());
        let e = a.clone().intersect_with(&b).unwrap_err();
        assert!(e.to_string().contains("grown"), "{e}");
        let mut x = ScalableBloomFilter::try_new(1000, 0.01).unwrap();
        let mut y = ScalableBloomFilter::try_new(1000, 0.01).unwrap();
        for i in 0..300u64 {
            x.insert(&i);
            y.insert(&(i + 150));
        }
        x.intersect_with(&y).unwrap();
        assert!((150..300u64).all(|i| x.contains(&i)));
        assert!(x.len().abs_diff(150) < 30, "{}", x.len());
    }

    #[test]
    fn grows_and_keeps_everything() {
        let mut f = ScalableBloomFilter::try_new(100, 0.01).unwrap();
        for i in 0..5000u32 {
            f.insert(&i);
        }
        assert!(f.filters().len() > 3);
        assert!((0..5000u32).all(|i| f.contains(&i)));
        let g = ScalableBloomFilter::from_bytes(&f.to_bytes()).unwrap();
        assert_eq!(f, g);
    }

    #[test]
    fn non_scaling_refuses_when_full() {
        let mut f = ScalableBloomFilter::builder()
            .capacity(10)
            .fpr(0.01)
            .scaling(false)
            .try_build()
            .unwrap();
        let mut refused = false;
        for i in 0..100u32 {
            if let Err(Error::Full { .. }) = f.try_insert(&i) {
                refused = true;
            }
        }
        assert!(refused);
        assert_eq!(f.filters().len(), 1);
    }
}
