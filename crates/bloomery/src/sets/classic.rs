//! The classic Bloom filter: [`BloomFilter`] (its docs say which paper it follows and when to pick
//! it).

use crate::dispatch::{hashed_set_kind, SetStats};
use crate::error::{invalid, Result};
use crate::filter::{shape_mismatch, Build, Builder, Filter, Merge, Stats};
use crate::hash::{with_k, Hashed, KeyHasher};
use crate::io::format::{
    self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::kind::Capabilities;
use crate::params;
use crate::sets::bits::Core;
use crate::store::{self, Words};

/// Largest k accepted.
pub const MAX_HASHES: u32 = 64;

/// The classic Bloom filter: one array of m bits and k hash functions (Salman §2, Broder & Mitzenmacher
/// §2.1 — Bloom's original definition).
///
/// A key sets the k bits at `h_i(x)`, `i = 1..k`, anywhere in the array; a query answers "maybe"
/// when all k are set. The false-positive rate after n inserts is
/// `(1 - (1-1/m)^{kn})^k ≈ (1 - e^{-kn/m})^k`, minimised at `k = (m/n) ln 2`
/// ([`crate::params`]).
///
/// **When to pick it:** when you need the textbook structure — exact formulas, halving
/// ([`BloomFilter::fold`]), the intersection estimate of Broder & Mitzenmacher §2.4, interoperability with the
/// papers' experiments. For raw speed on large sets prefer [`crate::BlockedBloomFilter`]
/// (one cache miss per operation instead of k, at a few percent more memory).
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BloomFilter, Filter, Merge, Stats};
///
/// let mut a = BloomFilter::try_new(1000, 0.01)?;
/// let mut b = BloomFilter::try_new(1000, 0.01)?;
/// a.insert("apple");
/// b.insert("pear");
/// a.union_with(&b)?; // same shape and hasher: a bitwise OR
/// assert!(a.contains("apple") && a.contains("pear"));
/// assert_eq!(a.hash_count(), 7); // the optimal k for 1% (Broder & Mitzenmacher §2)
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct BloomFilter {
    core: Core,
    m: u64,
    k: u32,
}

impl Build for BloomFilter {
    type Options = ();
    fn build(b: &Builder<Self>) -> Result<Self> {
        let b = &b.sizing;
        let (m, k, n, p) = match (b.bits, b.hashes) {
            (Some(m), k) => {
                // explicit shape; capacity/fpr optional
                let k = match (k, b.capacity) {
                    (Some(k), _) => k,
                    (None, Some(n)) => params::optimal_k(n, m),
                    (None, None) => {
                        return Err(invalid("hashes", "give --hashes or a capacity with --bits"))
                    }
                };
                (m, k, b.capacity.unwrap_or(0), b.fpr.unwrap_or(0.0))
            }
            (None, Some(k)) => {
                params::check_hashes(k, MAX_HASHES)?;
                let (n, p) = b.sized()?;
                store::check_size((params::bits_asymptotic(n, p) / 8.0) as u64, b.limit())?;
                // smallest m for this fixed k (in whole words, so it can be folded)
                let s = params::classic_shape(n, p)?;
                let mut m = params::foldable_bits(s.m);
                while params::fpr_exact(n, m, k) > p {
                    m = m
                        .checked_add(m / 64 + 1)
                        .ok_or_else(|| invalid("hashes", "no size reaches the rate with this k"))?;
                    store::check_size(m / 8, b.limit())?;
                }
                (m, k, n, p)
            }
            (None, None) => {
                let (n, p) = b.sized()?;
                store::check_size((params::bits_asymptotic(n, p) / 8.0) as u64, b.limit())?;
                let s = params::classic_shape(n, p)?;
                // whole words: no more memory, and foldable
                (params::foldable_bits(s.m), s.k, n, p)
            }
        };
        let mut f = Self::try_with_shape_hasher(m, k, b.key_hasher(), b.limit())?;
        f.core.capacity = n;
        f.core.target_fpr = if p > 0.0 && p < 1.0 { p } else { 0.0 };
        Ok(f)
    }
}

impl BloomFilter {
    /// A builder: `BloomFilter::builder().capacity(n).fpr(p).try_build()`.
    pub fn builder() -> Builder<Self> {
        Builder::new()
    }

    /// Sized for `n` items at false-positive rate `p` (exact formula), default hasher.
    pub fn try_new(n: u64, p: f64) -> Result<Self> {
        Self::builder().capacity(n).fpr(p).try_build()
    }

    /// An exact shape: `m` bits, `k` hashes.
    pub fn try_with_shape(m: u64, k: u32) -> Result<Self> {
        Self::try_with_shape_hasher(m, k, KeyHasher::new(), store::max_bytes())
    }

    fn try_with_shape_hasher(m: u64, k: u32, hasher: KeyHasher, limit: u64) -> Result<Self> {
        if m == 0 {
            return Err(invalid("bits", "must be at least 1"));
        }
        params::check_hashes(k, MAX_HASHES)?;
        let words = usize::try_from(m.div_ceil(64))
            .map_err(|_| invalid("bits", "too large for this platform"))?;
        Ok(Self {
            core: Core::new(words, hasher, limit)?,
            m,
            k,
        })
    }

    /// Bits (m).
    pub fn bits(&self) -> u64 {
        self.m
    }

    /// Hash functions (k).
    pub fn hashes(&self) -> u32 {
        self.k
    }

    /// The raw words (bit i of the filter is bit `i % 64` of word `i / 64`).
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

    /// Halve the filter (Broder & Mitzenmacher §2.4): OR bit pairs together, so the result is exactly the
    /// filter of size m/2 built from the same keys. Requires an even m ≥ 2 (a filter sized by
    /// capacity and rate has whole 64-bit words, so it can be halved at least six times).
    ///
    /// Indices are mapped by multiply-shift (`⌊x·m / 2⁶⁴⌋`), not by `x mod m`. For m = 2h,
    /// `⌊⌊x·2h / 2⁶⁴⌋ / 2⌋ = ⌊x·h / 2⁶⁴⌋`: bits 2i and 2i+1 of the filter of m bits are
    /// exactly bit i of the filter of h bits. So the paper's "OR the halves, mask the highest
    /// bit" (which needs a power of two) becomes "OR bits 2i and 2i+1" for any even m, with
    /// the same guarantee: no false negatives, and lookups in the halved filter need no
    /// special case. The halved filter keeps the items and the target rate; its capacity at
    /// that rate is half the original's.
    ///
    /// The half is built in memory, within the process's memory limit ([`crate::tuning::max_bytes`]):
    /// a larger one is [`Error::TooLarge`](crate::Error::TooLarge), before anything is allocated.
    pub fn fold(&self) -> Result<Self> {
        fold_check(self.m)?;
        let half = self.m / 2;
        let mut out =
            Self::try_with_shape_hasher(half, self.k, self.core.hasher, crate::store::max_bytes())?;
        fold_bits(self.as_words(), out.core.words.as_mut_slice());
        out.core.items = self.core.items;
        out.core.capacity = self.core.capacity / 2;
        out.core.target_fpr = self.core.target_fpr;
        Ok(out)
    }

    /// The empty filter of the shape `times` folds give (`times` = 0: this shape), with this
    /// filter's hasher, k and target, its capacity halved per fold and `items` items; its
    /// words are zero pages never to be written ([`crate::store::untouched_arrays`]): what a
    /// result streamed into a file takes its header and figures from. Refused as
    /// [`fold`](Self::fold) refuses an odd m.
    pub(crate) fn stream_shell(&self, times: u32, items: u64) -> Result<Self> {
        let mut m = self.m;
        for _ in 0..times {
            fold_check(m)?;
            m /= 2;
        }
        let mut out = crate::store::untouched_arrays(|| {
            Self::try_with_shape_hasher(m, self.k, self.core.hasher, u64::MAX)
        })?;
        out.core.items = items;
        out.core.capacity = (0..times).fold(self.core.capacity, |c, _| c / 2);
        out.core.target_fpr = self.core.target_fpr;
        Ok(out)
    }

    /// Mark a damaged byte range of the bit array as all ones (Salman §3): the filter keeps zero
    /// false negatives at the cost of more false positives in that region.
    pub fn mark_damaged(&mut self, bytes: std::ops::Range<u64>) -> Result<()> {
        self.core.mark_damaged(bytes)?;
        // keep the bits past m zero (a file with them set does not load)
        if !self.m.is_multiple_of(64) {
            let words = self.core.words.as_mut_slice();
            let last = words.len() - 1;
            words[last] &= !0u64 >> (64 - self.m % 64);
        }
        Ok(())
    }

    /// Estimated `|A ∩ B|` from the inner product of two compatible filters (Broder & Mitzenmacher §2.4).
    pub fn estimate_intersection(&self, other: &Self) -> Result<f64> {
        self.check_compatible(other)?;
        let (a, b) = (self.as_words(), other.as_words());
        let z1 = self.m - store::count_ones(a);
        let z2 = self.m - store::count_ones(b);
        let z12 = self.m - store::count_and(a, b);
        Ok(params::estimate_intersection(self.m, self.k, z1, z2, z12))
    }

    /// Estimated `|A ∪ B|`: the item estimate of the OR of the two filters.
    pub fn estimate_union(&self, other: &Self) -> Result<f64> {
        self.check_compatible(other)?;
        let ones = store::count_or(self.as_words(), other.as_words());
        Ok(params::estimate_items(self.m, self.k, ones))
    }

    /// Estimated Jaccard similarity `|A ∩ B| / |A ∪ B|`.
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
        if self.m != other.m || self.k != other.k {
            return Err(shape_mismatch(
                format!("m={} k={}", self.m, self.k),
                format!("m={} k={}", other.m, other.k),
            ));
        }
        self.core.check_hasher(&other.core)
    }
}

/// `dst` (m/2 bits) gets bit i = src bit 2i | src bit 2i+1 (bits past m are zero in `src`,
/// so a missing last source word reads as zero).
/// Refuse to halve a filter of `m` bits unless m is even and at least 2.
fn fold_check(m: u64) -> Result<()> {
    if m < 2 || !m.is_multiple_of(2) {
        return Err(invalid(
            "bits",
            format!(
                "cannot halve a filter of m = {m} bits: folding ORs bit pairs (2i, 2i+1), \
                 which needs an even m ≥ 2"
            ),
        ));
    }
    Ok(())
}

pub(crate) fn fold_bits(src: &[u64], dst: &mut [u64]) {
    for (d, out) in dst.iter_mut().enumerate() {
        let lo = src.get(2 * d).copied().unwrap_or(0);
        let hi = src.get(2 * d + 1).copied().unwrap_or(0);
        *out = compress_pairs(lo) | (compress_pairs(hi) << 32);
    }
}

/// The 32-bit word whose bit i is `w` bit 2i | bit 2i+1.
#[inline]
pub(crate) fn compress_pairs(w: u64) -> u64 {
    let mut x = (w | (w >> 1)) & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    (x | (x >> 16)) & 0x0000_0000_FFFF_FFFF
}

/// Set the bits `idx` in the words at `base`; true if any was zero.
///
/// # Safety
/// Every index must be below `64 ·` the number of words at `base`, borrowed exclusively.
#[inline(always)]
unsafe fn set_bits(base: *mut u64, idx: crate::hash::Indices) -> bool {
    let mut new = false;
    for i in idx {
        // SAFETY: the caller's contract: word `i/64` is inside the exclusively borrowed words.
        let w = unsafe { &mut *base.add((i >> 6) as usize) };
        let mask = 1u64 << (i & 63);
        new |= *w & mask == 0;
        *w |= mask;
    }
    new
}

impl Filter for BloomFilter {
    #[inline]
    fn hasher(&self) -> &KeyHasher {
        &self.core.hasher
    }

    #[inline]
    fn insert_hashed(&mut self, h: Hashed) -> bool {
        let words = self.core.words.as_mut_slice();
        debug_assert!(words.len() as u64 * 64 >= self.m);
        let base = words.as_mut_ptr();
        let m = self.m;
        // SAFETY: see `set_bits`: every index is below m ≤ 64 · words.len() (the invariant of
        // every constructor), and `&mut self` borrows the words exclusively.
        let new = with_k::<16, _>(self.k, |k| unsafe { set_bits(base, h.indices(k, m)) });
        self.core.items = self.core.items.saturating_add(u64::from(new));
        new
    }

    #[inline]
    fn contains_hashed(&self, h: Hashed) -> bool {
        let words = self.core.words.as_slice();
        debug_assert!(words.len() as u64 * 64 >= self.m);
        let m = self.m;
        with_k::<16, _>(self.k, |k| {
            h.indices(k, m).all(|i| {
                // SAFETY: as in `insert_hashed`: `i < m ≤ 64 · words.len()`.
                let w = unsafe { *words.get_unchecked((i >> 6) as usize) };
                (w >> (i & 63)) & 1 == 1
            })
        })
    }

    fn len(&self) -> u64 {
        self.core.items
    }
}

impl Merge for BloomFilter {
    fn union_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        self.core.union(&other.core)
    }

    fn intersect_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        self.core.intersect(&other.core, self.m, self.k)
    }
}

impl Stats for BloomFilter {
    fn bit_len(&self) -> u64 {
        self.m
    }
    fn count_ones(&self) -> u64 {
        store::count_ones(self.as_words())
    }
    fn hash_count(&self) -> u32 {
        self.k
    }
    fn current_fpr(&self) -> f64 {
        params::fpr_from_fill(self.count_ones(), self.m, self.k)
    }
    fn capacity(&self) -> u64 {
        self.core.capacity
    }
    fn target_fpr(&self) -> f64 {
        self.core.target_fpr
    }
}

impl Persist for BloomFilter {
    const KIND: Kind = Kind::Classic;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let params = ParamWriter::new().u64(self.m).u32(self.k).finish();
        (
            self.core.header(Kind::Classic, params),
            Payload::new(vec![&self.core.words]),
        )
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let m = r.u64()?;
        let k = r.u32()?;
        r.finish()?;
        if m == 0 || k == 0 || k > MAX_HASHES {
            return Err(crate::error::inconsistent(format!(
                "classic shape m={m} k={k}"
            )));
        }
        let words = usize::try_from(m.div_ceil(64))
            .map_err(|_| crate::error::inconsistent("m too large"))?;
        format::check_payload(d, words)?;
        let w: Words = src.words(d.payload_offset, words, limit)?;
        if m % 64 != 0 && w.as_slice()[words - 1] >> (m % 64) != 0 {
            return Err(crate::error::inconsistent("bits set beyond m"));
        }
        Ok(Self {
            core: Core::from_header(&d.header, w),
            m,
            k,
        })
    }
}

crate::filter::impl_extend!(BloomFilter);
crate::filter::impl_set_operators!(BloomFilter);

impl crate::dispatch::SetKind for BloomFilter {
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
    /// The bits set are counted once; the rate and the estimate follow from them.
    fn stats(&self) -> SetStats {
        SetStats::of_ones(self, store::count_ones(self.as_words()))
    }
    fn fold(&self) -> Result<Self> {
        BloomFilter::fold(self)
    }
    fn estimate_overlap(&self, other: &Self) -> Result<(f64, f64)> {
        Ok((
            self.estimate_intersection(other)?,
            self.estimate_union(other)?,
        ))
    }
    fn mark_damaged(&mut self, bytes: std::ops::Range<u64>) -> Result<()> {
        BloomFilter::mark_damaged(self, bytes)
    }
    fn clear(&mut self) -> Result<()> {
        BloomFilter::clear(self);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unrolled probe loops (k = 1–16) and the general loop set exactly the bits of the
    /// reference definition, and answer queries as it does.
    #[test]
    fn probes_match_the_reference_for_every_k() {
        let hasher = KeyHasher::new();
        for k in 1..=20u32 {
            let m = 1000 + u64::from(k);
            let mut f = BloomFilter::try_with_shape(m, k).unwrap();
            let mut want = vec![0u64; m.div_ceil(64) as usize];
            for key in 0..40u32 {
                let h = hasher.hash(&key);
                let mut new = false;
                for i in h.indices(k, m) {
                    new |= store::set_bit(&mut want, i);
                }
                assert_eq!(f.insert(&key), new, "k={k} key={key}");
            }
            assert_eq!(f.core.words.as_slice(), &want[..], "k={k}");
            for key in 0..2000u32 {
                let h = hasher.hash(&key);
                let expect = h.indices(k, m).all(|i| store::get_bit(&want, i));
                assert_eq!(f.contains(&key), expect, "k={k} key={key}");
            }
        }
    }

    #[test]
    fn no_false_negatives_and_roundtrip() {
        let mut f = BloomFilter::try_new(1000, 0.01).unwrap();
        for i in 0..1000u64 {
            f.insert(&i);
        }
        assert!((0..1000u64).all(|i| f.contains(&i)));
        let g = BloomFilter::from_bytes(&f.to_bytes()).unwrap();
        assert_eq!(f, g);
    }

    #[test]
    fn fold_equals_fresh_half_filter() {
        let mut big = BloomFilter::try_with_shape(1 << 12, 5).unwrap();
        let mut half = BloomFilter::try_with_shape(1 << 11, 5).unwrap();
        for i in 0..300u32 {
            big.insert(&i);
            half.insert(&i);
        }
        let folded = big.fold().unwrap();
        assert_eq!(folded.as_words(), half.as_words());
        let tiny = BloomFilter::try_with_shape(32, 2).unwrap().fold().unwrap();
        assert_eq!(tiny.bits(), 16);
        let odd = BloomFilter::try_with_shape(1001, 3).unwrap().fold();
        assert!(odd.unwrap_err().to_string().contains("even m"));
        assert!(BloomFilter::try_with_shape(1, 3).unwrap().fold().is_err());
    }

    /// Any even m halves into exactly the fresh filter of m/2 bits (multiply-shift maps
    /// bits 2i and 2i+1 to bit i), including sizes that end inside a word and an odd half.
    #[test]
    fn fold_any_even_m_equals_fresh_half_filter() {
        for m in [2u64, 66, 130, 1000, 6000, 19_726, 100_002] {
            let mut big = BloomFilter::try_with_shape(m, 4).unwrap();
            let mut half = BloomFilter::try_with_shape(m / 2, 4).unwrap();
            for i in 0..(m / 10).max(3) {
                big.insert(&i);
                half.insert(&i);
            }
            let folded = big.fold().unwrap();
            assert_eq!(folded.bits(), m / 2, "m = {m}");
            assert_eq!(folded.as_words(), half.as_words(), "m = {m}");
            assert_eq!(folded.len(), big.len());
        }
    }

    /// Sized by capacity and rate, m fills whole words (no more memory than the shape
    /// needed), so the filter folds six times; the rate is still the target.
    #[test]
    fn sized_filters_fold() {
        for (n, p) in [(1000u64, 0.01), (12_345, 0.001), (1_000_000, 0.02)] {
            let f = BloomFilter::try_new(n, p).unwrap();
            let shape = params::classic_shape(n, p).unwrap();
            assert_eq!(f.bits() % 64, 0);
            assert_eq!(f.bits().div_ceil(64), shape.m.div_ceil(64), "no more words");
            assert!(params::fpr_exact(n, f.bits(), f.hashes()) <= p);
            let mut g = f.clone();
            for _ in 0..6 {
                g = g.fold().unwrap();
            }
            assert_eq!(g.bits(), f.bits() / 64);
            assert_eq!(g.capacity(), n / 64);
        }
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(BloomFilter::try_new(0, 0.01).is_err());
        assert!(BloomFilter::try_new(10, 1.5).is_err());
        assert!(BloomFilter::try_new(10, f64::NAN).is_err());
        assert!(BloomFilter::try_with_shape(0, 3).is_err());
        assert!(BloomFilter::try_with_shape(64, 0).is_err());
        let e = BloomFilter::builder()
            .capacity(u64::MAX / 2)
            .fpr(0.01)
            .max_bytes(1 << 20)
            .try_build();
        assert!(matches!(e, Err(crate::error::Error::TooLarge { .. })));
    }
}
