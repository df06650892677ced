//! The counting Bloom filter: [`CountingBloomFilter`] (its docs say which paper it follows and when
//! to pick it).

use crate::counters::{self, Counters};
use crate::error::{inconsistent, invalid, Result};
use crate::filter::{
    shape_mismatch, Build, Builder, Count, Filter, Merge, Remove, RemoveError, Sizing, Stats,
};
use crate::hash::{Hashed, KeyHasher};
use crate::io::format::{self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist};
use crate::kind::Capabilities;
use crate::multisets::counter_kind::counting_filter_kind;
use crate::params;
use crate::sets::classic::BloomFilter;
use crate::store::{self, Pipeline, Words};

/// The default counter width in bits (Broder & Mitzenmacher §2.5: four bits suffice for most applications).
pub const DEFAULT_COUNTER_WIDTH: u32 = 4;

/// How many keys ahead the pipelined inserts hash and prefetch.
pub const INSERT_AHEAD: usize = 8;

/// Largest k accepted (the same as the classic filter's, so conversion always works).
pub const MAX_HASHES: u32 = crate::sets::classic::MAX_HASHES;

/// The counting Bloom filter: m small counters instead of m bits, so keys can be removed
/// (Broder & Mitzenmacher §2.5, after Fan et al.'s summary cache; Salman §5).
///
/// A key increments the counters at its k positions (the same positions a
/// [`BloomFilter`] of the same m, k and hasher sets); removing it decrements them; a query
/// answers "maybe" when all k are non-zero, and the minimum of the k counters is an estimate
/// of how many times the key was inserted that is never below the truth while no counter has
/// saturated.
///
/// **Counters** are packed w-bit fields (`counters`; w = 1..=32, default 4 as the
/// paper advises: with `k = (m/n) ln 2` the probability that any counter reaches 16 is at most
/// `1.37e-15·m`, [`params::counter_overflow_bound`]). They **saturate**: a counter at `2^w - 1`
/// stays there on insert, and is never decremented on remove, because its true value is no
/// longer known — it may be far above the maximum, and decrementing it could later bring it to
/// zero while keys that map to it are still present, a false negative. A saturated counter only
/// costs false positives. [`CountingBloomFilter::saturated_counters`] reports how many there are.
///
/// **Removal never creates false negatives by mistake:** removing a key with any zero counter
/// is refused with [`RemoveError::NotPresent`] and changes nothing (deleting an absent item is
/// what breaks other keys in naive implementations). A key that was never inserted but whose
/// counters are all non-zero (a false positive) cannot be told apart from a present one;
/// removing such a key is the caller's error and can create false negatives, as with every
/// counting filter — remove only keys you inserted.
///
/// **Broadcasting:** [`CountingBloomFilter::to_bloom_filter`] gives the plain filter of the
/// same shape (a bit is set where a counter is non-zero), as the summary-cache protocol of
/// Broder & Mitzenmacher §4 keeps a counting filter locally and sends the plain one to its peers.
///
/// **When to pick it:** a set with deletions where w times the memory of a plain filter is
/// affordable. For less memory per item at the same rate, see
/// [`crate::multisets::dleft::DLeftCountingBloomFilter`]; for frequency estimates of a stream without
/// deletions, [`crate::multisets::count_min::CountMinSketch`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Count, CountingBloomFilter, Filter, Remove};
///
/// let mut f = CountingBloomFilter::try_new(1000, 0.01)?;
/// f.insert("a");
/// f.insert("a");
/// assert_eq!(f.count("a"), 2);
/// f.remove("a")?;
/// assert!(f.contains("a"));
/// f.remove("a")?;
/// assert!(!f.contains("a"));
/// assert!(f.remove("never inserted").is_err()); // refused: it would create false negatives
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CountingBloomFilter {
    counters: Counters,
    hasher: KeyHasher,
    k: u32,
    items: u64,
    capacity: u64,
    target_fpr: f64,
}

/// Builder for [`CountingBloomFilter`]: `CountingBloomFilter::builder().capacity(n).fpr(p)
/// .counter_width(4).try_build()`.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Count, CountingBloomFilter, Filter, Remove};
///
/// let mut f = CountingBloomFilter::builder().capacity(1000).fpr(0.01).counter_width(8).try_build()?;
/// f.insert("k");
/// f.remove("k")?;
/// assert_eq!(f.count("k"), 0);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct CountingBuilder {
    sizing: Sizing,
    width: u32,
}

impl Default for CountingBuilder {
    fn default() -> Self {
        Self {
            sizing: Sizing::default(),
            width: DEFAULT_COUNTER_WIDTH,
        }
    }
}

impl CountingBuilder {
    crate::filter::sizing_setters!();

    /// An exact number of counters (m), overriding the sizing.
    pub fn counters(mut self, m: u64) -> Self {
        self.sizing.bits = Some(m);
        self
    }
    /// An exact number of hash functions (k).
    pub fn hashes(mut self, k: u32) -> Self {
        self.sizing.hashes = Some(k);
        self
    }
    /// Bits per counter, 1..=32 (default 4). Size it for the largest count you expect with
    /// [`params::counter_bits_for`] and [`params::max_count_for_skew`] (Matsumoto, Hazeyama & Kadobayashi Table 5).
    pub fn counter_width(mut self, w: u32) -> Self {
        self.width = w;
        self
    }

    /// Build, validating every parameter.
    pub fn try_build(self) -> Result<CountingBloomFilter> {
        let sized = || self.sizing.sized();
        let (m, k, n, p) = match (self.sizing.bits, self.sizing.hashes) {
            (Some(m), Some(k)) => (
                m,
                k,
                self.sizing.capacity.unwrap_or(0),
                self.sizing.fpr.unwrap_or(0.0),
            ),
            (Some(m), None) => {
                let n = self.sizing.capacity.ok_or_else(|| {
                    invalid(
                        "hashes",
                        "give the hash count or a capacity with the counters",
                    )
                })?;
                params::check_capacity(n)?;
                (
                    m,
                    params::optimal_k(n, m),
                    n,
                    self.sizing.fpr.unwrap_or(0.0),
                )
            }
            (None, k) => {
                let (n, p) = sized()?;
                let bytes = params::bits_asymptotic(n, p) * f64::from(self.width.min(64)) / 8.0;
                store::check_size(bytes as u64, self.sizing.limit())?;
                let s = params::classic_shape(n, p)?;
                (s.m, k.unwrap_or(s.k), n, p)
            }
        };
        let mut f = CountingBloomFilter::with_parts(
            m,
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

impl CountingBloomFilter {
    /// Move the structure's heap allocations with `mv` (for an allocator that defragments by
    /// moving allocations, as the Redis module's defrag callback does): the counters. Arrays in a
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
        unsafe { self.counters.relocate(mv) };
    }

    /// The hasher keys go through (what [`Filter::hasher`](crate::filter::Filter::hasher) and
    /// [`Count::hasher`](crate::filter::Count::hasher) answer; inherent, so that a call
    /// needs neither trait in scope and is not ambiguous with both).
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// Counter width used when none is given (bits).
    pub const DEFAULT_COUNTER_WIDTH: u32 = DEFAULT_COUNTER_WIDTH;

    /// A builder.
    pub fn builder() -> CountingBuilder {
        CountingBuilder::default()
    }

    /// Sized for `n` items at false-positive rate `p` with 4-bit counters.
    pub fn try_new(n: u64, p: f64) -> Result<Self> {
        Self::builder().capacity(n).fpr(p).try_build()
    }

    /// An exact shape: `m` counters of `width` bits, `k` hashes, default hasher.
    pub fn try_with_shape(m: u64, k: u32, width: u32) -> Result<Self> {
        Self::with_parts(m, k, width, KeyHasher::new(), store::max_bytes())
    }

    fn with_parts(m: u64, k: u32, width: u32, hasher: KeyHasher, limit: u64) -> Result<Self> {
        if m == 0 {
            return Err(invalid("counters", "must be at least 1"));
        }
        params::check_hashes(k, MAX_HASHES)?;
        Ok(Self {
            counters: Counters::zeroed(m, width, limit)?,
            hasher,
            k,
            items: 0,
            capacity: 0,
            target_fpr: 0.0,
        })
    }

    /// Counters (m).
    pub fn counter_len(&self) -> u64 {
        self.counters.len()
    }

    /// Bits per counter (w).
    pub fn counter_width(&self) -> u32 {
        self.counters.width()
    }

    /// Hash functions (k).
    pub fn hashes(&self) -> u32 {
        self.k
    }

    /// The counters (read-only).
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Counters stuck at their maximum `2^w - 1` (never decremented again; see the module
    /// docs). More than a few means the width is too small for the counts.
    pub fn saturated_counters(&self) -> u64 {
        self.counters.count_saturated()
    }

    /// True when the counters are a read-only view of a mapped file.
    pub fn is_mapped(&self) -> bool {
        self.counters.is_mapped()
    }

    /// Remove every item.
    pub fn clear(&mut self) {
        self.counters.clear();
        self.items = 0;
    }

    /// Insert `n` occurrences of a pre-hashed key at once (each counter saturating).
    #[inline]
    pub fn insert_many_hashed(&mut self, h: Hashed, n: u32) -> bool {
        let (k, m) = (self.k, self.counters.len());
        // SAFETY: `indices` reduces into [0, m) and m is the counters' length.
        let new = unsafe { self.counters.view_mut().add_each(h.indices(k, m), n) };
        self.items = self.items.saturating_add(u64::from(n));
        new
    }

    /// Insert `n` occurrences of a key at once (each counter saturating); true when the key
    /// was new (a counter was zero). The same call as [`CountMinSketch::insert_many`](crate::CountMinSketch::insert_many).
    pub fn insert_many<K: crate::hash::Key + ?Sized>(&mut self, key: &K, n: u32) -> bool {
        let h = self.hasher.hash(key);
        self.insert_many_hashed(h, n)
    }

    /// Hint the CPU to fetch the words of the key's k counters ahead of an insert, a count or
    /// a remove (for streaming callers; see [`insert_hashed_pipelined`](Self::insert_hashed_pipelined)).
    #[inline]
    pub fn prefetch_hashed(&self, h: Hashed) {
        let (w, width) = (self.counters.words().as_slice(), self.counters.width());
        for i in h.indices(self.k, self.counters.len()) {
            store::prefetch(w, (i * u64::from(width) / 64) as usize);
        }
    }

    /// Insert a stream of pre-hashed keys through a software pipeline: each key's counters
    /// are prefetched `INSERT_AHEAD` keys before it is inserted, so the cache misses of
    /// consecutive keys overlap (for filters larger than the cache). The result is identical
    /// to inserting them one by one; returns how many keys had a zero counter (were new).
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

    /// Insert every key of `keys` through [`insert_hashed_pipelined`](Self::insert_hashed_pipelined)
    /// (identical to inserting them one by one); returns how many were new.
    pub fn insert_batch<K: crate::hash::Key>(&mut self, keys: &[K]) -> u64 {
        let hasher = self.hasher;
        self.insert_hashed_pipelined(keys.iter().map(|k| hasher.hash(k)))
    }

    /// The plain Bloom filter of the same m, k and hasher: bit i is set where counter i is
    /// non-zero, so it answers `contains` exactly as this filter does (Broder & Mitzenmacher §4, summary cache).
    /// It is built in memory, within the process's memory limit ([`crate::tuning::max_bytes`]): a
    /// larger one is [`Error::TooLarge`](crate::Error::TooLarge), before anything is allocated.
    pub fn to_bloom_filter(&self) -> Result<BloomFilter> {
        use crate::io::format::Persist as _;
        let m = self.counters.len();
        let words =
            usize::try_from(m.div_ceil(64)).map_err(|_| invalid("counters", "too large"))?;
        let mut bits = Words::zeroed(words, crate::store::max_bytes())?;
        {
            let w = bits.as_mut_slice();
            for i in 0..m {
                if self.counters.get(i) != 0 {
                    store::set_bit(w, i);
                }
            }
        }
        let mut h = Header::new(Kind::Classic, self.hasher);
        h.items = self.items;
        h.capacity = self.capacity;
        h.target_fpr = self.target_fpr;
        h.params = ParamWriter::new().u64(m).u32(self.k).finish();
        let mut bytes = Vec::new();
        format::write(&h, &Payload::new(vec![&bits]), &mut bytes)?;
        BloomFilter::from_bytes(&bytes)
    }

    fn check_compatible(&self, other: &Self) -> Result<()> {
        if self.counters.len() != other.counters.len()
            || self.k != other.k
            || self.counters.width() != other.counters.width()
        {
            return Err(shape_mismatch(
                format!(
                    "m={} k={} w={}",
                    self.counters.len(),
                    self.k,
                    self.counters.width()
                ),
                format!(
                    "m={} k={} w={}",
                    other.counters.len(),
                    other.k,
                    other.counters.width()
                ),
            ));
        }
        if self.hasher != other.hasher {
            return Err(crate::error::Error::Incompatible(
                crate::error::Incompatibility::Hashing,
            ));
        }
        Ok(())
    }
}

/// The shared [`Builder`] sizing goes to this structure's own builder (bits: the number of
/// counters or bits; every other setting at its default).
impl Build for CountingBloomFilter {
    type Options = ();
    fn build(b: &Builder<Self>) -> Result<Self> {
        CountingBloomFilter::builder().sizing(b.sizing).try_build()
    }
}

impl Filter for CountingBloomFilter {
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

impl Count for CountingBloomFilter {
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// The minimum of the key's counters: never below the true count unless one of its
    /// counters saturated.
    #[inline]
    fn count_hashed(&self, h: Hashed) -> u64 {
        let (k, m) = (self.k, self.counters.len());
        // SAFETY: `indices` reduces into [0, m) and m is the counters' length.
        u64::from(unsafe { self.counters.view().min_of(h.indices(k, m)) })
    }
}

impl Remove for CountingBloomFilter {
    /// Decrement the key's counters, except saturated ones; refused (nothing changed) when any
    /// of them is zero.
    #[inline]
    fn remove_hashed(&mut self, h: Hashed) -> Result<(), RemoveError> {
        // All k lines are requested before the first read-modify-write: measured faster
        // beyond the cache (docs/BENCHMARKS.md); the counters are unchanged.
        self.prefetch_hashed(h);
        let (k, m) = (self.k, self.counters.len());
        // One pass of read-modify-writes that undoes itself and refuses when one of the
        // counters was zero (see `ViewMut::decrement_unless_zero`). A counter a key hits twice
        // was incremented twice on insert and is decremented twice here.
        // SAFETY: `indices` reduces into [0, m) and m is the counters' length; k ≤ 64.
        if !unsafe {
            self.counters
                .view_mut()
                .decrement_unless_zero(h.indices(k, m))
        } {
            return Err(RemoveError::NotPresent);
        }
        self.items = self.items.saturating_sub(1);
        Ok(())
    }
}

impl Merge for CountingBloomFilter {
    /// Counter-wise saturating sum: the filter of every insert made into either (counts add,
    /// and each side's keys can still be removed).
    fn union_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        for i in 0..self.counters.len() {
            let o = other.counters.get(i);
            if o != 0 {
                self.counters.add(i, o);
            }
        }
        self.items = self.items.saturating_add(other.items);
        Ok(())
    }

    /// Counter-wise minimum: contains every key inserted into both, with the smaller count.
    fn intersect_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        for i in 0..self.counters.len() {
            let (a, b) = (self.counters.get(i), other.counters.get(i));
            if b < a {
                self.counters.set(i, b);
            }
        }
        self.items = self.items.min(other.items);
        Ok(())
    }
}

impl Stats for CountingBloomFilter {
    /// Counters (m).
    fn bit_len(&self) -> u64 {
        self.counters.len()
    }
    /// Non-zero counters.
    fn count_ones(&self) -> u64 {
        self.counters.count_nonzero()
    }
    fn hash_count(&self) -> u32 {
        self.k
    }
    fn current_fpr(&self) -> f64 {
        params::fpr_from_fill(self.count_ones(), self.counters.len(), self.k)
    }
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn target_fpr(&self) -> f64 {
        self.target_fpr
    }
}

impl Persist for CountingBloomFilter {
    const KIND: Kind = Kind::Counting;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut h = Header::new(Kind::Counting, self.hasher);
        h.items = self.items;
        h.capacity = self.capacity;
        h.target_fpr = self.target_fpr;
        h.params = ParamWriter::new()
            .u64(self.counters.len())
            .u32(self.k)
            .u8(self.counters.width() as u8)
            .finish();
        (h, Payload::new(vec![self.counters.words()]))
    }

    fn decode_from(d: &Decoded, src: format::Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let m = r.u64()?;
        let k = r.u32()?;
        let width = u32::from(r.u8()?);
        r.finish()?;
        if m == 0 || k == 0 || k > MAX_HASHES || width == 0 || width > counters::MAX_WIDTH {
            return Err(inconsistent(format!(
                "counting shape m={m} k={k} w={width}"
            )));
        }
        let words = counters::words_needed(m, width).ok_or_else(|| inconsistent("m too large"))?;
        format::check_payload(d, words)?;
        let w = src.words(d.payload_offset, words, limit)?;
        Ok(Self {
            counters: Counters::from_words(w, m, width)?,
            hasher: d.header.hasher,
            k,
            items: d.header.items,
            capacity: d.header.capacity,
            target_fpr: d.header.target_fpr,
        })
    }
}

/// Inserts through [`CountingBloomFilter::insert_hashed_pipelined`] (identical to inserting
/// one by one).
impl<K: crate::hash::Key> Extend<K> for CountingBloomFilter {
    fn extend<I: IntoIterator<Item = K>>(&mut self, iter: I) {
        let hasher = self.hasher;
        self.insert_hashed_pipelined(iter.into_iter().map(|k| hasher.hash(&k)));
    }
}

impl crate::multisets::counter_kind::CounterKind for CountingBloomFilter {
    const CAPABILITIES: Capabilities = Capabilities {
        insert: true,
        hashed: true,
        count: true,
        remove: true,
        flatten: true,
        ..Capabilities::NONE
    };
    counting_filter_kind!(len: Filter::len, remove);
    fn to_plain_filter(&self) -> Result<BloomFilter> {
        self.to_bloom_filter()
    }
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
        let mut f = CountingBloomFilter::try_new(1000, 0.01).unwrap();
        assert_eq!(f.counter_width(), 4);
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
        assert!(f.counters().sum() == 0);
    }

    #[test]
    fn batched_inserts_equal_one_by_one() {
        let keys: Vec<u32> = (0..3000u32).map(|i| (i * 7919) % 1100).collect();
        let mut one = CountingBloomFilter::try_with_shape(4000, 5, 3).unwrap();
        let mut new_one = 0;
        for k in &keys {
            new_one += u64::from(one.insert(k));
        }
        let mut batch = CountingBloomFilter::try_with_shape(4000, 5, 3).unwrap();
        assert_eq!(batch.insert_batch(&keys), new_one);
        assert_eq!(batch, one);
        let mut ext = CountingBloomFilter::try_with_shape(4000, 5, 3).unwrap();
        ext.extend(keys.iter().copied());
        assert_eq!(ext, one);
        let mut short = CountingBloomFilter::try_with_shape(4000, 5, 3).unwrap();
        assert_eq!(short.insert_batch(&keys[..2]), 2);
        assert_eq!(short.insert_batch::<u32>(&[]), 0);
        assert_eq!(short.len(), 2);
    }

    #[test]
    fn saturated_counters_stay() {
        let mut f = CountingBloomFilter::try_with_shape(64, 3, 2).unwrap();
        for _ in 0..10 {
            f.insert("x");
        }
        assert_eq!(f.count("x"), 3); // saturated at 2^2 - 1
        assert!(f.saturated_counters() >= 1);
        for _ in 0..10 {
            f.remove("x").unwrap(); // saturated counters never go down
        }
        assert!(f.contains("x"));
        assert_eq!(f.count("x"), 3);
    }

    #[test]
    fn conversion_answers_like_the_counting_filter() {
        let mut f = CountingBloomFilter::try_new(500, 0.05).unwrap();
        for i in 0..500u32 {
            f.insert(&i);
        }
        for i in 0..100u32 {
            f.remove(&i).unwrap();
        }
        let b = f.to_bloom_filter().unwrap();
        assert_eq!(b.bits(), f.counter_len());
        assert_eq!(b.hashes(), f.hashes());
        for i in 0..5000u32 {
            assert_eq!(b.contains(&i), f.contains(&i), "{i}");
        }
    }

    #[test]
    fn roundtrip_and_bad_input() {
        let mut f = CountingBloomFilter::builder()
            .capacity(200)
            .fpr(0.01)
            .counter_width(7)
            .seed(9)
            .try_build()
            .unwrap();
        for i in 0..300u32 {
            f.insert(&(i % 150));
        }
        let bytes = f.to_bytes();
        let g = CountingBloomFilter::from_bytes(&bytes).unwrap();
        assert_eq!(f, g);
        assert!(BloomFilter::from_bytes(&bytes).is_err());
        assert!(CountingBloomFilter::try_with_shape(0, 3, 4).is_err());
        assert!(CountingBloomFilter::try_with_shape(10, 0, 4).is_err());
        assert!(CountingBloomFilter::try_with_shape(10, 3, 0).is_err());
        assert!(CountingBloomFilter::try_with_shape(10, 3, 33).is_err());
        assert!(CountingBloomFilter::try_new(0, 0.1).is_err());
        assert!(CountingBloomFilter::try_new(10, 2.0).is_err());
        assert!(matches!(
            CountingBloomFilter::builder()
                .capacity(1 << 40)
                .fpr(0.001)
                .max_bytes(1 << 20)
                .try_build(),
            Err(crate::error::Error::TooLarge { .. })
        ));
        let a = CountingBloomFilter::try_with_shape(100, 3, 4).unwrap();
        let mut b = CountingBloomFilter::try_with_shape(100, 3, 8).unwrap();
        assert!(b.union_with(&a).is_err());
    }

    #[cfg(feature = "mmap")]
    #[test]
    fn save_mmap_and_bad_files() {
        let mut f = CountingBloomFilter::try_new(100, 0.01).unwrap();
        for i in 0..100u32 {
            f.insert(&i);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.bloom");
        f.save(&path).unwrap();
        assert_eq!(CountingBloomFilter::load(&path).unwrap(), f);
        let mut mapped = CountingBloomFilter::open_mmap(&path, format::Verify::Checksum).unwrap();
        assert_eq!(mapped, f);
        mapped.remove(&5u32).unwrap(); // copy on write
        assert_eq!(mapped.count(&5u32) + 1, f.count(&5u32));
        assert_eq!(CountingBloomFilter::load(&path).unwrap(), f);
        // every parameter is validated on decode
        for (m, k, w) in [
            (0u64, 3u32, 4u8),
            (100, 0, 4),
            (100, 65, 4),
            (100, 3, 0),
            (100, 3, 33),
        ] {
            let mut h = Header::new(Kind::Counting, KeyHasher::new());
            h.params = ParamWriter::new().u64(m).u32(k).u8(w).finish();
            let words = Words::zeroed(7, u64::MAX).unwrap();
            let mut bytes = Vec::new();
            format::write(&h, &Payload::new(vec![&words]), &mut bytes).unwrap();
            assert!(
                CountingBloomFilter::from_bytes(&bytes).is_err(),
                "{m} {k} {w}"
            );
        }
        // the right shape with the wrong payload length
        let mut h = Header::new(Kind::Counting, KeyHasher::new());
        h.params = ParamWriter::new().u64(1000).u32(3).u8(4).finish();
        let words = Words::zeroed(7, u64::MAX).unwrap();
        let mut bytes = Vec::new();
        format::write(&h, &Payload::new(vec![&words]), &mut bytes).unwrap();
        assert!(CountingBloomFilter::from_bytes(&bytes).is_err());
        // a counting file is not a set filter
        assert!(crate::any::filter::AnyFilter::from_bytes(&f.to_bytes()).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn no_false_negatives_counts_never_low(
            ops in proptest::collection::vec((0u8..40, any::<bool>()), 1..300),
            cut in 0usize..300,
        ) {
            // 8-bit counters do not saturate here, so counts are never below the truth.
            let mut f = CountingBloomFilter::try_with_shape(512, 4, 8).unwrap();
            let mut g = CountingBloomFilter::try_with_shape(512, 4, 8).unwrap();
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
            let f2 = CountingBloomFilter::from_bytes(&f.to_bytes()).unwrap();
            for (k, c) in &truth {
                prop_assert!(f2.count(k) >= *c);
                if *c > 0 { prop_assert!(f2.contains(k)); }
            }
            // removes of present items
            let mut h = f2.clone();
            let mut left = truth.clone();
            for (k, c) in &truth {
                for _ in 0..(*c / 2) {
                    h.remove(k).unwrap();
                    *left.get_mut(k).unwrap() -= 1;
                }
            }
            for (k, c) in &left {
                prop_assert!(h.count(k) >= *c);
                if *c > 0 { prop_assert!(h.contains(k)); }
            }
            prop_assert_eq!(h.saturated_counters(), 0);
        }
    }
}
