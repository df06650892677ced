//! The partitioned Bloom filter: [`PartitionedBloomFilter`] (its docs say which paper it follows
//! and when to pick it).

use crate::dispatch::{hashed_set_kind, SetStats};
use crate::error::{inconsistent, invalid, Result};
use crate::filter::{shape_mismatch, Build, Builder, Filter, Merge, Stats};
use crate::hash::{reduce, Hashed, KeyHasher};
use crate::io::format::{
    self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::kind::Capabilities;
use crate::params;
use crate::sets::bits::Core;
use crate::store;

/// Largest k accepted.
pub const MAX_HASHES: u32 = 64;

/// The partitioned Bloom filter: k disjoint slices of m/k bits, hash i sets one bit in slice i
/// (Broder & Mitzenmacher §2.1).
///
/// Each key sets exactly k distinct bits, one per slice. The rate is `(1 - (1-k/m)^n)^k`,
/// asymptotically the same as the classic filter's and a little higher for finite m
/// ([`params::fpr_partitioned`]). Slices are independent, so the fill of every slice
/// concentrates sharply, which is why Almeida et al. build scalable filters from them.
///
/// **When to pick it:** when you want the partitioned analysis or per-slice statistics; or to
/// reproduce Broder & Mitzenmacher §2.1's comparison. For speed use [`crate::BlockedBloomFilter`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Filter, PartitionedBloomFilter, Stats};
///
/// let mut f = PartitionedBloomFilter::try_new(1000, 0.01)?;
/// assert!(f.insert("key"));
/// assert!(f.contains("key"));
/// // one bit in each of the k slices
/// assert_eq!(f.count_ones(), u64::from(f.hash_count()));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionedBloomFilter {
    core: Core,
    slice_bits: u64,
    k: u32,
}

impl Build for PartitionedBloomFilter {
    type Options = ();
    fn build(b: &Builder<Self>) -> Result<Self> {
        let b = &b.sizing;
        let (m, k, n, p) = match b.bits {
            Some(m) => {
                let k = match (b.hashes, b.capacity) {
                    (Some(k), _) => k,
                    (None, Some(n)) => params::optimal_k(n, m),
                    (None, None) => {
                        return Err(invalid("hashes", "give hashes or a capacity with bits"))
                    }
                };
                (m, k, b.capacity.unwrap_or(0), b.fpr.unwrap_or(0.0))
            }
            None => {
                let (n, p) = b.sized()?;
                store::check_size((params::bits_asymptotic(n, p) / 8.0) as u64, b.limit())?;
                let s = params::partitioned_shape(n, p)?;
                match b.hashes {
                    None => (s.m, s.k, n, p),
                    Some(k) => {
                        params::check_hashes(k, MAX_HASHES)?;
                        let mut m = s.m;
                        while params::fpr_partitioned(n, m, k) > p {
                            m += m / 64 + u64::from(k);
                            store::check_size(m / 8, b.limit())?;
                        }
                        (m, k, n, p)
                    }
                }
            }
        };
        params::check_hashes(k, MAX_HASHES)?;
        let slice_bits = m / u64::from(k);
        let mut f = Self::with_shape(slice_bits, k, b.key_hasher(), b.limit())?;
        f.core.capacity = n;
        f.core.target_fpr = if p > 0.0 && p < 1.0 { p } else { 0.0 };
        Ok(f)
    }
}

impl PartitionedBloomFilter {
    /// A builder.
    pub fn builder() -> Builder<Self> {
        Builder::new()
    }

    /// Sized for `n` items at rate `p`.
    pub fn try_new(n: u64, p: f64) -> Result<Self> {
        Self::builder().capacity(n).fpr(p).try_build()
    }

    /// An exact shape: `k` slices of `slice_bits` bits.
    pub fn try_with_shape(slice_bits: u64, k: u32) -> Result<Self> {
        Self::with_shape(slice_bits, k, KeyHasher::new(), store::max_bytes())
    }

    fn with_shape(slice_bits: u64, k: u32, hasher: KeyHasher, limit: u64) -> Result<Self> {
        params::check_hashes(k, MAX_HASHES)?;
        if slice_bits == 0 {
            return Err(invalid("bits", "each slice needs at least one bit"));
        }
        let m = slice_bits
            .checked_mul(u64::from(k))
            .ok_or_else(|| invalid("bits", "too large"))?;
        let words = usize::try_from(m.div_ceil(64))
            .map_err(|_| invalid("bits", "too large for this platform"))?;
        Ok(Self {
            core: Core::new(words, hasher, limit)?,
            slice_bits,
            k,
        })
    }

    /// The empty filter of this one's shape, hasher, capacity and target (its words zero pages
    /// never written), holding `items`: the header of a union or intersection streamed into a
    /// file ([`crate::AnyFilter::union_files`]).
    pub(crate) fn stream_shell(&self, items: u64) -> Result<Self> {
        let mut out = crate::store::untouched_arrays(|| {
            Self::with_shape(self.slice_bits, self.k, self.core.hasher, u64::MAX)
        })?;
        out.core.items = items;
        out.core.capacity = self.core.capacity;
        out.core.target_fpr = self.core.target_fpr;
        Ok(out)
    }

    /// Bits per slice.
    pub fn slice_bits(&self) -> u64 {
        self.slice_bits
    }

    /// Number of slices (= hash functions).
    pub fn hashes(&self) -> u32 {
        self.k
    }

    /// The raw words (slice i is bits `i·s .. (i+1)·s`).
    pub fn as_words(&self) -> &[u64] {
        self.core.words.as_slice()
    }

    /// Set bits in each slice.
    pub fn slice_ones(&self) -> Vec<u64> {
        let w = self.as_words();
        (0..u64::from(self.k))
            .map(|i| store::count_ones_range(w, i * self.slice_bits, (i + 1) * self.slice_bits))
            .collect()
    }

    /// Remove every item.
    pub fn clear(&mut self) {
        self.core.words.as_mut_slice().fill(0);
        self.core.items = 0;
    }

    /// Mark a damaged byte range as all ones (Salman §3).
    pub fn mark_damaged(&mut self, bytes: std::ops::Range<u64>) -> Result<()> {
        self.core.mark_damaged(bytes)?;
        // keep the bits past k·s zero
        let m = self.bit_len();
        let words = self.core.words.as_mut_slice();
        if !m.is_multiple_of(64) {
            let last = words.len() - 1;
            words[last] &= !0u64 >> (64 - m % 64);
        }
        Ok(())
    }

    pub(crate) fn check_compatible(&self, other: &Self) -> Result<()> {
        if self.slice_bits != other.slice_bits || self.k != other.k {
            return Err(shape_mismatch(
                format!("slices={}x{}", self.k, self.slice_bits),
                format!("slices={}x{}", other.k, other.slice_bits),
            ));
        }
        self.core.check_hasher(&other.core)
    }

    /// Estimated `|A ∪ B|`.
    pub fn estimate_union(&self, other: &Self) -> Result<f64> {
        self.check_compatible(other)?;
        let ones = store::count_or(self.as_words(), other.as_words());
        Ok(params::estimate_items(self.bit_len(), self.k, ones))
    }

    /// Estimated `|A ∩ B|` (Broder & Mitzenmacher §2.4, inner product over the whole array).
    pub fn estimate_intersection(&self, other: &Self) -> Result<f64> {
        self.check_compatible(other)?;
        let m = self.bit_len();
        let (a, b) = (self.as_words(), other.as_words());
        Ok(params::estimate_intersection(
            m,
            self.k,
            m - store::count_ones(a),
            m - store::count_ones(b),
            m - store::count_and(a, b),
        ))
    }
}

impl Filter for PartitionedBloomFilter {
    #[inline]
    fn hasher(&self) -> &KeyHasher {
        &self.core.hasher
    }

    #[inline]
    fn insert_hashed(&mut self, h: Hashed) -> bool {
        let s = self.slice_bits;
        let words = self.core.words.as_mut_slice();
        let mut new = false;
        for (i, x) in h.sequence(self.k).enumerate() {
            new |= store::set_bit(words, i as u64 * s + reduce(x, s));
        }
        self.core.items = self.core.items.saturating_add(u64::from(new));
        new
    }

    #[inline]
    fn contains_hashed(&self, h: Hashed) -> bool {
        let s = self.slice_bits;
        let words = self.as_words();
        h.sequence(self.k)
            .enumerate()
            .all(|(i, x)| store::get_bit(words, i as u64 * s + reduce(x, s)))
    }

    fn len(&self) -> u64 {
        self.core.items
    }
}

impl Merge for PartitionedBloomFilter {
    fn union_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        self.core.union(&other.core)
    }

    fn intersect_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        self.core.intersect(&other.core, self.bit_len(), self.k)
    }
}

impl Stats for PartitionedBloomFilter {
    fn bit_len(&self) -> u64 {
        self.slice_bits * u64::from(self.k)
    }
    fn count_ones(&self) -> u64 {
        store::count_ones(self.as_words())
    }
    fn hash_count(&self) -> u32 {
        self.k
    }
    /// The product over slices of each slice's fill: exact for the current contents.
    fn current_fpr(&self) -> f64 {
        self.slice_ones()
            .iter()
            .map(|&o| o as f64 / self.slice_bits as f64)
            .product()
    }
    fn capacity(&self) -> u64 {
        self.core.capacity
    }
    fn target_fpr(&self) -> f64 {
        self.core.target_fpr
    }
}

impl Persist for PartitionedBloomFilter {
    const KIND: Kind = Kind::Partitioned;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let params = ParamWriter::new().u64(self.slice_bits).u32(self.k).finish();
        (
            self.core.header(Kind::Partitioned, params),
            Payload::new(vec![&self.core.words]),
        )
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let slice_bits = r.u64()?;
        let k = r.u32()?;
        r.finish()?;
        if slice_bits == 0 || k == 0 || k > MAX_HASHES {
            return Err(inconsistent(format!(
                "partitioned shape s={slice_bits} k={k}"
            )));
        }
        let m = slice_bits
            .checked_mul(u64::from(k))
            .ok_or_else(|| inconsistent("m overflows"))?;
        let words = usize::try_from(m.div_ceil(64)).map_err(|_| inconsistent("m too large"))?;
        format::check_payload(d, words)?;
        let w = src.words(d.payload_offset, words, limit)?;
        if m % 64 != 0 && w.as_slice()[words - 1] >> (m % 64) != 0 {
            return Err(inconsistent("bits set beyond m"));
        }
        Ok(Self {
            core: Core::from_header(&d.header, w),
            slice_bits,
            k,
        })
    }
}

crate::filter::impl_extend!(PartitionedBloomFilter);
crate::filter::impl_set_operators!(PartitionedBloomFilter);

impl crate::dispatch::SetKind for PartitionedBloomFilter {
    const CAPABILITIES: Capabilities = Capabilities {
        insert: true,
        hashed: true,
        merge: true,
        estimate: true,
        mark_damaged: true,
        ..Capabilities::NONE
    };
    hashed_set_kind!();
    fn stats(&self) -> SetStats {
        SetStats::of(self)
    }
    fn estimate_overlap(&self, other: &Self) -> Result<(f64, f64)> {
        Ok((
            self.estimate_intersection(other)?,
            self.estimate_union(other)?,
        ))
    }
    fn mark_damaged(&mut self, bytes: std::ops::Range<u64>) -> Result<()> {
        PartitionedBloomFilter::mark_damaged(self, bytes)
    }
    fn clear(&mut self) -> Result<()> {
        PartitionedBloomFilter::clear(self);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bit_per_slice() {
        let mut f = PartitionedBloomFilter::try_with_shape(1000, 5).unwrap();
        f.insert("x");
        assert_eq!(f.slice_ones(), vec![1; 5]);
        assert!(f.contains("x"));
        let g = PartitionedBloomFilter::from_bytes(&f.to_bytes()).unwrap();
        assert_eq!(f, g);
    }
}
