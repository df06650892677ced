//! The count-min sketch: [`CountMinSketch`] (its docs say which paper it follows and when to pick
//! it).

use crate::error::{inconsistent, invalid, Incompatibility, Result};
use crate::filter::{shape_mismatch, Count};
use crate::hash::{reduce, Hashed, Key, KeyHasher};
use crate::io::format::{self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload};
use crate::kind::Capabilities;
use crate::params;
use crate::store::{self, Pipeline, Words};

/// Most rows accepted.
pub const MAX_DEPTH: u32 = 64;

/// How many keys ahead the pipelined updates hash and prefetch.
pub const UPDATE_AHEAD: usize = 8;

/// The count-min sketch (Cormode & Muthukrishnan, LATIN 2004; Broder & Mitzenmacher §9), with the
/// conservative update of Estan & Varghese (Broder & Mitzenmacher §8.1).
///
/// `depth` rows of `width` 64-bit counters. An update of key x by c adds c to one counter per
/// row, `row r, column h_r(x)`; a point query returns the minimum of those counters. The
/// estimate is never below the true count, and with `width = ⌈e/ε⌉`, `depth = ⌈ln 1/δ⌉` it
/// exceeds it by more than `ε·N` (N the total of all updates) with probability at most δ
/// ([`params::count_min_dimensions`]). Each row's column is the r-th value of the key's
/// enhanced double-hashing sequence reduced to `[0, width)` — the one hash path of
/// [`hash`](crate::KeyHasher); the sketch's guarantee needs only pairwise independence per row.
///
/// **Conservative update** ([`CountMinBuilder::conservative`]): the key's true count is at
/// most the current minimum M, so after adding c it is at most `M + c`; each counter is raised
/// to `max(counter, M + c)` instead of being incremented. Estimates stay never below the truth
/// and are much closer for light keys sharing counters with heavy ones (Broder & Mitzenmacher §8.1, Figure 2).
///
/// **Overflow policy: saturation.** Counters are u64 and every addition saturates at
/// `u64::MAX` (a saturated counter only over-estimates, it never wraps to a small value);
/// the same holds for [`Merge::union_with`](crate::Merge::union_with), which adds two sketches counter by counter.
/// Merges are refused with a typed [`crate::Error::Incompatible`] when the shapes, the update
/// rule or the hashers differ. [`CountMinSketch::saturated_counters`] reports saturation.
///
/// **32-bit counters:** [`CountMinSketch32`](crate::CountMinSketch32)
/// ([`CountMinBuilder::try_build_u32`]) holds the same rows in half the memory, with checked or
/// saturating updates at `u32::MAX` and signed weighted merges (what RedisBloom's `CMS.*`
/// offers); pick it when counts stay below 2^32.
///
/// **Heavy hitters:** a sketch stores no keys and cannot enumerate them.
/// [`CountMinSketch::heavy_hitters`] checks the keys the caller offers (e.g. the keys of the
/// stream seen so far, or a candidate list kept beside the sketch) against a threshold.
///
/// **When to pick it:** frequency estimates of a stream (packets per flow, hits per URL) with
/// a guaranteed error in fixed memory, merged across machines. For set membership with
/// deletions use [`crate::CountingBloomFilter`]; spectral filters ([`spectral`](crate::SpectralBloomFilter)) give
/// the same kind of estimate in one shared counter array.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Count, CountMinSketch};
///
/// // additive error at most ε·N (ε = 0.001) with probability 1 − δ (δ = 0.01)
/// let mut s = CountMinSketch::try_with_error(0.001, 0.01)?;
/// let mut total = 0;
/// for i in 0..1000u64 {
///     s.insert_many(&i, 1 + i % 3);
///     total += 1 + i % 3;
/// }
/// s.insert("page");
/// assert!(s.count("page") >= 1); // never below the true count
/// let c = s.count(&7u64); // truly 2
/// assert!(c >= 2 && c as f64 <= 2.0 + 0.001 * (total + 1) as f64);
/// # Ok(()) }
/// ```
///
/// The same operation is the same call on every counting structure: `insert` adds one,
/// `insert_many` adds n, `insert_batch` adds a slice, `count` estimates and
/// [`Merge::union_with`](crate::Merge::union_with) merges.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{
///     BlockedCountingBloomFilter, Count, CountMinSketch, CountingBloomFilter, Filter, Merge,
///     TopK,
/// };
///
/// let mut cms = CountMinSketch::try_with_error(0.01, 0.01)?;
/// let mut cbf = CountingBloomFilter::try_new(1000, 0.01)?;
/// let mut blk = BlockedCountingBloomFilter::try_new(1000, 0.01)?;
/// let mut top = TopK::try_with_shape(10, 64, 4, 0.9)?;
/// cms.insert("a");
/// cbf.insert("a");
/// blk.insert("a");
/// top.insert("a");
/// cms.insert_many("b", 3);
/// cbf.insert_many("b", 3);
/// blk.insert_many("b", 3);
/// top.insert_many("b", 3);
/// cms.insert_batch(&[1u64, 2, 3]);
/// cbf.insert_batch(&[1u64, 2, 3]);
/// blk.insert_batch(&[1u64, 2, 3]);
/// assert!(cms.count("b") >= 3 && cbf.count("b") >= 3 && blk.count("b") >= 3);
/// assert_eq!(top.count("b"), 3);
/// let (c2, f2, b2) = (cms.clone(), cbf.clone(), blk.clone());
/// cms.union_with(&c2)?;
/// cbf.union_with(&f2)?;
/// blk.union_with(&b2)?;
/// assert!(cms.count("b") >= 6);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CountMinSketch {
    table: Words,
    width: u64,
    depth: u32,
    conservative: bool,
    hasher: KeyHasher,
    total: u64,
}

/// Builder for [`CountMinSketch`]: by `dimensions(width, depth)` or `error(ε, δ)`.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Count, CountMinSketch};
///
/// // overestimates by at most 0.1% of the total with probability 99%, conservative update
/// let mut s = CountMinSketch::builder().error(0.001, 0.01).conservative(true).try_build()?;
/// s.insert("GET /");
/// s.insert("GET /");
/// assert!(s.count("GET /") >= 2);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct CountMinBuilder {
    dims: Option<(u64, u32)>,
    error: Option<(f64, f64)>,
    conservative: bool,
    hasher: KeyHasher,
    max_bytes: u64,
}

impl CountMinBuilder {
    crate::filter::hashing_setters!();

    /// An explicit shape: `width` counters per row, `depth` rows.
    pub fn dimensions(mut self, width: u64, depth: u32) -> Self {
        self.dims = Some((width, depth));
        self
    }
    /// Size for additive error `ε·N` with probability `1 - δ`.
    pub fn error(mut self, epsilon: f64, delta: f64) -> Self {
        self.error = Some((epsilon, delta));
        self
    }
    /// Use the conservative update (Estan & Varghese, Broder & Mitzenmacher §8.1).
    pub fn conservative(mut self, on: bool) -> Self {
        self.conservative = on;
        self
    }

    /// The validated shape and options (shared by [`try_build`](Self::try_build) and
    /// [`try_build_u32`](Self::try_build_u32)).
    pub(crate) fn parts(self) -> Result<(u64, u32, bool, KeyHasher, u64)> {
        let (width, depth) = match (self.dims, self.error) {
            (Some(d), None) => d,
            (None, Some((e, d))) => params::count_min_dimensions(e, d)?,
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "dimensions",
                    "give either dimensions or (epsilon, delta), not both",
                ))
            }
            (None, None) => return Err(invalid("dimensions", "required (or epsilon and delta)")),
        };
        check_shape(width, depth).map_err(|(n, r)| invalid(n, r))?;
        Ok((width, depth, self.conservative, self.hasher, self.max_bytes))
    }

    /// Build, validating every parameter.
    pub fn try_build(self) -> Result<CountMinSketch> {
        let (width, depth, conservative, hasher, max_bytes) = self.parts()?;
        let words = words_for(width, depth)?;
        Ok(CountMinSketch {
            table: Words::zeroed(words, max_bytes)?,
            width,
            depth,
            conservative,
            hasher,
            total: 0,
        })
    }
}

fn check_shape(width: u64, depth: u32) -> std::result::Result<(), (&'static str, String)> {
    if width == 0 {
        return Err(("width", "must be at least 1".into()));
    }
    if depth == 0 || depth > MAX_DEPTH {
        return Err(("depth", format!("must be in 1..={MAX_DEPTH}, got {depth}")));
    }
    Ok(())
}

fn words_for(width: u64, depth: u32) -> Result<usize> {
    width
        .checked_mul(u64::from(depth))
        .and_then(|w| usize::try_from(w).ok())
        .ok_or(crate::error::Error::TooLarge {
            requested: u64::MAX,
            limit: store::max_bytes(),
        })
}

impl CountMinSketch {
    /// The hasher keys go through (what [`Count::hasher`](crate::filter::Count::hasher)
    /// answers; inherent, so that a call needs no trait in scope).
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// Largest number of rows (`depth`).
    pub const MAX_DEPTH: u32 = MAX_DEPTH;

    /// A builder (conservative update off, default hasher).
    pub fn builder() -> CountMinBuilder {
        CountMinBuilder {
            dims: None,
            error: None,
            conservative: false,
            hasher: KeyHasher::new(),
            max_bytes: store::max_bytes(),
        }
    }

    /// An explicit shape: `depth` rows of `width` counters, default hasher, plain update
    /// (the name every structure's explicit-shape constructor has).
    ///
    /// ```
    /// use bloomery::CountMinSketch;
    ///
    /// # fn main() -> bloomery::Result<()> {
    /// let s = CountMinSketch::try_with_shape(2048, 4)?;
    /// assert_eq!((s.width(), s.depth()), (2048, 4));
    /// # Ok(()) }
    /// ```
    pub fn try_with_shape(width: u64, depth: u32) -> Result<Self> {
        Self::builder().dimensions(width, depth).try_build()
    }

    /// Sized by its error rates, the count-min counterpart of the other structures'
    /// `try_new(capacity, fpr)`: an estimate exceeds the true count by at most `ε·N` (N the
    /// total of all updates) with probability `1 - δ`; `width = ⌈e/ε⌉`, `depth = ⌈ln 1/δ⌉`.
    ///
    /// ```
    /// use bloomery::CountMinSketch;
    ///
    /// # fn main() -> bloomery::Result<()> {
    /// let s = CountMinSketch::try_with_error(0.001, 0.01)?;
    /// assert_eq!((s.width(), s.depth()), (2719, 5));
    /// # Ok(()) }
    /// ```
    pub fn try_with_error(epsilon: f64, delta: f64) -> Result<Self> {
        Self::builder().error(epsilon, delta).try_build()
    }

    /// Counters per row.
    pub fn width(&self) -> u64 {
        self.width
    }

    /// Rows.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// True when updates are conservative.
    pub fn is_conservative(&self) -> bool {
        self.conservative
    }

    /// The guaranteed `(ε, δ)` of this shape.
    pub fn error_bounds(&self) -> (f64, f64) {
        params::count_min_bounds(self.width, self.depth)
    }

    /// Sum of all updates (N), saturating.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The raw counters, row after row.
    pub fn as_words(&self) -> &[u64] {
        self.table.as_slice()
    }

    /// A sketch of this shape and hasher holding `counters` (in [`as_words`](Self::as_words)'
    /// order) and `total`.
    pub(crate) fn with_counters(
        width: u64,
        depth: u32,
        hasher: KeyHasher,
        total: u64,
        counters: impl Iterator<Item = u64>,
    ) -> Result<Self> {
        let mut s = Self::builder()
            .dimensions(width, depth)
            .hasher(hasher)
            .try_build()?;
        for (w, c) in s.table.as_mut_slice().iter_mut().zip(counters) {
            *w = c;
        }
        s.total = total;
        Ok(s)
    }

    /// Counters at `u64::MAX`.
    pub fn saturated_counters(&self) -> u64 {
        // a step at a time, a mapped file's pages dropped behind the pass
        let mut n = 0;
        crate::store::Behind::steps(&self.table, |_, step| {
            n += step.iter().filter(|&&c| c == u64::MAX).count() as u64;
        });
        n
    }

    /// The key's cell in each row, `row r, column h_r(x)`, as indices into the table.
    #[inline(always)]
    fn cells(&self, h: Hashed) -> impl Iterator<Item = usize> {
        let w = self.width;
        h.sequence(self.depth)
            .enumerate()
            .map(move |(r, x)| (r as u64 * w + reduce(x, w)) as usize)
    }

    /// Add one to a pre-hashed key.
    #[inline]
    pub fn insert_hashed(&mut self, h: Hashed) {
        self.insert_many_hashed(h, 1)
    }

    /// Add `count` to a pre-hashed key.
    #[inline]
    pub fn insert_many_hashed(&mut self, h: Hashed, count: u64) {
        self.total = self.total.saturating_add(count);
        if self.conservative {
            // Conservative update: no counter needs to exceed the old minimum plus `count`.
            let target = self.count_hashed(h).saturating_add(count);
            let cells = self.cells(h);
            let t = self.table.as_mut_slice();
            for c in cells {
                // SAFETY: c = r·width + reduce(x, width) < depth·width = t.len() (r < depth
                // and `reduce` maps into [0, width)).
                let v = unsafe { t.get_unchecked_mut(c) };
                *v = (*v).max(target);
            }
        } else {
            // Rows are disjoint, so the depth read-modify-writes are independent and their
            // cache misses overlap.
            let cells = self.cells(h);
            let t = self.table.as_mut_slice();
            for c in cells {
                // SAFETY: as above, c < depth·width = t.len().
                let v = unsafe { t.get_unchecked_mut(c) };
                *v = (*v).saturating_add(count);
            }
        }
    }

    /// Hint the CPU to fetch the key's `depth` cells ahead of an update or a query (for
    /// streaming callers that hash a key and update it a few keys later; see
    /// [`insert_many_hashed_pipelined`](Self::insert_many_hashed_pipelined)).
    #[inline]
    pub fn prefetch_hashed(&self, h: Hashed) {
        let t = self.table.as_slice();
        for c in self.cells(h) {
            store::prefetch(t, c);
        }
    }

    /// Add `count` to each of a stream of pre-hashed keys through a software pipeline: each
    /// key's cells are prefetched `UPDATE_AHEAD` keys before it is updated, so the cache
    /// misses of consecutive keys overlap (for tables larger than the cache). The result is
    /// identical to calling [`insert_many_hashed`](Self::insert_many_hashed) for each key in
    /// order.
    pub fn insert_many_hashed_pipelined(
        &mut self,
        hashes: impl IntoIterator<Item = Hashed>,
        count: u64,
    ) {
        let mut pipe = Pipeline::<Hashed, UPDATE_AHEAD>::default();
        for h in hashes {
            self.prefetch_hashed(h);
            if let Some(due) = pipe.push(h) {
                self.insert_many_hashed(due, count);
            }
        }
        for due in pipe.drain() {
            self.insert_many_hashed(due, count);
        }
    }

    /// Add one to each of a stream of pre-hashed keys, pipelined as
    /// [`insert_many_hashed_pipelined`](Self::insert_many_hashed_pipelined) does (the counting
    /// filters' `insert_hashed_pipelined`).
    pub fn insert_hashed_pipelined(&mut self, hashes: impl IntoIterator<Item = Hashed>) {
        self.insert_many_hashed_pipelined(hashes, 1)
    }

    /// Add `count` to every key of `keys` (a key repeated is added as often as it appears),
    /// hashing ahead and prefetching as
    /// [`insert_many_hashed_pipelined`](Self::insert_many_hashed_pipelined) does. The result
    /// is identical to calling [`insert_many`](Self::insert_many) for each key in order.
    pub fn insert_many_batch<K: Key>(&mut self, keys: &[K], count: u64) {
        let hasher = self.hasher;
        self.insert_many_hashed_pipelined(keys.iter().map(|k| hasher.hash(k)), count);
    }

    /// Add one to every key of `keys`, pipelined (the counting filters' `insert_batch`).
    pub fn insert_batch<K: Key>(&mut self, keys: &[K]) {
        self.insert_many_batch(keys, 1)
    }

    /// Add one to a key: the `insert` of every structure.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) {
        self.insert_many(key, 1)
    }

    /// Add `count` to a key (`count` occurrences at once, as `insert_many` on the counting
    /// filters).
    pub fn insert_many<K: Key + ?Sized>(&mut self, key: &K, count: u64) {
        let h = self.hasher.hash(key);
        self.insert_many_hashed(h, count)
    }

    /// The offered keys whose estimate is at least `threshold`, largest first. A sketch cannot
    /// list its keys (it stores none): the caller supplies the candidates, e.g. every key of
    /// the stream, or a small set it tracks beside the sketch. Candidates repeated are
    /// reported as often as they are offered.
    pub fn heavy_hitters<'a, K: Key + ?Sized>(
        &self,
        candidates: impl IntoIterator<Item = &'a K>,
        threshold: u64,
    ) -> Vec<(&'a K, u64)> {
        let mut out: Vec<(&'a K, u64)> = candidates
            .into_iter()
            .map(|k| (k, self.count(k)))
            .filter(|&(_, c)| c >= threshold)
            .collect();
        out.sort_by_key(|&(_, c)| std::cmp::Reverse(c));
        out
    }

    /// Refuses sketches of another shape, update rule or hasher.
    fn check_mergeable(&self, other: &Self) -> Result<()> {
        if self.width != other.width
            || self.depth != other.depth
            || self.conservative != other.conservative
        {
            return Err(shape_mismatch(
                format!(
                    "width={} depth={} conservative={}",
                    self.width, self.depth, self.conservative
                ),
                format!(
                    "width={} depth={} conservative={}",
                    other.width, other.depth, other.conservative
                ),
            ));
        }
        if self.hasher != other.hasher {
            return Err(crate::error::Error::Incompatible(Incompatibility::Hashing));
        }
        Ok(())
    }

    /// Reset every counter.
    pub fn clear(&mut self) {
        self.table.as_mut_slice().fill(0);
        self.total = 0;
    }
}

impl Count for CountMinSketch {
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// The minimum of the key's counters: never below the true count.
    #[inline]
    fn count_hashed(&self, h: Hashed) -> u64 {
        let t = self.table.as_slice();
        let mut min = u64::MAX;
        for c in self.cells(h) {
            // SAFETY: c = r·width + reduce(x, width) < depth·width = t.len().
            min = min.min(unsafe { *t.get_unchecked(c) });
        }
        min
    }
}

/// The 64-bit form's file codec. [`Persist`](crate::io::format::Persist) itself is implemented
/// in count_min32.rs, beside the 32-bit form whose files it also opens, so that this module
/// does not import that one.
impl CountMinSketch {
    pub(crate) fn encode_wide(&self) -> (Header, Payload<'_>) {
        let mut h = Header::new(Kind::CountMin, self.hasher);
        h.items = self.total;
        h.params = ParamWriter::new()
            .u64(self.width)
            .u32(self.depth)
            .u8(u8::from(self.conservative))
            .finish();
        (h, Payload::new(vec![&self.table]))
    }

    pub(crate) fn decode_wide(d: &Decoded, src: format::Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let width = r.u64()?;
        let depth = r.u32()?;
        let cons = r.u8()?;
        r.finish()?;
        check_shape(width, depth).map_err(|(n, why)| inconsistent(format!("{n}: {why}")))?;
        if cons > 1 {
            return Err(inconsistent(format!("conservative flag {cons}")));
        }
        let words = words_for(width, depth).map_err(|_| inconsistent("shape too large"))?;
        format::check_payload(d, words)?;
        Ok(Self {
            table: src.words(d.payload_offset, words, limit)?,
            width,
            depth,
            conservative: cons == 1,
            hasher: d.header.hasher,
            total: d.header.items,
        })
    }
}

/// Each key adds one, through the software pipeline of
/// [`CountMinSketch::insert_many_hashed_pipelined`] (identical to incrementing one by one).
impl<K: Key> Extend<K> for CountMinSketch {
    fn extend<I: IntoIterator<Item = K>>(&mut self, iter: I) {
        let hasher = self.hasher;
        self.insert_hashed_pipelined(iter.into_iter().map(|k| hasher.hash(&k)));
    }
}

impl crate::multisets::counter_kind::CounterKind for CountMinSketch {
    const CAPABILITIES: Capabilities = Capabilities {
        insert: true,
        hashed: true,
        count: true,
        merge: true,
        ..Capabilities::NONE
    };
    fn hasher(&self) -> &KeyHasher {
        Count::hasher(self)
    }
    /// The total of all increments.
    fn len(&self) -> u64 {
        self.total()
    }
    fn insert_hashed(&mut self, h: Hashed) -> Result<()> {
        self.insert_hashed(h);
        Ok(())
    }
    fn count_hashed(&self, h: Hashed) -> u64 {
        Count::count_hashed(self, h)
    }
    fn prefetch_hashed(&self, h: Hashed) {
        CountMinSketch::prefetch_hashed(self, h)
    }
    fn remove_unsupported(&self) -> Option<crate::filter::RemoveError> {
        Some(crate::filter::RemoveError::Unsupported(
            "a count-min sketch (cms) has no deletion: decrements would break its never-below-the-truth guarantee",
        ))
    }
    fn describe(&self, i: &mut crate::multisets::counter_kind::CounterInfo) {
        i.saturated_counters = Some(self.saturated_counters());
        i.width = Some(self.width());
        i.depth = Some(self.depth());
        i.conservative = Some(self.is_conservative());
    }
}

/// The sketch of two streams (counter-wise sums) and, for intersection, the
/// counter-wise minimum: each key's count is then at least the smaller of its two counts
/// (never below it), the count of the key in both streams as a multiset.
impl crate::filter::Merge for CountMinSketch {
    /// Add another sketch's counters into this one (the sketch of both streams). Counters
    /// and the total saturate at `u64::MAX`. Refused (nothing changed) when the shapes,
    /// update rules or hashers differ.
    fn union_with(&mut self, other: &Self) -> Result<()> {
        self.check_mergeable(other)?;
        for (a, b) in self
            .table
            .as_mut_slice()
            .iter_mut()
            .zip(other.table.as_slice())
        {
            *a = a.saturating_add(*b);
        }
        self.total = self.total.saturating_add(other.total);
        Ok(())
    }
    fn intersect_with(&mut self, other: &Self) -> Result<()> {
        self.check_mergeable(other)?;
        for (a, b) in self
            .table
            .as_mut_slice()
            .iter_mut()
            .zip(other.table.as_slice())
        {
            *a = (*a).min(*b);
        }
        self.total = self.total.min(other.total);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::Merge;
    use crate::io::format::Persist;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn sizing_and_bad_parameters() {
        let s = CountMinSketch::try_with_error(0.01, 0.001).unwrap();
        assert_eq!((s.width(), s.depth()), (272, 7));
        assert!(CountMinSketch::try_with_shape(0, 3).is_err());
        assert!(CountMinSketch::try_with_shape(10, 0).is_err());
        assert!(CountMinSketch::try_with_shape(10, 65).is_err());
        assert!(CountMinSketch::try_with_error(0.0, 0.1).is_err());
        assert!(CountMinSketch::builder().try_build().is_err());
        assert!(matches!(
            CountMinSketch::try_with_shape(u64::MAX / 2, 4),
            Err(crate::error::Error::TooLarge { .. })
        ));
    }

    #[test]
    fn conservative_is_tighter_and_saturation() {
        let mut plain = CountMinSketch::try_with_shape(50, 3).unwrap();
        let mut cons = CountMinSketch::builder()
            .dimensions(50, 3)
            .conservative(true)
            .try_build()
            .unwrap();
        for i in 0..2000u32 {
            let key = i % 300;
            plain.insert(&key);
            cons.insert(&key);
        }
        let err = |s: &CountMinSketch| -> u64 {
            (0..300u32)
                .map(|k| s.count(&k) - if k < 200 { 7 } else { 6 })
                .sum()
        };
        assert!(err(&cons) <= err(&plain));
        let mut s = CountMinSketch::try_with_shape(4, 2).unwrap();
        s.insert_many("a", u64::MAX - 1);
        s.insert_many("a", 10);
        assert_eq!(s.count("a"), u64::MAX);
        assert!(s.saturated_counters() >= 2);
        let t = s.clone();
        s.union_with(&t).unwrap();
        assert_eq!(s.count("a"), u64::MAX);
        assert_eq!(s.total(), u64::MAX);
        let hh = s.heavy_hitters(["a", "b"].iter().copied(), 100);
        assert_eq!(hh.len(), 1);
        assert_eq!(hh[0].0, "a");
    }

    #[test]
    fn merge_checks_and_roundtrip() {
        let mut a = CountMinSketch::try_with_shape(64, 4).unwrap();
        let b = CountMinSketch::try_with_shape(64, 3).unwrap();
        assert!(a.union_with(&b).is_err());
        let c = CountMinSketch::builder()
            .dimensions(64, 4)
            .seed(5)
            .try_build()
            .unwrap();
        assert!(matches!(
            a.union_with(&c),
            Err(crate::error::Error::Incompatible(Incompatibility::Hashing))
        ));
        a.insert_many("x", 5);
        let back = CountMinSketch::from_bytes(&a.to_bytes()).unwrap();
        assert_eq!(back, a);
        assert_eq!(back.count("x"), 5);
    }

    #[test]
    fn batched_updates_equal_one_by_one() {
        for cons in [false, true] {
            let mk = || {
                CountMinSketch::builder()
                    .dimensions(1000, 4)
                    .conservative(cons)
                    .seed(3)
                    .try_build()
                    .unwrap()
            };
            let keys: Vec<u32> = (0..5000u32).map(|i| (i * 7919) % 1300).collect();
            let mut one = mk();
            for k in &keys {
                one.insert_many(k, 3);
            }
            let mut batch = mk();
            batch.insert_many_batch(&keys, 3);
            assert_eq!(batch, one, "conservative={cons}");
            // fewer keys than the pipeline depth, and none
            let mut short = mk();
            short.insert_many_batch(&keys[..3], 3);
            let mut short_one = mk();
            for k in &keys[..3] {
                short_one.insert_many(k, 3);
            }
            assert_eq!(short, short_one);
            short.insert_many_batch::<u32>(&[], 3);
            assert_eq!(short, short_one);
            let mut ext = mk();
            ext.extend(keys.iter().copied());
            let mut inc = mk();
            for k in &keys {
                inc.insert(k);
            }
            assert_eq!(ext, inc);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn never_below_truth(
            ups in proptest::collection::vec((0u16..200, 1u64..50), 1..400),
            cons in any::<bool>(),
            cut in 0usize..400,
        ) {
            let mk = || CountMinSketch::builder().dimensions(37, 3).conservative(cons).try_build().unwrap();
            let (mut a, mut b) = (mk(), mk());
            let mut truth: HashMap<u16, u64> = HashMap::new();
            for (i, (k, c)) in ups.iter().enumerate() {
                if i < cut { a.insert_many(k, *c) } else { b.insert_many(k, *c) }
                *truth.entry(*k).or_default() += c;
            }
            a.union_with(&b).unwrap();
            let a = CountMinSketch::from_bytes(&a.to_bytes()).unwrap();
            for (k, c) in &truth {
                prop_assert!(a.count(k) >= *c);
            }
            prop_assert_eq!(a.total(), truth.values().sum::<u64>());
        }
    }
}
